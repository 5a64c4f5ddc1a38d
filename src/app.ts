/**
 * buildApp(services): the Fastify application with every route, hook and error mapper. It never
 * listens; `main.ts` does, and tests call `app.inject()`.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Services } from './services.ts';
import { collectAdminNav, collectPageLinks, findAskingApp, collectOpenApiTags, type ModuleRoutes, type RouteContext } from './module.ts';
import type { TrustProxy } from './config.ts';
import { toErrorBody } from './errors.ts';
import { registerErrorHandling, sendError } from './http/error-handler.ts';
import { deriveKey } from './lib/derive-key.ts';
import { generateRequestId, lazyRequestLogger, loggerOptions, RequestLogController, serverLogDestination } from './http/logging.ts';
import { registerCsrfProtection } from './http/csrf.ts';
import { registerInputHygiene } from './http/input-hygiene.ts';
import { createResponseHeaderSetter, registerSecurityHeaders } from './http/security-headers.ts';
import { connectionServerOptions, createClientErrorHandler, limitConnections } from './http/connections.ts';
import { createRequestAuthenticator } from './sessions/request-authentication.ts';
import { access, DURING_ENROLMENT } from './authorization/access.ts';
import { registerRouteAccess } from './authorization/route-access.ts';
import { createForbiddenPage, createStatusPage, wantsPage } from './web/forbidden-page.ts';
import { registerPageContext } from './web/page-context.ts';
import { requestPageLanguage } from './i18n/i18n.module.ts';
import { registerOpenApi } from './http/openapi.ts';
import { createSerializerCompiler } from './http/response-serializer.ts';
import { apiDocsRoutes } from './http/api-docs.routes.ts';

/** Fastify's `trustProxy` for ours: a hop count trusts that many proxies nearest to us. */
function toTrustProxy(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (trust === false) return false;
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return [...trust];
}

/** Auth requests are small; anything larger is refused before it is parsed. */
export const BODY_LIMIT_BYTES = 16 * 1024;
export const OPENAPI_PATH = '/api/docs/openapi.json';

export async function buildApp(services: Services): Promise<FastifyInstance> {
  const { config, clock } = services;
  const setResponseHeaders = createResponseHeaderSetter(config);
  const app = Fastify({
    logger: { ...loggerOptions(config), stream: serverLogDestination(config) },
    // One line per request, when it is answered, instead of Fastify's two (see RequestLogController).
    logController: new RequestLogController(),
    genReqId: generateRequestId,
    childLoggerFactory: lazyRequestLogger,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // The client IP (rate limits, sessions, audit) is the socket's unless TRUST_PROXY trusts the peer.
    trustProxy: toTrustProxy(config.trustProxy),
    return503OnClosing: true,
    // Deadlines for headers, whole requests and idle keep-alive connections (HEADERS_TIMEOUT_MS,
    // REQUEST_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS): a slow client cannot hold a connection forever.
    ...connectionServerOptions(config.connections),
    // Errors Fastify raises before routing (an undecodable URL, say) get our body shape too.
    frameworkErrors: (_error, request, reply) => {
      setResponseHeaders(request, reply);
      void sendError(reply, 400, toErrorBody('BAD_REQUEST'));
    },
    // And so do requests Node's parser refuses before Fastify sees them (400, 408, 431).
    clientErrorHandler: createClientErrorHandler(config),
  }).withTypeProvider<ZodTypeProvider>();
  limitConnections(app.server, config.connections, app.log);

  app.setValidatorCompiler(validatorCompiler);
  // Answers written by compiled schemas; under test, checked against zod's validation too.
  app.setSerializerCompiler(createSerializerCompiler({ verify: config.env === 'test' }));
  const sendStatusPage = createStatusPage();
  registerErrorHandling(app, { trustedOrigins: config.trustedOrigins, isSecureOrigin: config.isSecureOrigin, statusPage: { wants: wantsPage, send: sendStatusPage } });
  // First: every answer carries the headers, and a CORS preflight is answered before the CSRF
  // check and the route guard.
  await registerSecurityHeaders(app, config, setResponseHeaders);
  registerInputHygiene(app);
  // JSON everywhere; HTML forms only on the routes registered in the `browser` scope below.
  // text/plain is never parsed: it is how cross-site pages smuggle requests without a preflight.
  app.removeContentTypeParser('text/plain');

  app.addHook('onClose', async () => services.stop());

  // Signed cookies (the CSRF secret) use a key of their own, derived from AUTH_SECRET.
  await app.register(cookie, { secret: deriveKey(config.authSecret, 'gatehouse cookie signing v1') });
  const csrf = registerCsrfProtection(app, config);
  const resolvers = services.modules.flatMap((module) => module.credentialResolvers?.(services) ?? []);
  const authenticate = createRequestAuthenticator({ sessions: services.sessions, config, clock, resolvers });
  // Every page's language, CSRF token, nonce and viewer, set once per request (reply.page). A
  // page answered before the browser routes' language hook ran (the access hook's refusals)
  // negotiates its language from the request alone.
  const languageOf = requestPageLanguage(services.translations, services.brand.page, { isSecureOrigin: config.isSecureOrigin });
  registerPageContext(app, { issueCsrfToken: (request, reply) => csrf.issueToken(request, reply), languageOf });
  // After CSRF: a forged cross-site request is refused before any session work. Every route
  // declares who may call it; one hook decides (authorization/route-access.ts).
  const routeAccess = registerRouteAccess(app, {
    authenticate,
    sendForbiddenPage: createForbiddenPage(),
    policies: services.modules.flatMap((module) => module.accessPolicies?.(services) ?? []),
    requirements: services.modules.flatMap((module) => module.accessRequirements?.(services) ?? []),
  });

  // The OpenAPI document's rules (http/openapi.ts); before the routes, which it collects.
  await registerOpenApi(app, { authUrl: config.authUrl, rateLimitHooks: Object.values(services.limits), tags: collectOpenApiTags(services.modules) });

  // Every module's routes: JSON-only ones at the top level, the browser's where form bodies parse too.
  const sections = services.modules.flatMap((module) => module.pageSections?.(services) ?? []);
  const links = collectPageLinks(services.modules, services);
  const askingApps = services.modules.flatMap((module) => module.askingApps?.(services) ?? []);
  const routeContext: RouteContext = {
    services,
    storage: services.storage,
    config,
    clock,
    authenticate,
    csrf,
    pageSections: (page) => sections.filter((section) => section.page === page),
    adminNav: collectAdminNav(services.modules),
    pageLinks: (place) => links.get(place) ?? [],
    askingApp: (callbackUrl) => findAskingApp(askingApps, callbackUrl),
  };
  const routesOf = (scope: ModuleRoutes['scope']) => services.modules.flatMap((module) => (module.routes ?? []).filter((routes) => routes.scope === scope));
  for (const routes of routesOf('api')) await routes.register(app, routeContext);
  await app.register(async (browser) => {
    await browser.register(formbody, { bodyLimit: BODY_LIMIT_BYTES });
    for (const routes of routesOf('browser')) await routes.register(browser, routeContext);
  });

  app.get(OPENAPI_PATH, { schema: { hide: true }, config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) } }, async () => app.swagger());
  await app.register(apiDocsRoutes, { openApiPath: OPENAPI_PATH, authUrl: config.authUrl });
  // Routes registered in plugins are known once the plugins have loaded.
  await app.after();
  routeAccess.check();

  await app.ready();
  // Only a built app runs the modules' background work (the mail worker, housekeeping…); the
  // CLI builds the same services and starts none of it. They stop with the app (onClose).
  await services.startJobs();
  return app;
}
