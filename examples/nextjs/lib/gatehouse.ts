/**
 * Gatehouse for this app, in two parts:
 *
 * - `gatehouse`: sign-in mode (gatehouse-protect/next). The app is an OpenID relying party of
 *   Gatehouse's OpenID Provider with a session of its own (a sealed, HttpOnly cookie on this origin):
 *   proxy.ts keeps it, app/auth/[...gatehouse]/route.ts answers the sign-in paths, pages read the
 *   user with `gatehouse.user(await cookies())`.
 * - `api`: token mode, for the API machines call (/api/items…): Bearer tokens Gatehouse issued to a
 *   client for this API (its audience), judged by scope.
 *
 * Both read the environment at run time (`next build` runs without it): see README.md.
 */
import { createProtector, SEED_RULES, type ProtectionRules } from 'gatehouse-protect';
import { createNextSignIn } from 'gatehouse-protect/next';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined || value === '') throw new Error(`${name} is not set: see examples/nextjs/README.md`);
  return value;
};
const gatehouseUrl = () => env('GATEHOUSE_URL', 'http://localhost:3000');
const appUrl = () => new URL(env('APP_URL', `http://127.0.0.1:${process.env.PORT ?? 3001}`)).origin;

export const gatehouse = createNextSignIn(() => ({
  issuer: gatehouseUrl(),
  clientId: env('CLIENT_ID'),
  clientSecret: env('CLIENT_SECRET'),
  appUrl: appUrl(),
  secret: env('SESSION_SECRET'),
  // The default, spelled out: /dashboard and /api need a session, /admin the ADMIN role.
  rules: SEED_RULES,
}));

/** Where machines come in, and the scopes each path needs (every matching prefix counts: /api/items/write needs both). */
export const API_PREFIX = '/api/items';
const API_RULES: ProtectionRules = {
  protectedPrefixes: [API_PREFIX],
  publicPrefixes: [],
  roleRequirements: [],
  scopeRequirements: [
    { prefix: API_PREFIX, scopes: ['read:items'] },
    { prefix: `${API_PREFIX}/write`, scopes: ['write:items'] },
  ],
};

let protector: ReturnType<typeof createProtector> | undefined;
/** The API's token check, made at the first request. Its audience is listed in Gatehouse's OIDC_PROVIDER_RESOURCES. */
export function api() {
  protector ??= createProtector({ issuer: gatehouseUrl(), audience: env('API_AUDIENCE', `${appUrl()}/api`), rules: API_RULES });
  return protector;
}
