/**
 * `gatehouse doctor`: checks what the server needs, one line each, `ok` or the reason; exit 1 when
 * any fails. It changes nothing: no migration, no key made, no file created. Hosts are named,
 * passwords never (they are scrubbed from every message too).
 */
import { existsSync } from 'node:fs';
import { compactDecrypt } from 'jose';
import { ConfigError, loadDotEnv, type Config } from '../config.ts';
import { collectMigrations } from '../module.ts';
import { MODULES, loadConfig } from '../modules.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { pendingMigrations } from '../storage/migrations.ts';
import { describeDatabase } from '../storage/backup.ts';
import { deriveKeyEncryptionKey, KEY_ALGORITHMS } from '../sessions/signing-keys.ts';
import { listSigningKeys } from '../sessions/signing-key.store.ts';
import { smtpTransportOptions } from '../mail/transports.ts';
import { parseCommandLine, writeJson, type CliIo } from './args.ts';
import { DOCTOR_USAGE } from './usage.ts';

export interface CheckResult {
  name: string;
  status: 'ok' | 'fail' | 'skipped';
  detail: string;
}

/** How long any one check may take. */
const CHECK_TIMEOUT_MS = 8_000;
/** Network checks (SMTP, Redis, providers): each connection attempt. */
const CONNECT_TIMEOUT_MS = 5_000;

export async function doctor(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(args, { json: { type: 'boolean' } }, { command: 'doctor', usage: DOCTOR_USAGE });
  const checks = await runChecks(io);
  const failed = checks.filter((check) => check.status === 'fail').length;
  if (values.json) {
    writeJson(io, { ok: failed === 0, checks });
  } else {
    const width = Math.max(...checks.map((check) => check.name.length)) + 2;
    for (const check of checks) {
      const verdict = check.status === 'ok' ? 'ok' : check.status === 'skipped' ? 'skipped' : 'FAIL';
      io.stdout.write(`${check.name.padEnd(width)}${verdict}${check.detail === '' ? '' : `: ${oneLine(check.detail)}`}\n`);
    }
    io.stdout.write(failed === 0 ? 'All checks passed.\n' : `${failed} check${failed === 1 ? '' : 's'} failed.\n`);
  }
  return failed === 0 ? 0 : 1;
}

async function runChecks(io: CliIo): Promise<CheckResult[]> {
  loadDotEnv();
  let config: Config;
  try {
    config = loadConfig(process.env, { onWarning: (message) => io.stderr.write(`warning: ${message}\n`) });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const skipped = (name: string): CheckResult => ({ name, status: 'skipped', detail: 'the configuration is invalid' });
    return [{ name: 'config', status: 'fail', detail: error.problems.join('; ') }, ...['storage', 'migrations', 'signing keys', 'smtp', 'redis', 'oauth'].map(skipped)];
  }
  const secrets = secretsOf(config);
  const scrub = (result: CheckResult): CheckResult => ({ ...result, detail: secrets.reduce((text, secret) => text.split(secret).join('***'), result.detail) });
  const bounded = (name: string, check: () => Promise<CheckResult | CheckResult[]>) =>
    withTimeout(check(), CHECK_TIMEOUT_MS, name).catch((error: unknown): CheckResult => ({ name, status: 'fail', detail: describeError(error) }));

  const [onStorage, smtp, redis, oauth] = await Promise.all([
    bounded('storage', () => storageChecks(config)),
    bounded('smtp', () => checkSmtp(config)),
    bounded('redis', () => checkRedis(config)),
    bounded('oauth', () => checkProviders(config)),
  ]);
  return [{ name: 'config', status: 'ok', detail: `${config.env}, ${config.authUrl}` } as CheckResult, onStorage, smtp, redis, oauth].flat().map(scrub);
}

