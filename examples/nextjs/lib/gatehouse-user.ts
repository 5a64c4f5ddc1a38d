import { headers } from 'next/headers';
import type { GatehouseUser } from 'gatehouse-protect';

/** The request header proxy.ts sets for allowed requests (and strips from everything the client sends). */
export const USER_HEADER = 'x-gatehouse-user';

/** The user proxy.ts let through, for pages and route handlers under its matcher. */
export async function gatehouseUser(): Promise<GatehouseUser> {
  const value = (await headers()).get(USER_HEADER);
  if (value === null) throw new Error('no Gatehouse user: is this path under the proxy matcher?');
  return JSON.parse(value) as GatehouseUser;
}
