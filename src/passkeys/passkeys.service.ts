/**
 * Passkeys (WebAuthn), with `@simplewebauthn/server` doing every check of the ceremonies (no
 * CBOR or signature code of ours): registering one to a signed-in account, and proving one for a
 * whole sign-in, a second factor after a password, or a step-up.
 *
 * The relying party is AUTH_URL: its host name is the RP ID, its origin the only origin accepted.
 * Credentials are discoverable (resident keys) and every ceremony requires user verification, so a
 * passkey is two factors in one (`amr`: `hwk` or `swk`, `user`, `mfa`). Attestation is not asked
 * for ('none'): which authenticator it is does not matter here.
 *
 * Each options call stores its challenge (as a SHA-256) for one purpose, bound to the user it is
 * for (and a step-up's session, a second factor's mfaToken), for 5 minutes; the answer spends it
 * before anything else is checked, so a challenge works once whatever the outcome. A signature
 * counter must move forwards (unless the authenticator keeps none: 0 and 0).
 */
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId, sha256Base64url } from '../lib/random.ts';
import type { User, UserService } from '../users/user.service.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import * as store from './passkeys.store.ts';

/** How long a challenge waits for its answer (and the browser for the person). */
export const CHALLENGE_TTL_MS = 5 * 60_000;
/** The most passkeys one account may hold (each is offered in every `excludeCredentials`). */
export const MAX_PASSKEYS_PER_USER = 25;
/** WebAuthn allows credential ids up to 1023 bytes: 1364 base64url characters. */
export const MAX_CREDENTIAL_ID_LENGTH = 1364;

/**
 * The WebAuthn library, loaded at the first ceremony: it and its ASN.1 stack hold some 25 MB of
 * resident memory that an instance whose users never use a passkey should not pay.
 */
let library: Promise<typeof import('@simplewebauthn/server') & typeof import('@simplewebauthn/server/helpers')> | undefined;
const webauthn = () => (library ??= Promise.all([import('@simplewebauthn/server'), import('@simplewebauthn/server/helpers')]).then(([server, helpers]) => ({ ...server, ...helpers })));
type WebAuthn = Awaited<ReturnType<typeof webauthn>>;

/**
 * The signature algorithms offered and accepted: the library's classic defaults, named here so it
 * does not probe Node's experimental post-quantum Web Crypto (ML-DSA) at each ceremony.
 */
const supportedAlgorithms = ({ COSEALG }: WebAuthn) => [COSEALG.EdDSA, COSEALG.ES256, COSEALG.RS256];

/** RFC 8176: a synced passkey is a software-secured key, a device-bound one a hardware-secured key. */
export type KeyKind = 'hwk' | 'swk';

