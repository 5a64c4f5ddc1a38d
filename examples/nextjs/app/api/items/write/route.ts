/** For machines with `read:items` and `write:items` (proxy.ts checks the Bearer token). */
export async function POST(request: Request): Promise<Response> {
  const item = (await request.json().catch(() => null)) as { name?: unknown } | null;
  if (item === null || typeof item.name !== 'string' || item.name === '') return Response.json({ error: 'BAD_REQUEST', message: 'Send {"name": "…"}.' }, { status: 400 });
  return Response.json({ created: { id: 3, name: item.name } }, { status: 201 });
}
