/**
 * A diagnostic between the bare baseline and the full service: the bare Fastify app plus only
 * Gatehouse's access hook (src/authorization/route-access.ts: the prefix rules, the route's
 * declaration, the modules' policies) with the real request authenticator and session service, on
 * the same storage and secret as a running Gatehouse. `guard ÷ bare` is the cost of the protection
 * itself; `service ÷ guard` is the cost of the rest of the app.
 *
 * Env: Gatehouse's own (DATABASE_URL, AUTH_SECRET, SESSION_STRATEGY, ...) plus PORT and
 * BARE_ROUTES (path -> JSON body), as bare-app.ts. The bare routes stand for the admin route the
 * scenario measures (`/api/admin/users`): each is declared for ADMIN, as it is in the service.
 */
import './probe.ts';
import Fastify from 'fastify';
import cookie from '@fastify/cookie';
import { loadConfig } from '../src/modules.ts';
import { openStorage } from '../src/storage/database.ts';
import { createServices } from '../src/services.ts';
import { createRequestAuthenticator } from '../src/sessions/request-authentication.ts';
import { access } from '../src/authorization/access.ts';
import { registerRouteAccess } from '../src/authorization/route-access.ts';
import { createForbiddenPage } from '../src/web/forbidden-page.ts';
import { registerErrorHandling } from '../src/http/error-handler.ts';
import { ADMIN_ROLE } from '../src/users/user.service.ts';

const config = loadConfig(process.env);
const storage = openStorage(config.database);
const services = await createServices({ config, storage });
// The jwt strategy's revocation mirror is one of the jobs a served app runs.
await services.startJobs();
const routes = JSON.parse(process.env.BARE_ROUTES ?? '{}') as Record<string, unknown>;

const app = Fastify({ logger: false });
registerErrorHandling(app);
await app.register(cookie);
// As app.ts registers it: the modules' policies and requirements too (a policy that is not
// configured, MFA_REQUIRED_ROLES say, costs nothing).
const routeAccess = registerRouteAccess(app, {
  authenticate: createRequestAuthenticator({ sessions: services.sessions, config, clock: services.clock, resolvers: services.modules.flatMap((module) => module.credentialResolvers?.(services) ?? []) }),
  sendForbiddenPage: createForbiddenPage(),
  policies: services.modules.flatMap((module) => module.accessPolicies?.(services) ?? []),
  requirements: services.modules.flatMap((module) => module.accessRequirements?.(services) ?? []),
});
const adminOnly = { config: { access: access.role(ADMIN_ROLE) } };
for (const [path, body] of Object.entries(routes)) app.get(path, adminOnly, async () => body);
app.get('/__ready', { config: { access: access.anyone() } }, async () => ({ ok: true }));
routeAccess.check();
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => services.stop())
    .then(() => storage.close())
    .then(() => process.exit(0));
});
