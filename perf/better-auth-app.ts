/**
 * The peer: Better Auth's minimal server, as its documentation sets one up — `betterAuth()` with
 * e-mail and password on SQLite (Node's built-in `node:sqlite`, the driver Gatehouse uses too),
 * mounted on node:http with `toNodeHandler`. Nothing is tuned: the session check is Better Auth's
 * default `GET /api/auth/get-session` (no cookie cache). Its rate limiter is off, as Gatehouse's
 * limits are raised in the bench, so the load measures the path, not the refusal.
 *
 * Env: PORT, BA_DATABASE (a SQLite file; its tables are made on start by Better Auth's own
 * migrations), BETTER_AUTH_SECRET. Listens on 127.0.0.1 only. `GET /__ready` answers once the
 * tables exist.
 */
import './probe.ts';
import { createServer } from 'node:http';
import { DatabaseSync } from 'node:sqlite';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';

const port = Number(process.env.PORT);
const baseURL = `http://127.0.0.1:${port}`;
const options = {
  baseURL,
  secret: process.env.BETTER_AUTH_SECRET,
  database: new DatabaseSync(process.env.BA_DATABASE ?? ':memory:'),
  emailAndPassword: { enabled: true },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
};
const { runMigrations } = await getMigrations(options);
await runMigrations();
const auth = betterAuth(options);
const handler = toNodeHandler(auth);

const server = createServer((request, response) => {
  if (request.url === '/__ready') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    return;
  }
  void handler(request, response);
});
server.listen(port, '127.0.0.1');

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
