/**
 * The service provider's keys for one SAML connection: a signing pair (AuthnRequests, metadata) and
 * an encryption pair (assertions the IdP encrypts to us), each RSA-2048 with a self-signed X.509
 * certificate made by `@peculiar/x509` (IdPs read keys from certificates in SP metadata; a
 * self-signed one is the norm there, the trust being the metadata exchange). The private keys are
 * sealed at rest with the rest of the connection's secrets (sso-secrets.ts).
 */
import { generateKeyPair, webcrypto, X509Certificate, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);
const SIGNING = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
/** SP certificates last ten years: rotating them means a new metadata exchange with the IdP. */
const VALIDITY_MS = 10 * 365 * 86_400_000;

export interface SpKeyPair {
  /** PKCS#8 PEM. */
  privateKey: string;
  /** X.509 PEM. */
  certificate: string;
}

/** `@peculiar/x509` (and the `reflect-metadata` its container needs) loads only when keys are made, never at start. */
async function x509Library() {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  return x509;
}

async function keyPair(commonName: string, nowMs: number): Promise<SpKeyPair> {
  const x509 = await x509Library();
  const { privateKey, publicKey } = await generate('rsa', { modulusLength: 2048 });
  const keys = {
    privateKey: (privateKey as KeyObject).toCryptoKey(SIGNING, false, ['sign']),
    publicKey: (publicKey as KeyObject).toCryptoKey(SIGNING, true, ['verify']),
  } as unknown as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: webcrypto.getRandomValues(new Uint8Array(16)).reduce((hex, byte) => hex + byte.toString(16).padStart(2, '0'), '7'),
    name: `CN=${commonName.replace(/[,=+<>#;"\\]/g, ' ')}`,
    notBefore: new Date(nowMs - 60_000),
    notAfter: new Date(nowMs + VALIDITY_MS),
    signingAlgorithm: SIGNING,
    keys,
  });
  return { privateKey: (privateKey as KeyObject).export({ type: 'pkcs8', format: 'pem' }).toString(), certificate: certificate.toString('pem') };
}

/** A new signing pair and a new encryption pair for the SP of a connection named by `entityId`. */
export async function newSpKeys(entityId: string, nowMs: number): Promise<{ signing: SpKeyPair; encryption: SpKeyPair }> {
  const commonName = `Gatehouse SP ${new URL(entityId).host}`;
  const [signing, encryption] = await Promise.all([keyPair(commonName, nowMs), keyPair(commonName, nowMs)]);
  return { signing, encryption };
}

/** The base64 body of a PEM certificate (what `<ds:X509Certificate>` holds), or null when it is not one. */
export function certificateBody(pem: string): string | null {
  try {
    const parsed = new X509Certificate(pem.includes('BEGIN CERTIFICATE') ? pem : toPem(pem.replace(/\s+/g, '')));
    return parsed.raw.toString('base64');
  } catch {
    return null;
  }
}

export function toPem(body: string): string {
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
