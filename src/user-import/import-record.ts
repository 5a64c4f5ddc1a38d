/**
 * One user as every format's reader hands it over (`ForeignUser`), and the checks that make it a
 * row Gatehouse can store (`toImportRow`) or a refusal with a reason code. A refusal names the
 * field, never its value: a report must not carry a hash or an address.
 */
import { emailField } from '../users/email.ts';
import { isValidRole } from '../users/roles.ts';
import { toValidName } from '../users/name.ts';
import { checkImportedHash } from './hash-schemes.ts';
import { toTotpSecret, type ForeignIdentity, type LinkedIdentity } from './identities.ts';

export interface ForeignUser {
  email: unknown;
  name?: unknown;
  emailVerified?: unknown;
  /** Epoch ms, an ISO date or a numeric string. */
  createdAt?: unknown;
  disabled?: unknown;
  /** A self-describing hash (hash-schemes.ts), or null/absent for an account without a password. */
  passwordHash?: unknown;
  roles?: unknown;
  /** Linked provider identities, matched to the configured providers (identities.ts). */
  identities?: ForeignIdentity[];
  /** A TOTP secret in base32 (HMAC-SHA1, 6 digits, 30 s: what Gatehouse's TOTP is). */
  totpSecret?: unknown;
  /** The export says the user has TOTP but not its secret (Firebase), or with parameters Gatehouse's TOTP does not use. */
  totpNotImportable?: boolean;
  /** Memberships of organizations that exist here (by slug; `gatehouse orgs create` them first), with the member's role. */
  organizations?: unknown;
}

export interface Membership {
  slug: string;
  /** OWNER, ADMIN, MEMBER or a custom role (UPPER_SNAKE). */
  role: string;
}

export interface ImportRow {
  email: string;
  name: string;
  emailVerified: boolean;
  createdAt: number | null;
  disabled: boolean;
  passwordHash: string | null;
  hashKind: string | null;
  roles: string[];
  identities: LinkedIdentity[];
  /** Identities of the export that match no configured provider (counted, not imported). */
  unmatchedIdentities: number;
  totpSecret: string | null;
  organizations: Membership[];
}

export type Refusal =
  | 'ROW_TOO_LARGE'
  | 'INVALID_JSON'
  | 'INVALID_CSV'
  | 'NOT_AN_OBJECT'
  | 'INVALID_EMAIL'
  | 'INVALID_FIELD'
  | 'MALFORMED_HASH'
  | 'HASH_COST_TOO_HIGH'
  | 'UNKNOWN_ROLE'
  | 'DUPLICATE_EMAIL'
  | 'EMAIL_TAKEN';

export interface RoleRules {
  /** FROM (as the source spells it) → TO (a Gatehouse role), or '' to drop it. */
  map: ReadonlyMap<string, string>;
  /** Drop roles no rule maps and that are not Gatehouse role names already, instead of refusing the row. */
  dropUnmapped: boolean;
}

export interface RowRules {
  roles: RoleRules;
  /** The configured provider an identity belongs to, or null. */
  matchIdentity(identity: ForeignIdentity): string | null;
}

export type RowCheck = { ok: true; row: ImportRow } | { ok: false; reason: Refusal; field?: string };

