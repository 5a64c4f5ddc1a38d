/**
 * A diagnostic between the bare baseline and the full service: the bare Fastify app plus only
 * Gatehouse's route guard (src/authorization/route-guard.ts) with the real request authenticator
 * and session service, on the same storage and secret as a running Gatehouse. `guard ÷ bare` is
 * the cost of the protection itself; `service ÷ guard` is the cost of the rest of the app.
 *
 * Env: Gatehouse's own (DATABASE_URL, AUTH_SECRET, SESSION_STRATEGY, ...) plus PORT and
 * BARE_ROUTES (path -> JSON body), as bare-app.ts.
 */
import './probe.ts';
import Fastify from 'fastify';
import cookie from '@fastify/cookie';
import { loadConfig } from '../src/modules.ts';
import { openStorage } from '../src/storage/database.ts';
import { createServices } from '../src/services.ts';
import { createRequestAuthenticator } from '../src/sessions/request-authentication.ts';
import { registerRouteGuard } from '../src/authorization/route-guard.ts';
import { createForbiddenPage } from '../src/web/forbidden-page.ts';
import { registerErrorHandling } from '../src/http/error-handler.ts';

const config = loadConfig(process.env);
const storage = openStorage(config.database);
const services = await createServices({ config, storage });
// The jwt strategy's revocation mirror is one of the jobs a served app runs.
await services.startJobs();
const routes = JSON.parse(process.env.BARE_ROUTES ?? '{}') as Record<string, unknown>;

const app = Fastify({ logger: false });
registerErrorHandling(app);
await app.register(cookie);
registerRouteGuard(app, {
  authenticate: createRequestAuthenticator({ sessions: services.sessions, config, clock: services.clock }),
  sendForbiddenPage: createForbiddenPage(),
});
for (const [path, body] of Object.entries(routes)) app.get(path, async () => body);
app.get('/__ready', async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => services.stop())
    .then(() => storage.close())
    .then(() => process.exit(0));
});
