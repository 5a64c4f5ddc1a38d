/**
 * Lazy migration from a live old system (LEGACY_VERIFY_URL; off unless set): at a password sign-in
 * for an address Gatehouse has no account for, the old system is asked whether the password is
 * right, by one POST under the outbound rules (http/outbound/sender.ts: pinned DNS, no redirects,
 * no proxy, a timeout), authenticated by a shared secret (`Authorization: Bearer …`), by a client
 * certificate (mutual TLS: LEGACY_VERIFY_CLIENT_CERT and LEGACY_VERIFY_CLIENT_KEY, with
 * LEGACY_VERIFY_CA for an old system whose certificate a private CA issued), or both. A 200 answer
 * is yes; anything else (401, 404, a timeout, a refusal) is no. The account is then created by the
 * credentials module with an argon2id hash of the password just typed. The threat model is in
 * docs/guides/moving-to-gatehouse.md#lazy-migration-from-a-live-old-system.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { ConfigSection } from '../config.ts';
import type { PasswordAccountSource } from '../credentials/password-hasher.ts';
import { createSender, type Sender } from '../http/outbound/sender.ts';
import { checkWebhookUrl } from '../http/outbound/target-rules.ts';

export interface LegacyVerifyConfig {
  /** LEGACY_VERIFY_URL: the old system's endpoint; null: lazy migration off. */
  readonly url: string | null;
  /** LEGACY_VERIFY_SECRET: sent as a Bearer token when set; never logged. */
  readonly secret: string;
  /** Mutual TLS: the client certificate and key (PEM, read from LEGACY_VERIFY_CLIENT_CERT / _KEY at start), and the CA that issued the old system's certificate (LEGACY_VERIFY_CA); null: none. */
  readonly tls: LegacyVerifyTls | null;
  /** LEGACY_VERIFY_TIMEOUT_MS (default 5000). */
  readonly timeoutMs: number;
  /** LEGACY_VERIFY_EMAIL_VERIFIED: whether the old system's yes vouches for the address too (default false: the person verifies it here). */
  readonly emailVerified: boolean;
  /** Plain http:// is accepted outside production only. */
  readonly allowHttp: boolean;
}

export interface LegacyVerifyTls {
  /** The client certificate chain, PEM; null when only a CA is given. */
  readonly cert: string | null;
  /** Its private key, PEM: never logged. */
  readonly key: string | null;
  /** Trusted instead of the system's roots for the old system's certificate (a private CA), PEM. */
  readonly ca: string | null;
}

/** A file's text, or a problem naming the setting. */
function readSetting(setting: string, path: string, problems: string[]): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(`${setting} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}): ${path}`);
    return null;
  }
}

/** LEGACY_VERIFY_CLIENT_CERT / _KEY / _CA: read and checked once (certificates that parse, a key that is the certificate's). */
function readTls(read: Parameters<ConfigSection>[0], problems: string[]): LegacyVerifyTls | null {
  const certPath = read.string('LEGACY_VERIFY_CLIENT_CERT') ?? null;
  const keyPath = read.string('LEGACY_VERIFY_CLIENT_KEY') ?? null;
  const caPath = read.string('LEGACY_VERIFY_CA') ?? null;
  if (certPath === null && keyPath === null && caPath === null) return null;
  if ((certPath === null) !== (keyPath === null)) problems.push('LEGACY_VERIFY_CLIENT_CERT and LEGACY_VERIFY_CLIENT_KEY go together: set both, or neither');
  const cert = certPath === null ? null : readSetting('LEGACY_VERIFY_CLIENT_CERT', certPath, problems);
  const key = keyPath === null ? null : readSetting('LEGACY_VERIFY_CLIENT_KEY', keyPath, problems);
  const ca = caPath === null ? null : readSetting('LEGACY_VERIFY_CA', caPath, problems);
  let certificate: X509Certificate | null = null;
  let privateKey: KeyObject | null = null;
  if (cert !== null) {
    try {
      certificate = new X509Certificate(cert);
    } catch {
      problems.push('LEGACY_VERIFY_CLIENT_CERT is not a PEM X.509 certificate');
    }
  }
  if (key !== null) {
    try {
      privateKey = createPrivateKey(key);
    } catch {
      problems.push('LEGACY_VERIFY_CLIENT_KEY is not a PEM private key (an encrypted key is not supported)');
    }
  }
  if (certificate !== null && privateKey !== null && !certificate.checkPrivateKey(privateKey)) problems.push('LEGACY_VERIFY_CLIENT_KEY is not the private key of LEGACY_VERIFY_CLIENT_CERT');
  if (ca !== null) {
    try {
      new X509Certificate(ca);
    } catch {
      problems.push('LEGACY_VERIFY_CA is not a PEM X.509 certificate');
    }
  }
  return { cert, key, ca };
}

