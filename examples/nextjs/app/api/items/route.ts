/** For machines with the `read:items` scope (proxy.ts checks the Bearer token). */
export async function GET(): Promise<Response> {
  return Response.json({ items: [{ id: 1, name: 'Lighthouse' }, { id: 2, name: 'Harbour' }] }, { headers: { 'cache-control': 'no-store' } });
}
