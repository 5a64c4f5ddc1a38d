/**
 * A software authenticator for API tests: it answers the options of our passkey endpoints as a
 * platform authenticator would (an ES256 key per credential, 'none' attestation, user present and
 * verified), so registration and sign-in can be tested without a browser, and it can be told to
 * lie: another origin or RP ID, no user verification, a counter that goes backwards, a broken
 * signature. The CBOR comes from @simplewebauthn/server's own encoder; the signatures from
 * node:crypto. Browser tests use Chromium's virtual authenticator instead (test/flows/).
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { isoBase64URL, isoCBOR } from '@simplewebauthn/server/helpers';

const FLAG_USER_PRESENT = 0x01;
const FLAG_USER_VERIFIED = 0x04;
const FLAG_BACKUP_ELIGIBLE = 0x08;
const FLAG_BACKED_UP = 0x10;
const FLAG_ATTESTED_CREDENTIAL = 0x40;

interface SoftCredential {
  id: string;
  privateKey: KeyObject;
  rpId: string;
  /** base64url, as the options gave it. */
  userHandle: string;
  counter: number;
}

export interface CeremonyOverrides {
  /** The origin the client data claims (default: the authenticator's). */
  origin?: string;
  /** The RP ID whose hash the authenticator data carries (default: the options'). */
  rpId?: string;
  /** Default true. */
  userVerified?: boolean;
  /** The challenge answered (default: the options'). */
  challenge?: string;
}

const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();
const b64url = (data: Uint8Array) => isoBase64URL.fromBuffer(new Uint8Array(data));

function counterBytes(counter: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(counter);
  return bytes;
}

export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];
  readonly origin: string;
  /** Whether signatures count up (a security key) or stay 0 (most synced passkeys). */
  readonly counts: boolean;
  /** Announce a synced (backed-up) passkey: `swk`. */
  readonly synced: boolean;

  constructor(options: { origin: string; counts?: boolean; synced?: boolean }) {
    this.origin = options.origin;
    this.counts = options.counts ?? true;
    this.synced = options.synced ?? false;
  }

  private flags(userVerified: boolean, extra = 0): number {
    return FLAG_USER_PRESENT | (userVerified ? FLAG_USER_VERIFIED : 0) | (this.synced ? FLAG_BACKUP_ELIGIBLE | FLAG_BACKED_UP : 0) | extra;
  }

  private clientData(type: string, challenge: string, origin: string): string {
    return b64url(Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false })));
  }

  /** A new credential for `options` (navigator.credentials.create()). */
  register(options: PublicKeyCredentialCreationOptionsJSON, overrides: CeremonyOverrides = {}): RegistrationResponseJSON {
    const rpId = overrides.rpId ?? options.rp.id ?? new URL(this.origin).hostname;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, isoBase64URL.toBuffer(jwk.x!)],
        [-3, isoBase64URL.toBuffer(jwk.y!)],
      ]),
    );
    const credentialId = randomBytes(16);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credentialId.length);
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([this.flags(overrides.userVerified ?? true, FLAG_ATTESTED_CREDENTIAL)]),
      counterBytes(0),
      Buffer.alloc(16), // AAGUID: none
      idLength,
      credentialId,
      cose,
    ]);
    const attestationObject = isoCBOR.encode(new Map<string, string | Uint8Array | Map<string, string>>([['fmt', 'none'], ['attStmt', new Map<string, string>()], ['authData', new Uint8Array(authData)]]));
    const id = b64url(credentialId);
    this.credentials.push({ id, privateKey, rpId, userHandle: options.user.id, counter: 0 });
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: this.clientData('webauthn.create', overrides.challenge ?? options.challenge, overrides.origin ?? this.origin),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  /**
   * An assertion for `options` (navigator.credentials.get()) with `credential` (default: the first
   * the options allow, else the first held). `counter` sets the signature counter sent.
   */
  assert(options: PublicKeyCredentialRequestOptionsJSON, overrides: CeremonyOverrides & { credential?: SoftCredential; counter?: number; badSignature?: boolean } = {}): AuthenticationResponseJSON {
    const allowed = options.allowCredentials ?? [];
    const credential =
      overrides.credential ?? (allowed.length > 0 ? this.credentials.find((held) => allowed.some((allow) => allow.id === held.id)) : this.credentials[0]);
    if (credential === undefined) throw new Error('SoftAuthenticator: no credential for these options');
    if (overrides.counter !== undefined) credential.counter = overrides.counter;
    else if (this.counts) credential.counter += 1;
    const authData = Buffer.concat([sha256(overrides.rpId ?? options.rpId ?? credential.rpId), Buffer.from([this.flags(overrides.userVerified ?? true)]), counterBytes(credential.counter)]);
    const clientDataJSON = this.clientData('webauthn.get', overrides.challenge ?? options.challenge, overrides.origin ?? this.origin);
    const signature = sign('sha256', Buffer.concat([authData, sha256(isoBase64URL.toBuffer(clientDataJSON))]), credential.privateKey);
    if (overrides.badSignature) signature.writeUInt8(signature.readUInt8(signature.length - 1) ^ 0x01, signature.length - 1);
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON,
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: credential.userHandle,
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }
}
