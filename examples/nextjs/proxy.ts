/**
 * Next.js 16's proxy (what Next.js 15 and earlier called middleware, in middleware.ts): every
 * request but Next's own assets passes here.
 *
 *   /api/items…   the API machines call: a Bearer token Gatehouse issued for it, with the scope the
 *                 path needs (401 INVALID_TOKEN / 403 INSUFFICIENT_SCOPE otherwise)
 *   /auth/…       the sign-in paths: on to app/auth/[...gatehouse]/route.ts
 *   everything    the person's session (SEED_RULES): /dashboard and /api need one (a page is sent to
 *   else          sign in, /api/me gets 401 JSON), /admin needs the ADMIN role (403); a session due
 *                 for a refresh is refreshed here, its new cookie set on the browser and on the
 *                 request the page renders
 */
import { NextResponse, type NextRequest } from 'next/server';
import { API_PREFIX, api, gatehouse } from './lib/gatehouse';

export async function proxy(request: NextRequest): Promise<Response> {
  const { pathname } = request.nextUrl;
  if (pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`)) return (await api().check(request)) ?? NextResponse.next();
  return gatehouse.proxy(request, NextResponse);
}

export const config = {
  matcher: ['/((?!_next/static|_next/image|favicon.ico).*)'],
};