/** Storage, then (on it) migrations and signing keys. */
async function storageChecks(config: Config): Promise<CheckResult[]> {
  const where = describeDatabase(config.database);
  const skip = (reason: string): CheckResult[] => [
    { name: 'migrations', status: 'skipped', detail: reason },
    { name: 'signing keys', status: 'skipped', detail: reason },
  ];
  if (config.database.kind === 'sqlite' && config.database.path !== ':memory:' && !existsSync(config.database.path)) {
    return [{ name: 'storage', status: 'fail', detail: `no database at ${config.database.path} yet (gatehouse migrate, or the server's first start, makes it)` }, ...skip('no database')];
  }
  let storage: Storage;
  try {
    storage = openStorage(config.database, { poolSize: 1 });
  } catch (error) {
    return [{ name: 'storage', status: 'fail', detail: `${where}: ${describeError(error)}` }, ...skip('storage unreachable')];
  }
  try {
    try {
      await storage.ping();
    } catch (error) {
      return [{ name: 'storage', status: 'fail', detail: `${where} is unreachable: ${describeError(error)}` }, ...skip('storage unreachable')];
    }
    const results: CheckResult[] = [{ name: 'storage', status: 'ok', detail: where }];
    const migrations = collectMigrations(MODULES);
    const pending = await pendingMigrations(storage.db, migrations);
    const total = Object.keys(migrations).length;
    results.push(
      pending.length === 0
        ? { name: 'migrations', status: 'ok', detail: `all ${total} applied` }
        : { name: 'migrations', status: 'fail', detail: `${pending.length} of ${total} pending: ${pending.join(', ')} (run gatehouse migrate, or start the server)` },
    );
    results.push(pending.length === total ? { name: 'signing keys', status: 'skipped', detail: 'no schema yet' } : await checkSigningKeys(storage, config));
    return results;
  } finally {
    await storage.close().catch(() => {});
  }
}

/** Every key in service can be opened with this AUTH_SECRET. Reads only: the server makes missing keys at start. */
async function checkSigningKeys(storage: Storage, config: Config): Promise<CheckResult> {
  const now = Date.now();
  const inService = (await listSigningKeys(storage.db)).filter((row) => row.retired_at === null || row.retired_at > now);
  if (inService.length === 0) return { name: 'signing keys', status: 'ok', detail: 'none yet: the server makes them at its first start' };
  const key = deriveKeyEncryptionKey(config.authSecret);
  const unreadable: string[] = [];
  for (const row of inService) {
    try {
      const { protectedHeader } = await compactDecrypt(row.private_jwk_encrypted, key);
      if (protectedHeader.kid !== row.kid) unreadable.push(row.kid);
    } catch {
      unreadable.push(row.kid);
    }
  }
  if (unreadable.length > 0) {
    return { name: 'signing keys', status: 'fail', detail: `${unreadable.length} of ${inService.length} in service cannot be opened with this AUTH_SECRET (was it changed?): ${unreadable.join(', ')}` };
  }
  const missing = KEY_ALGORITHMS.filter((algorithm) => !inService.some((row) => row.algorithm === algorithm));
  const algorithms = [...new Set(inService.map((row) => row.algorithm))].join(', ');
  return { name: 'signing keys', status: 'ok', detail: `${inService.length} in service (${algorithms})${missing.length > 0 ? `; the server adds ${missing.join(', ')} at its next start` : ''}` };
}

/** Connects, greets (EHLO), upgrades to TLS where it must and logs in when configured: nodemailer's verify(). */
async function checkSmtp(config: Config): Promise<CheckResult> {
  if (config.mail.kind !== 'smtp') return { name: 'smtp', status: 'skipped', detail: 'EMAIL_SERVER_HOST is not set (mails go to the dev outbox)' };
  const { smtp } = config.mail;
  const where = `${smtp.host}:${smtp.port}`;
  const { default: nodemailer } = await import('nodemailer');
  const transporter = nodemailer.createTransport({ ...smtpTransportOptions(smtp), connectionTimeout: CONNECT_TIMEOUT_MS, greetingTimeout: CONNECT_TIMEOUT_MS, socketTimeout: CONNECT_TIMEOUT_MS });
  try {
    await transporter.verify();
    return { name: 'smtp', status: 'ok', detail: `${where}${smtp.auth === null ? '' : `, logged in as ${smtp.auth.user}`}` };
  } catch (error) {
    return { name: 'smtp', status: 'fail', detail: `${where}: ${describeError(error)}` };
  } finally {
    transporter.close();
  }
}

