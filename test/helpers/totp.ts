/**
 * RFC 4226 HOTP and RFC 6238 TOTP (SHA-1, 6 digits, 30 s) written out for the tests, so they
 * compute codes from a secret themselves rather than take the library's word for any code.
 * src/mfa/totp.test.ts checks them against the RFC's own vectors.
 */
import { createHmac } from 'node:crypto';

export const TOTP_STEP_MS = 30_000;

export function hotp(key: Buffer, counter: number, digits = 6): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const hmac = createHmac('sha1', key).update(message).digest();
  const offset = hmac[hmac.length - 1]! & 0x0f;
  const binary = hmac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** RFC 4648 base32. */
export function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const char of text) bits += alphabet.indexOf(char).toString(2).padStart(5, '0');
  const bytes = bits.match(/.{8}/g) ?? [];
  return Buffer.from(bytes.map((byte) => parseInt(byte, 2)));
}

/** The code an authenticator app shows for the base32 `secret` at `atMs`, `steps` steps away. */
export function totpCode(secret: string, atMs: number, steps = 0): string {
  return hotp(base32Decode(secret), Math.floor(atMs / TOTP_STEP_MS) + steps);
}

/** Turns on an authenticator app for `user` through the real service; its secret. Moves `clock` a step on, so the next code is new. */
export async function enrolTotp(
  services: { mfa: { beginTotpSetup(user: never): Promise<{ ok: boolean; secret?: string }>; enableTotp(user: never, code: string, source: never): Promise<{ ok: boolean }> } },
  user: { id: string },
  clock: { (): number; advance(ms: number): void },
): Promise<string> {
  const setup = await services.mfa.beginTotpSetup(user as never);
  if (!setup.ok || setup.secret === undefined) throw new Error('TOTP setup refused');
  const enabled = await services.mfa.enableTotp(user as never, totpCode(setup.secret, clock()), { actorUserId: user.id, ip: null, userAgent: null } as never);
  if (!enabled.ok) throw new Error('TOTP not enabled');
  clock.advance(TOTP_STEP_MS);
  return setup.secret;
}
