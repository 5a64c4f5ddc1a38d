import { cookies } from 'next/headers';
import { gatehouse } from '../../../lib/gatehouse';

/** The signed-in person, as JSON (proxy.ts answers 401 UNAUTHENTICATED without a session). */
export async function GET(): Promise<Response> {
  const user = await gatehouse.user(await cookies());
  if (user === null) return Response.json({ error: 'UNAUTHENTICATED', message: 'Sign in to continue.' }, { status: 401 });
  return Response.json(user, { headers: { 'cache-control': 'no-store' } });
}