declare module '../config.ts' {
  interface Config {
    readonly legacyVerify: LegacyVerifyConfig;
  }
}

export const legacyVerifyConfigSection: ConfigSection = (read, basis, problems) => {
  const url = read.string('LEGACY_VERIFY_URL') ?? null;
  const secret = read.string('LEGACY_VERIFY_SECRET') ?? '';
  const timeoutMs = read.integer('LEGACY_VERIFY_TIMEOUT_MS', 5_000, { min: 100, max: 30_000 });
  const emailVerified = read.boolean('LEGACY_VERIFY_EMAIL_VERIFIED', false);
  const allowHttp = !basis.isProduction;
  const tls = readTls(read, problems);
  const hasClientCertificate = tls?.cert != null;
  if (url !== null) {
    const check = checkWebhookUrl(url, { allowHttp, allowPrivate: true });
    if (!check.ok) problems.push(`LEGACY_VERIFY_URL ${check.message}`);
    // The old system must know it is Gatehouse asking: by the shared secret, the client certificate, or both.
    if (secret.length < 32 && (!hasClientCertificate || secret.length > 0)) problems.push('LEGACY_VERIFY_SECRET must be set, at least 32 characters, when LEGACY_VERIFY_URL is (unless a client certificate, LEGACY_VERIFY_CLIENT_CERT, authenticates Gatehouse instead)');
    if (tls !== null && !url.startsWith('https:')) problems.push('LEGACY_VERIFY_CLIENT_CERT, LEGACY_VERIFY_CLIENT_KEY and LEGACY_VERIFY_CA need an https:// LEGACY_VERIFY_URL');
  } else if (tls !== null) problems.push('LEGACY_VERIFY_CLIENT_CERT, LEGACY_VERIFY_CLIENT_KEY and LEGACY_VERIFY_CA are used only with LEGACY_VERIFY_URL');
  return { legacyVerify: { url, secret, tls, timeoutMs, emailVerified, allowHttp } };
};

/** The old system as a password account source, or none when LEGACY_VERIFY_URL is unset. */
export function legacyAccountSources(config: LegacyVerifyConfig, options: { sender?: Sender } = {}): PasswordAccountSource[] {
  const { url } = config;
  if (url === null) return [];
  const tls = config.tls === null ? null : { ...(config.tls.ca !== null && { ca: config.tls.ca }), ...(config.tls.cert !== null && config.tls.key !== null && { cert: config.tls.cert, key: config.tls.key }) };
  // The URL is the operator's, not a user's: a legacy system on the private network is the usual case.
  const send = options.sender ?? createSender({ policy: { allowHttp: config.allowHttp, allowPrivate: true }, timeoutMs: config.timeoutMs, userAgent: 'Gatehouse-Legacy-Verify/1.0', ...(tls !== null && { tls }) });
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(config.secret !== '' && { authorization: `Bearer ${config.secret}` }) };
  return [
    {
      name: 'legacy',
      async verify(email, password) {
        const outcome = await send({ url, headers, body: JSON.stringify({ email, password }) });
        return outcome.delivered && outcome.responseCode === 200 ? { emailVerified: config.emailVerified } : null;
      },
    },
  ];
}
