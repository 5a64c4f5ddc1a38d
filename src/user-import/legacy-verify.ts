/**
 * Lazy migration from a live old system (LEGACY_VERIFY_URL; off unless set): at a password sign-in
 * for an address Gatehouse has no account for, the old system is asked whether the password is
 * right, by one POST under the outbound rules (http/outbound/sender.ts: pinned DNS, no redirects,
 * no proxy, a timeout), authenticated by a shared secret (`Authorization: Bearer …`). A 200 answer
 * is yes; anything else (401, 404, a timeout, a refusal) is no. The account is then created by the
 * credentials module with an argon2id hash of the password just typed. The threat model is in
 * docs/guides/moving-to-gatehouse.md#lazy-migration-from-a-live-old-system.
 */
import type { ConfigSection } from '../config.ts';
import type { PasswordAccountSource } from '../credentials/password-hasher.ts';
import { createSender, type Sender } from '../http/outbound/sender.ts';
import { checkWebhookUrl } from '../http/outbound/target-rules.ts';

export interface LegacyVerifyConfig {
  /** LEGACY_VERIFY_URL: the old system's endpoint; null: lazy migration off. */
  readonly url: string | null;
  /** LEGACY_VERIFY_SECRET: sent as a Bearer token; never logged. */
  readonly secret: string;
  /** LEGACY_VERIFY_TIMEOUT_MS (default 5000). */
  readonly timeoutMs: number;
  /** LEGACY_VERIFY_EMAIL_VERIFIED: whether the old system's yes vouches for the address too (default false: the person verifies it here). */
  readonly emailVerified: boolean;
  /** Plain http:// is accepted outside production only. */
  readonly allowHttp: boolean;
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
  if (url !== null) {
    const check = checkWebhookUrl(url, { allowHttp, allowPrivate: true });
    if (!check.ok) problems.push(`LEGACY_VERIFY_URL ${check.message}`);
    if (secret.length < 32) problems.push('LEGACY_VERIFY_SECRET must be set, at least 32 characters, when LEGACY_VERIFY_URL is');
  }
  return { legacyVerify: { url, secret, timeoutMs, emailVerified, allowHttp } };
};

/** The old system as a password account source, or none when LEGACY_VERIFY_URL is unset. */
export function legacyAccountSources(config: LegacyVerifyConfig, options: { sender?: Sender; tls?: { ca?: string | Buffer } } = {}): PasswordAccountSource[] {
  const { url } = config;
  if (url === null) return [];
  // The URL is the operator's, not a user's: a legacy system on the private network is the usual case.
  const send = options.sender ?? createSender({ policy: { allowHttp: config.allowHttp, allowPrivate: true }, timeoutMs: config.timeoutMs, userAgent: 'Gatehouse-Legacy-Verify/1.0', ...(options.tls !== undefined && { tls: options.tls }) });
  return [
    {
      name: 'legacy',
      async verify(email, password) {
        const outcome = await send({ url, headers: { 'content-type': 'application/json', authorization: `Bearer ${config.secret}` }, body: JSON.stringify({ email, password }) });
        return outcome.delivered && outcome.responseCode === 200 ? { emailVerified: config.emailVerified } : null;
      },
    },
  ];
}