/** One PING, with no retry and a short connect timeout. */
async function checkRedis(config: Config): Promise<CheckResult> {
  if (config.redisUrl === null) return { name: 'redis', status: 'skipped', detail: 'REDIS_URL is not set (rate limits count in storage)' };
  const url = new URL(config.redisUrl);
  const where = `${url.hostname}:${url.port || '6379'}`;
  const { Redis } = await import('ioredis');
  const redis = new Redis(config.redisUrl, { lazyConnect: true, connectTimeout: CONNECT_TIMEOUT_MS, commandTimeout: CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  let lastError: unknown;
  redis.on('error', (error: unknown) => {
    lastError = error;
  });
  try {
    await redis.connect();
    const answer = await redis.ping();
    return answer === 'PONG' ? { name: 'redis', status: 'ok', detail: where } : { name: 'redis', status: 'fail', detail: `${where} answered PING with ${answer}` };
  } catch (error) {
    return { name: 'redis', status: 'fail', detail: `${where} is unreachable: ${describeError(lastError ?? error)}` };
  } finally {
    redis.disconnect();
  }
}

/** Each configured provider: OpenID Connect discovery answers with its issuer; GitHub's endpoints answer. */
async function checkProviders(config: Config): Promise<CheckResult[]> {
  const { providers } = config.oauth;
  if (providers.length === 0) return [{ name: 'oauth', status: 'skipped', detail: 'no providers configured' }];
  return Promise.all(
    providers.map(async (provider): Promise<CheckResult> => {
      const name = `oauth ${provider.id}`;
      try {
        if (provider.kind === 'oidc') {
          const discovery = `${provider.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
          const response = await fetch(discovery, { signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS), redirect: 'manual', headers: { accept: 'application/json' } });
          if (!response.ok) return { name, status: 'fail', detail: `${discovery} answered ${response.status}` };
          const body = (await response.json().catch(() => null)) as { issuer?: unknown } | null;
          if (body?.issuer !== provider.issuer) return { name, status: 'fail', detail: `${discovery} names another issuer (${String(body?.issuer)})` };
          return { name, status: 'ok', detail: discovery };
        }
        const endpoints = [`${provider.url}/login/oauth/authorize`, provider.apiUrl];
        for (const endpoint of endpoints) {
          const response = await fetch(endpoint, { method: 'HEAD', signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS), redirect: 'manual' });
          if (response.status >= 500) return { name, status: 'fail', detail: `${endpoint} answered ${response.status}` };
        }
        return { name, status: 'ok', detail: endpoints.join(', ') };
      } catch (error) {
        return { name, status: 'fail', detail: `unreachable: ${describeError(error)}` };
      }
    }),
  );
}

/** What may appear in a message that must not: passwords and client secrets from the configuration. */
function secretsOf(config: Config): string[] {
  const secrets = [config.authSecret];
  const password = (value: string) => {
    try {
      const url = new URL(value);
      if (url.password !== '') secrets.push(url.password, decodeURIComponent(url.password));
      const inQuery = url.searchParams.get('password');
      if (inQuery) secrets.push(inQuery);
    } catch {
      // not a URL
    }
  };
  if (config.database.kind === 'postgres') password(config.database.url);
  if (config.redisUrl !== null) password(config.redisUrl);
  if (config.mail.kind === 'smtp' && config.mail.smtp.auth !== null) secrets.push(config.mail.smtp.auth.password);
  for (const provider of config.oauth.providers) secrets.push(provider.clientSecret);
  // Longest first, and never a string so short that scrubbing it would garble the message.
  return [...new Set(secrets)].filter((secret) => secret.length >= 4).sort((a, b) => b.length - a.length);
}

function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return [...new Set(error.errors.map(describeError))].join('; ');
  if (error instanceof Error) {
    const cause = error.cause instanceof Error && error.cause.message !== '' && !error.message.includes(error.cause.message) ? ` (${error.cause.message})` : '';
    return `${error.message || (error as NodeJS.ErrnoException).code || error.name}${cause}`;
  }
  return String(error);
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, '; ');

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
