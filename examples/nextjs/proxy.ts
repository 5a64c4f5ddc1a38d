/**
 * Next.js 16's proxy (what Next.js 15 and earlier called middleware): every request the matcher
 * selects passes through gatehouse-protect, which applies the seed's rules (SEED_RULES) and
 * verifies Gatehouse's access token against its JWKS:
 *
 *   exactly /    allowed (public)
 *   no session   denied: pages are sent to Gatehouse's sign-in page with a callbackUrl back here,
 *                /api/* gets 401 JSON UNAUTHENTICATED
 *   /admin       without the ADMIN role: 403
 *   otherwise    allowed; the user is handed to the page in the x-gatehouse-user request header
 *
 * Environment: GATEHOUSE_URL (Gatehouse's AUTH_URL), APP_URL (this app's public origin, listed in
 * Gatehouse's TRUSTED_ORIGINS), CHECK_SESSION=true (confirm each token with Gatehouse, so a
 * sign-out there counts within seconds instead of when the token expires).
 */
import { NextResponse, type NextRequest } from 'next/server';
import { createProtector, SEED_RULES } from 'gatehouse-protect';
import { USER_HEADER } from './lib/gatehouse-user';

const GATEHOUSE_URL = process.env.GATEHOUSE_URL ?? 'http://localhost:3000';
const APP_URL = new URL(process.env.APP_URL ?? `http://localhost:${process.env.PORT ?? 3001}`).origin;

const protector = createProtector({
  issuer: GATEHOUSE_URL,
  appUrl: APP_URL,
  rules: SEED_RULES, // the default, spelled out
  checkSession: process.env.CHECK_SESSION === 'true',
});

export async function proxy(request: NextRequest): Promise<Response> {
  const { denial, user } = await protector.evaluate(request);
  if (denial !== null) return denial;
  // Never trust a header of that name from the client: it is set here, or not at all.
  const headers = new Headers(request.headers);
  headers.delete(USER_HEADER);
  if (user !== null) headers.set(USER_HEADER, JSON.stringify(user));
  return NextResponse.next({ request: { headers } });
}

export const config = {
  matcher: ['/dashboard/:path*', '/admin/:path*', '/api/:path*'],
};
