import { gatehouseUser } from '../../../lib/gatehouse-user';

export const dynamic = 'force-dynamic';

/** Who the token speaks for (proxy.ts answers 401 UNAUTHENTICATED without one). */
export async function GET(): Promise<Response> {
  return Response.json(await gatehouseUser(), { headers: { 'cache-control': 'no-store' } });
}
