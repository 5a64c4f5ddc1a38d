/**
 * A scratch PostgreSQL database reached only through a TCP proxy of the test's own, for fault tests
 * that make PostgreSQL go away (`proxy.cut()`) or hang (`proxy.stall()`) while the machine's server,
 * which other tests share, goes on undisturbed.
 */
import type { Backend, TestDatabase } from './databases.ts';
import type { RegisterCleanup } from './process.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

export interface ProxiedPostgres {
  readonly database: TestDatabase;
  readonly proxy: TcpProxy;
  /** The DATABASE_URL that goes through the proxy. */
  readonly url: string;
}

/** Creates the database and its proxy; `cleanup` closes the proxy, then drops the database. */
export async function startProxiedPostgres(postgres: Backend, cleanup: RegisterCleanup): Promise<ProxiedPostgres> {
  const database = await postgres.create();
  cleanup(() => database.drop());
  const direct = new URL(database.url);
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  cleanup(() => proxy.close());
  const proxied = new URL(database.url);
  proxied.port = String(proxy.port);
  return { database, proxy, url: proxied.toString() };
}