export function toImportRow(user: ForeignUser, rules: RowRules): RowCheck {
  const roleRules = rules.roles;
  const email = emailField.safeParse(user.email);
  if (!email.success) return { ok: false, reason: 'INVALID_EMAIL', field: 'email' };
  const bad = (field: string): RowCheck => ({ ok: false, reason: 'INVALID_FIELD', field });

  let name = '';
  if (user.name !== undefined && user.name !== null) {
    if (typeof user.name !== 'string') return bad('name');
    name = toValidName(user.name) ?? '';
  }
  const emailVerified = toBoolean(user.emailVerified);
  if (emailVerified === null) return bad('emailVerified');
  const disabled = toBoolean(user.disabled);
  if (disabled === null) return bad('disabled');
  const createdAt = toTime(user.createdAt);
  if (createdAt === undefined) return bad('createdAt');

  let passwordHash: string | null = null;
  let hashKind: string | null = null;
  if (user.passwordHash !== undefined && user.passwordHash !== null && user.passwordHash !== '') {
    if (typeof user.passwordHash !== 'string') return { ok: false, reason: 'MALFORMED_HASH', field: 'passwordHash' };
    const check = checkImportedHash(user.passwordHash);
    if (!check.ok) return { ok: false, reason: check.reason, field: 'passwordHash' };
    passwordHash = user.passwordHash;
    hashKind = check.kind;
  }

  const roles = new Set<string>();
  if (user.roles !== undefined && user.roles !== null) {
    if (!Array.isArray(user.roles) || user.roles.length > 100 || !user.roles.every((role) => typeof role === 'string')) return bad('roles');
    for (const role of user.roles as string[]) {
      const mapped = roleRules.map.get(role);
      if (mapped !== undefined) {
        if (mapped !== '') roles.add(mapped);
      } else if (isValidRole(role)) roles.add(role);
      else if (!roleRules.dropUnmapped) return { ok: false, reason: 'UNKNOWN_ROLE', field: 'roles' };
    }
  }
  let totpSecret: string | null = null;
  if (user.totpSecret !== undefined && user.totpSecret !== null && user.totpSecret !== '') {
    totpSecret = typeof user.totpSecret === 'string' ? toTotpSecret(user.totpSecret) : null;
    if (totpSecret === null) return bad('totpSecret');
  }
  const organizations: Membership[] = [];
  if (user.organizations !== undefined && user.organizations !== null) {
    if (!Array.isArray(user.organizations) || user.organizations.length > 100) return bad('organizations');
    for (const item of user.organizations as unknown[]) {
      const { slug, role = 'MEMBER' } = (typeof item === 'object' && item !== null ? item : {}) as { slug?: unknown; role?: unknown };
      const upper = typeof role === 'string' ? role.toUpperCase() : '';
      if (typeof slug !== 'string' || slug === '' || slug.length > 100 || !isValidRole(upper)) return bad('organizations');
      if (!organizations.some((membership) => membership.slug === slug.toLowerCase())) organizations.push({ slug: slug.toLowerCase(), role: upper });
    }
  }
  const identities = new Map<string, LinkedIdentity>();
  let unmatchedIdentities = 0;
  for (const identity of user.identities ?? []) {
    const provider = rules.matchIdentity(identity);
    // One identity per provider per account (as a sign-in links them); the first wins.
    if (provider === null || identities.has(provider)) unmatchedIdentities++;
    else identities.set(provider, { provider, subject: identity.subject });
  }
  return {
    ok: true,
    row: { email: email.data, name, emailVerified, createdAt, disabled, passwordHash, hashKind, roles: [...roles], identities: [...identities.values()], unmatchedIdentities, totpSecret, organizations },
  };
}

function toBoolean(value: unknown): boolean | null {
  if (value === undefined || value === null || value === '') return false;
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === '1' || value === 1) return true;
  if (value === 'false' || value === '0' || value === 0) return false;
  return null;
}

/** Epoch ms; null when absent; undefined when unreadable. */
function toTime(value: unknown): number | null | undefined {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  return Number.isSafeInteger(ms) && ms >= 0 ? ms : undefined;
}

/** Parses `--map-role FROM=TO` rules (TO empty: drop the role); throws a message for a bad one. */
export function parseRoleRules(rules: readonly string[], dropUnmapped: boolean): RoleRules {
  const map = new Map<string, string>();
  for (const rule of rules) {
    const equals = rule.indexOf('=');
    if (equals <= 0) throw new Error(`--map-role "${rule}" is not FROM=TO`);
    const to = rule.slice(equals + 1).trim().toUpperCase();
    if (to !== '' && !isValidRole(to)) throw new Error(`--map-role "${rule}": "${to}" is not a valid role (A-Z, 0-9 and _, starting with a letter)`);
    map.set(rule.slice(0, equals), to);
  }
  return { map, dropUnmapped };
}