/** What the API and the dashboard show of a passkey. */
export interface PasskeyView {
  id: string;
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** What a first passkey gets from the mfa module: a set of recovery codes when the account has none. */
export interface RecoveryCodeIssuer {
  issueRecoveryCodesIfNone(trx: Db, userId: string): Promise<string[] | null>;
}

/** Whom an assertion must come from, and what its challenge was made for. */
export type AssertionPurpose =
  /** A whole sign-in: any registered passkey, found by the authenticator (discoverable). */
  | { purpose: 'authenticate' }
  /** The second factor of the sign-in `mfaToken` waits for: one of `userId`'s passkeys. */
  | { purpose: 'second-factor'; userId: string; mfaToken: string }
  /** A signed-in user confirming it is them, in session `sessionId`. */
  | { purpose: 'step-up'; userId: string; sessionId: string };

export type AssertionResult =
  | { ok: true; userId: string; passkeyId: string; credentialId: string; keyKind: KeyKind }
  /** `userId` when the passkey named is known (for the audit log). */
  | { ok: false; reason: 'INVALID_PASSKEY'; userId: string | null };

export interface PasskeysConfig {
  /** The RP ID: AUTH_URL's host name. */
  rpId: string;
  /** The only origin accepted: AUTH_URL's. */
  origin: string;
  /** What authenticators show the account under. */
  rpName: string;
}

export type PasskeyService = ReturnType<typeof createPasskeyService>;

const toView = (row: store.PasskeyRow): PasskeyView => ({ id: row.id, name: row.name, createdAt: row.created_at, lastUsedAt: row.last_used_at });

const keyKindOf = (passkey: { deviceType: string; backedUp: boolean }): KeyKind => (passkey.deviceType === 'multiDevice' || passkey.backedUp ? 'swk' : 'hwk');

const transportsOf = (row: store.PasskeyRow): string[] | undefined => (row.transports === null || row.transports === '' ? undefined : row.transports.split(','));

/** WebAuthn's user handle for `userId`: its bytes, never the address (the authenticator keeps it). */
const userHandleOf = ({ isoUint8Array }: WebAuthn, userId: string) => isoUint8Array.fromUTF8String(userId);

/** The challenge a response answers, read from its client data; null when that is unreadable. */
function challengeOf({ decodeClientDataJSON }: WebAuthn, response: { response: { clientDataJSON: string } }): string | null {
  try {
    const clientData = decodeClientDataJSON(response.response.clientDataJSON);
    return typeof clientData?.challenge === 'string' && clientData.challenge.length > 0 && clientData.challenge.length <= 1024 ? clientData.challenge : null;
  } catch {
    return null;
  }
}

export function createPasskeyService(deps: { db: Db; clock: Clock; logger: Logger; audit: AuditService; mail: MailService; users: Pick<UserService, 'lockUser'>; config: PasskeysConfig }) {
  const { db, clock, logger, audit, mail, users, config } = deps;

  async function saveChallenge(challenge: string, purpose: store.ChallengePurpose, userId: string | null, boundTo: string | null): Promise<void> {
    const now = clock();
    await store.insertChallenge(db, { id: sha256Base64url(challenge), purpose, user_id: userId, bound_to: boundTo, created_at: now, expires_at: now + CHALLENGE_TTL_MS });
  }

  /** Spends the challenge `response` answers, if it was made for this purpose and user; the challenge, or null. */
  async function spendChallengeOf(response: { response: { clientDataJSON: string } }, purpose: store.ChallengePurpose, userId: string | null, boundTo: string | null): Promise<string | null> {
    const challenge = challengeOf(await webauthn(), response);
    if (challenge === null) return null;
    const spent = await store.spendChallenge(db, { id: sha256Base64url(challenge), purpose, userId, boundTo, now: clock() });
    return spent ? challenge : null;
  }

  const bindingOf = (expected: AssertionPurpose) =>
    expected.purpose === 'authenticate'
      ? { userId: null, boundTo: null }
      : { userId: expected.userId, boundTo: expected.purpose === 'step-up' ? expected.sessionId : sha256Base64url(expected.mfaToken) };

  return {
    config,

    /** The user's passkeys, oldest first. Through `on` when given (a transaction). */
    async listPasskeys(userId: string, on: Db = db): Promise<PasskeyView[]> {
      return (await store.listPasskeys(on, userId)).map(toView);
    },

    /** The key of the user's passkey `id` (a sign-in it began goes on); null once it is removed. */
    async findKey(userId: string, id: string): Promise<{ passkeyId: string; credentialId: string; keyKind: KeyKind } | null> {
      const row = await store.findPasskey(db, userId, id);
      return row === undefined ? null : { passkeyId: row.id, credentialId: row.credential_id, keyKind: keyKindOf({ deviceType: row.device_type, backedUp: row.backed_up === 1 }) };
    },

    /** Removes every passkey of the user through `trx` (an administrator's reset); how many there were. */
    async removeAllPasskeys(trx: Db, userId: string): Promise<number> {
      return store.deleteUserPasskeys(trx, userId);
    },

    /** Options for `navigator.credentials.create()` to add a passkey to `user`'s account. */
    async registrationOptions(user: User): Promise<{ ok: true; options: PublicKeyCredentialCreationOptionsJSON } | { ok: false; reason: 'PASSKEY_LIMIT_REACHED' }> {
      const existing = await store.listPasskeys(db, user.id);
      if (existing.length >= MAX_PASSKEYS_PER_USER) return { ok: false, reason: 'PASSKEY_LIMIT_REACHED' };
      const lib = await webauthn();
      const options = await lib.generateRegistrationOptions({
        rpName: config.rpName,
        rpID: config.rpId,
        userName: user.email,
        userID: userHandleOf(lib, user.id),
        userDisplayName: user.name,
        timeout: CHALLENGE_TTL_MS,
        attestationType: 'none',
        excludeCredentials: existing.map((row) => ({ id: row.credential_id, transports: transportsOf(row) })),
        authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
        supportedAlgorithmIDs: supportedAlgorithms(lib),
      });
      await saveChallenge(options.challenge, 'register', user.id, null);
      return { ok: true, options };
    },

    /**
     * Verifies the authenticator's answer to `registrationOptions` and keeps the new passkey;
     * with `backup`, the account's first factor also gets recovery codes (shown once). Audited and
     * mailed to the owner.
     */
    async register(
      user: User,
      response: RegistrationResponseJSON,
      input: { name?: string | undefined; source: AuditSource; backup: RecoveryCodeIssuer },
    ): Promise<{ ok: true; passkey: PasskeyView; recoveryCodes: string[] | null; keyKind: KeyKind } | { ok: false; reason: 'PASSKEY_REGISTRATION_FAILED' | 'PASSKEY_ALREADY_REGISTERED' | 'PASSKEY_LIMIT_REACHED' }> {
      const challenge = await spendChallengeOf(response, 'register', user.id, null);
      if (challenge === null) return { ok: false, reason: 'PASSKEY_REGISTRATION_FAILED' };
      const lib = await webauthn();
      let verified;
      try {
        verified = await lib.verifyRegistrationResponse({
          response,
          expectedChallenge: challenge,
          expectedOrigin: config.origin,
          expectedRPID: config.rpId,
          requireUserVerification: true,
          supportedAlgorithmIDs: supportedAlgorithms(lib),
        });
      } catch (error) {
        logger.info({ reason: (error as Error).message }, 'passkeys: a registration did not verify');
        return { ok: false, reason: 'PASSKEY_REGISTRATION_FAILED' };
      }
      if (!verified.verified) return { ok: false, reason: 'PASSKEY_REGISTRATION_FAILED' };
      const info = verified.registrationInfo;
      if (info.credential.id.length > MAX_CREDENTIAL_ID_LENGTH) return { ok: false, reason: 'PASSKEY_REGISTRATION_FAILED' };

      const result = await db.transaction().execute(async (trx) => {
        // First, the user's row lock: two registrations at once count one after the other, so the
        // cap holds on PostgreSQL too (each counted 24 and both added one before). Gone meanwhile: nothing to add to.
        if ((await users.lockUser(trx, user.id)) === null) return { ok: false as const, reason: 'PASSKEY_REGISTRATION_FAILED' as const };
        const count = await store.countPasskeys(trx, user.id);
        if (count >= MAX_PASSKEYS_PER_USER) return { ok: false as const, reason: 'PASSKEY_LIMIT_REACHED' as const };
        const now = clock();
        const row: store.PasskeyRow = {
          id: randomId(),
          user_id: user.id,
          credential_id: info.credential.id,
          public_key: lib.isoBase64URL.fromBuffer(info.credential.publicKey),
          counter: info.credential.counter,
          transports: info.credential.transports === undefined || info.credential.transports.length === 0 ? null : info.credential.transports.join(',').slice(0, 255),
          device_type: info.credentialDeviceType,
          backed_up: info.credentialBackedUp ? 1 : 0,
          aaguid: info.aaguid,
          name: input.name ?? (count === 0 ? 'Passkey' : `Passkey ${count + 1}`),
          created_at: now,
          last_used_at: null,
        };
        if (!(await store.insertPasskey(trx, row))) return { ok: false as const, reason: 'PASSKEY_ALREADY_REGISTERED' as const };
        const recoveryCodes = await input.backup.issueRecoveryCodesIfNone(trx, user.id);
        const keyKind = keyKindOf({ deviceType: row.device_type, backedUp: row.backed_up === 1 });
        await audit.record({ type: 'passkey.added', userId: user.id, source: input.source, details: { passkeyId: row.id, keyKind } }, { db: trx });
        // Not the passkey's name: whoever added it chose it, and this mail must speak only in our words.
        await mail.securityNotice(trx, { user, change: 'passkeyAdded', source: input.source });
        return { ok: true as const, passkey: toView(row), recoveryCodes, keyKind };
      });
      if (result.ok) mail.wake();
      return result;
    },

    /**
     * Options for `navigator.credentials.get()`: for a whole sign-in, any discoverable passkey
     * (empty `allowCredentials`); for a second factor or a step-up, the user's passkeys.
     */
    async authenticationOptions(expected: AssertionPurpose): Promise<{ ok: true; options: PublicKeyCredentialRequestOptionsJSON } | { ok: false; reason: 'PASSKEY_NOT_FOUND' }> {
      const { userId, boundTo } = bindingOf(expected);
      const allowCredentials = userId === null ? [] : (await store.listPasskeys(db, userId)).map((row) => ({ id: row.credential_id, transports: transportsOf(row) }));
      if (userId !== null && allowCredentials.length === 0) return { ok: false, reason: 'PASSKEY_NOT_FOUND' };
      const options = await (await webauthn()).generateAuthenticationOptions({ rpID: config.rpId, allowCredentials, userVerification: 'required', timeout: CHALLENGE_TTL_MS });
      await saveChallenge(options.challenge, expected.purpose, userId, boundTo);
      return { ok: true, options };
    },

    /**
     * Verifies an assertion answering `authenticationOptions(expected)`: its challenge (spent here,
     * whatever the outcome), the passkey (registered, and the expected user's), the origin, the
     * RP ID, user verification, the signature and the counter; then records the use.
     */
    async verifyAssertion(response: AuthenticationResponseJSON, expected: AssertionPurpose): Promise<AssertionResult> {
      const { userId, boundTo } = bindingOf(expected);
      const refused = (knownUser: string | null): AssertionResult => ({ ok: false, reason: 'INVALID_PASSKEY', userId: knownUser });
      const challenge = await spendChallengeOf(response, expected.purpose, userId, boundTo);
      if (challenge === null || response.rawId !== response.id || response.id.length > MAX_CREDENTIAL_ID_LENGTH) return refused(null);
      const passkey = await store.findByCredentialId(db, response.id);
      if (passkey === undefined) return refused(null);
      if (userId !== null && passkey.user_id !== userId) return refused(userId);
      // A discoverable credential names its user: it must be the one the passkey was registered to.
      const lib = await webauthn();
      const userHandle = response.response.userHandle;
      if (userHandle !== undefined && userHandle !== lib.isoBase64URL.fromBuffer(userHandleOf(lib, passkey.user_id))) return refused(passkey.user_id);

      let verified;
      try {
        verified = await lib.verifyAuthenticationResponse({
          response,
          expectedChallenge: challenge,
          expectedOrigin: config.origin,
          expectedRPID: config.rpId,
          credential: { id: passkey.credential_id, publicKey: lib.isoBase64URL.toBuffer(passkey.public_key), counter: passkey.counter, transports: transportsOf(passkey) },
          requireUserVerification: true,
        });
      } catch (error) {
        logger.info({ reason: (error as Error).message }, 'passkeys: an assertion did not verify');
        return refused(passkey.user_id);
      }
      if (!verified.verified) return refused(passkey.user_id);
      const { newCounter, credentialDeviceType, credentialBackedUp } = verified.authenticationInfo;
      // Only forwards, also against a request that verified the same counter at the same time.
      if (!(await store.recordUse(db, passkey.id, { counter: newCounter, backedUp: credentialBackedUp, deviceType: credentialDeviceType, now: clock() }))) return refused(passkey.user_id);
      return { ok: true, userId: passkey.user_id, passkeyId: passkey.id, credentialId: passkey.credential_id, keyKind: keyKindOf({ deviceType: credentialDeviceType, backedUp: credentialBackedUp }) };
    },

    /** The renamed passkey; null when the user has no such passkey. Audited. */
    async rename(userId: string, id: string, name: string, source: AuditSource): Promise<PasskeyView | null> {
      return db.transaction().execute(async (trx) => {
        if (!(await store.renamePasskey(trx, userId, id, name))) return null;
        await audit.record({ type: 'passkey.renamed', userId, source, details: { passkeyId: id } }, { db: trx });
        const row = await store.findPasskey(trx, userId, id);
        return row === undefined ? null : toView(row);
      });
    },

    /** False when the user has no such passkey. Audited and mailed to the owner. */
    async remove(user: User, id: string, source: AuditSource): Promise<boolean> {
      const removed = await db.transaction().execute(async (trx) => {
        const row = await store.findPasskey(trx, user.id, id);
        if (row === undefined || !(await store.deletePasskey(trx, user.id, id))) return false;
        await audit.record({ type: 'passkey.removed', userId: user.id, source, details: { passkeyId: id } }, { db: trx });
        await mail.securityNotice(trx, { user, change: 'passkeyRemoved', source });
        return true;
      });
      if (removed) mail.wake();
      return removed;
    },

    /** Challenges nobody answered are deleted once expired (the module's job). */
    deleteExpiredChallenges: () => store.deleteExpiredChallenges(db, clock()),
  };
}
