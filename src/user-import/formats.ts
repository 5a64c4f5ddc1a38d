/**
 * The export formats `gatehouse import --from` reads, each as its reader (readers.ts) and a
 * function from one entry to a `ForeignUser`. How to produce each export is in
 * docs/guides/moving-to-gatehouse.md.
 */
import type { Readable } from 'node:stream';
import { csvRecords, jsonArrayOf, jsonLines, type Entry } from './readers.ts';
import type { ForeignUser } from './import-record.ts';
import { keycloakTotpSecret, toForeignIdentities } from './identities.ts';
import { betterAuthUser, readBetterAuth } from './better-auth.ts';

/** Project-wide settings some formats need (Firebase's hash parameters). */
export interface FormatOptions {
  firebase?: { signerKey: string; saltSeparator: string; rounds: number; memCost: number };
}

export interface ImportFormat {
  /** A file's reader; or, with `database: true`, a reader of the database its argument names. */
  read(input: Readable): AsyncGenerator<Entry>;
  readDatabase?(location: string): AsyncGenerator<Entry>;
  toUser(value: Record<string, unknown>, options: FormatOptions): ForeignUser | { refused: 'INVALID_FIELD'; field: string };
}

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const unpad = (b64: string) => b64.replace(/=+$/, '');

/** The generic format, as `gatehouse export users` writes it (JSON Lines) or as CSV with the same columns. */
const generic = (value: Record<string, unknown>): ForeignUser => ({
  email: value['email'],
  name: value['name'],
  emailVerified: value['emailVerified'] ?? value['email_verified'],
  createdAt: value['createdAt'] ?? value['created_at'],
  disabled: value['disabled'],
  passwordHash: value['passwordHash'] ?? value['password_hash'] ?? explicitHash(value['password']),
  roles: typeof value['roles'] === 'string' ? (value['roles'] as string).split(/[\s;]+/).filter((role) => role !== '') : value['roles'],
  identities: toForeignIdentities(value['identities'], (item) => ({ provider: item['provider'] ?? item['issuer'], subject: item['subject'] })),
  totpSecret: value['totpSecret'] ?? value['totp_secret'],
  organizations: value['organizations'],
});

/**
 * A hash given by its parts instead of a PHC string: `{"algorithm":"pbkdf2-sha256","iterations":27500,
 * "salt":"<b64>","hash":"<b64>"}`, `{"algorithm":"scrypt","n":16384,"r":8,"p":1,…}`,
 * `{"algorithm":"sha256","saltPosition":"before",…}`; bcrypt and argon2 are PHC strings already.
 */
function explicitHash(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const part = value as Record<string, unknown>;
  const [algorithm, salt, hash] = [str(part['algorithm']), str(part['salt']), str(part['hash'])];
  if (algorithm === undefined || hash === undefined) return '!';
  if (/^pbkdf2-(sha1|sha256|sha512)$/.test(algorithm)) return `$${algorithm}$i=${Number(part['iterations'])}$${unpad(salt ?? '')}$${unpad(hash)}`;
  if (algorithm === 'scrypt') return `$scrypt$ln=${Math.log2(Number(part['n']))},r=${Number(part['r'])},p=${Number(part['p'] ?? 1)}$${unpad(salt ?? '')}$${unpad(hash)}`;
  if (algorithm === 'sha256' || algorithm === 'sha512') return `$${algorithm}$s=${part['saltPosition'] === 'after' ? 'after' : 'before'}$${unpad(salt ?? '')}$${unpad(hash)}`;
  return hash;
}

/** Auth0: the user export job's NDJSON, or the bulk export with `passwordHash` (bcrypt) support sends. */
const auth0 = (value: Record<string, unknown>): ForeignUser => ({
  email: value['email'],
  name: value['name'] ?? value['nickname'],
  emailVerified: value['email_verified'],
  createdAt: value['created_at'] ?? (value['created_at'] as { $date?: unknown } | undefined)?.$date,
  disabled: value['blocked'],
  passwordHash: value['passwordHash'] ?? value['password_hash'],
  roles: value['roles'],
  // The `auth0` connection is the password itself; the others are providers (github, google-oauth2…).
  identities: toForeignIdentities(value['identities'], (item) => ({ provider: item['provider'] === 'auth0' ? undefined : item['provider'], subject: item['user_id'] })),
});

/** Firebase `auth:export --format=json`: base64 hash and salt, and the project's scrypt parameters. */
function firebase(value: Record<string, unknown>, options: FormatOptions): ForeignUser | { refused: 'INVALID_FIELD'; field: string } {
  const [hash, salt] = [str(value['passwordHash']), str(value['salt'])];
  let passwordHash: unknown;
  if (hash !== undefined) {
    const project = options.firebase;
    if (project === undefined || salt === undefined) return { refused: 'INVALID_FIELD', field: 'passwordHash' };
    passwordHash = `$firebase-scrypt$ln=${project.memCost},r=${project.rounds}$${unpad(project.saltSeparator)}$${unpad(project.signerKey)}$${unpad(salt)}$${unpad(hash)}`;
  }
  return {
    email: value['email'],
    name: value['displayName'],
    emailVerified: value['emailVerified'],
    createdAt: value['createdAt'],
    disabled: value['disabled'],
    passwordHash,
    identities: toForeignIdentities(value['providerUserInfo'], (item) => ({ provider: item['providerId'] === 'password' ? undefined : item['providerId'], subject: item['rawId'] })),
    // auth:export does not carry TOTP secrets: those users enrol again.
    totpNotImportable: list(value['mfaInfo']).some((info) => typeof info === 'object' && info !== null && 'totpInfo' in info),
  };
}

