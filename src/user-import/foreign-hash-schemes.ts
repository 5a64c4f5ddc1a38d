/**
 * The foreign password hashes as the password check sees them from the start (module.ts
 * `passwordHashSchemes`): each scheme's name and the pattern that recognises its hashes, which the
 * check asks, synchronously, of every stored hash that is not argon2id. The code that parses and
 * verifies them (hash-schemes.ts, with the formats and bounds they follow) is imported at the first
 * foreign hash verified: only imported accounts that have not signed in since keep one.
 */
import type { PasswordHashScheme } from '../credentials/password-hasher.ts';

/** Standard or URL base64, padding optional. */
const B64 = '[A-Za-z0-9+/_-]+={0,2}';

/** Each scheme's hashes, by its name, in the order they are tried (hash-schemes.ts documents the formats). */
export const SCHEME_PATTERNS = {
  bcrypt: /^\$2[aby]\$(\d{2})\$[./A-Za-z0-9]{53}$/,
  argon2: new RegExp(`^\\$(argon2i|argon2d|argon2id)\\$v=19\\$m=(\\d{1,10}),t=(\\d{1,10}),p=(\\d{1,4})\\$${B64}\\$${B64}$`),
  scrypt: new RegExp(`^\\$scrypt\\$ln=(\\d{1,2}),r=(\\d{1,3}),p=(\\d{1,2})\\$(${B64})\\$(${B64})$`),
  pbkdf2: new RegExp(`^\\$pbkdf2-(sha1|sha256|sha512)\\$i=(\\d{1,10})\\$(${B64})\\$(${B64})$`),
  'salted-sha': new RegExp(`^\\$(sha256|sha512)\\$s=(before|after)\\$(${B64})\\$(${B64})$`),
  'firebase-scrypt': new RegExp(`^\\$firebase-scrypt\\$ln=(\\d{1,2}),r=(\\d{1,2})\\$(${B64})\\$(${B64})\\$(${B64})\\$(${B64})$`),
} as const;

export type SchemeName = keyof typeof SCHEME_PATTERNS;

/**
 * The schemes this module registers with the password check (module.ts `passwordHashSchemes`):
 * every foreign kind of hash-schemes.ts, and argon2i/argon2d (argon2id stays the core's).
 * Out-of-bounds or malformed hashes verify as false, without work.
 */
export const FOREIGN_HASH_SCHEMES: readonly PasswordHashScheme[] = (Object.keys(SCHEME_PATTERNS) as SchemeName[]).map((name) => ({
  name,
  recognises: (passwordHash: string) => SCHEME_PATTERNS[name].test(passwordHash),
  async verify(passwordHash: string, password: string): Promise<boolean> {
    return (await import('./hash-schemes.ts')).verifyForeignHash(name, passwordHash, password);
  },
}));
