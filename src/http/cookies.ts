/**
 * The attributes every Gatehouse cookie has: HttpOnly, SameSite=Lax, Path=/, and `Secure` on https,
 * where the names carry the `__Host-` prefix (packages/protect/src/contract.ts), which pins them to this
 * exact origin (no Domain), so a sibling subdomain cannot set or shadow them.
 */
import type { Config } from '../config.ts';

export { cookieNames } from '../../packages/protect/src/contract.ts';

export function baseCookieOptions(config: Pick<Config, 'isSecureOrigin'>) {
  return { httpOnly: true, sameSite: 'lax', path: '/', secure: config.isSecureOrigin } as const;
}