/** Keycloak realm export: `users[]` with their credentials (PBKDF2 or argon2) and realm roles. */
function keycloak(value: Record<string, unknown>): ForeignUser | { refused: 'INVALID_FIELD'; field: string } {
  const credentials = list(value['credentials']) as Array<Record<string, unknown>>;
  const password = credentials.find((credential) => credential['type'] === 'password');
  let passwordHash: unknown;
  if (password !== undefined) {
    try {
      passwordHash = keycloakHash(JSON.parse(String(password['secretData'])), JSON.parse(String(password['credentialData'])));
    } catch {
      return { refused: 'INVALID_FIELD', field: 'credentials' };
    }
  }
  const name = [str(value['firstName']), str(value['lastName'])].filter((part) => part !== undefined).join(' ');
  const otp = keycloakTotp(credentials.find((credential) => credential['type'] === 'otp'));
  return {
    email: value['email'],
    name: name === '' ? undefined : name,
    emailVerified: value['emailVerified'],
    createdAt: value['createdTimestamp'],
    disabled: value['enabled'] === false,
    passwordHash,
    roles: value['realmRoles'],
    identities: toForeignIdentities(value['federatedIdentities'], (item) => ({ provider: item['identityProvider'], subject: item['userId'] })),
    totpSecret: otp.secret,
    totpNotImportable: otp.notImportable,
  };
}

/** Keycloak's OTP credential: importable when it is TOTP with HMAC-SHA1, 6 digits and 30 s (its defaults, and Gatehouse's). */
function keycloakTotp(credential: Record<string, unknown> | undefined): { secret?: string; notImportable: boolean } {
  if (credential === undefined) return { notImportable: false };
  try {
    const secret = JSON.parse(String(credential['secretData'])) as { value?: unknown };
    const data = JSON.parse(String(credential['credentialData'])) as { subType?: string; digits?: number; period?: number; algorithm?: string };
    const standard = (data.subType ?? 'totp') === 'totp' && (data.digits ?? 6) === 6 && (data.period ?? 30) === 30 && (data.algorithm ?? 'HmacSHA1') === 'HmacSHA1';
    return standard && typeof secret.value === 'string' ? { secret: keycloakTotpSecret(secret.value), notImportable: false } : { notImportable: true };
  } catch {
    return { notImportable: true };
  }
}

function keycloakHash(secret: { value?: string; salt?: string }, data: { hashIterations?: number; algorithm?: string; additionalParameters?: Record<string, string[]> }): string {
  const [hash, salt] = [unpad(secret.value ?? ''), unpad(secret.salt ?? '')];
  const algorithm = data.algorithm ?? 'pbkdf2-sha256';
  if (algorithm === 'pbkdf2') return `$pbkdf2-sha1$i=${data.hashIterations}$${salt}$${hash}`;
  if (algorithm.startsWith('pbkdf2-')) return `$${algorithm}$i=${data.hashIterations}$${salt}$${hash}`;
  if (algorithm === 'argon2') {
    const parameter = (name: string, fallback: string) => data.additionalParameters?.[name]?.[0] ?? fallback;
    const type = parameter('type', 'id');
    return `$argon2${type}$v=19$m=${parameter('memory', '7168')},t=${data.hashIterations ?? 5},p=${parameter('parallelism', '1')}$${salt}$${hash}`;
  }
  return '!';
}

/** Clerk's CSV export: `password_digest` (bcrypt) with `password_hasher`, verified addresses listed. */
const clerk = (value: Record<string, unknown>): ForeignUser => {
  const email = str(value['primary_email_address']);
  const verified = String(value['verified_email_addresses'] ?? '').split(/[\s,|]+/);
  const name = [str(value['first_name']), str(value['last_name'])].filter((part) => part !== undefined).join(' ');
  return {
    email,
    name: name === '' ? undefined : name,
    emailVerified: email !== undefined && verified.includes(email),
    passwordHash: value['password_hasher'] === 'bcrypt' || value['password_hasher'] === undefined ? str(value['password_digest']) : '!',
    totpSecret: str(value['totp_secret']),
  };
};

/** Supabase `auth.users` rows as JSON Lines (`select row_to_json(u) from auth.users u`). */
const supabase = (value: Record<string, unknown>): ForeignUser => {
  const meta = (value['raw_user_meta_data'] ?? {}) as Record<string, unknown>;
  const banned = str(value['banned_until']);
  return {
    email: value['email'],
    name: meta['full_name'] ?? meta['name'],
    emailVerified: value['email_confirmed_at'] !== null && value['email_confirmed_at'] !== undefined,
    createdAt: value['created_at'],
    disabled: banned !== undefined && Date.parse(banned) > Date.now(),
    passwordHash: str(value['encrypted_password']),
    // When the query joins auth.identities in (docs/guides/moving-to-gatehouse.md).
    identities: toForeignIdentities(value['identities'], (item) => ({ provider: item['provider'] === 'email' ? undefined : item['provider'], subject: item['provider_id'] ?? (item['identity_data'] as { sub?: unknown } | undefined)?.sub })),
  };
};

export const FORMATS: Readonly<Record<string, ImportFormat>> = {
  json: { read: jsonLines, toUser: generic },
  csv: { read: csvRecords, toUser: generic },
  auth0: { read: jsonLines, toUser: auth0 },
  firebase: { read: (input) => jsonArrayOf(input, 'users'), toUser: firebase },
  keycloak: { read: (input) => jsonArrayOf(input, 'users'), toUser: keycloak },
  clerk: { read: csvRecords, toUser: clerk },
  supabase: { read: jsonLines, toUser: supabase },
  'better-auth': { read: () => { throw new Error('better-auth reads a database'); }, readDatabase: readBetterAuth, toUser: betterAuthUser },
};
