/**
 * buildApp(services): the Fastify application with every route, hook and error mapper. It never
 * listens; `main.ts` does, and tests call `app.inject()`.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Services } from './services.ts';
import { registerErrorHandling } from './errors.ts';
import { generateRequestId, loggerOptions } from './http/logging.ts';
import { signInRoutes } from './credentials/signin.routes.ts';
import { jwksRoutes } from './sessions/jwks.routes.ts';
import { healthRoutes } from './ops/health.routes.ts';

/** Auth requests are small; anything larger is refused before it is parsed. */
export const BODY_LIMIT_BYTES = 16 * 1024;
export const OPENAPI_PATH = '/api/docs/openapi.json';

export async function buildApp(services: Services): Promise<FastifyInstance> {
  const { config } = services;
  const app = Fastify({
    logger: loggerOptions(config),
    genReqId: generateRequestId,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    trustProxy: false,
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  // Only JSON bodies for now: a text/plain post is how cross-site forms smuggle requests.
  app.removeContentTypeParser('text/plain');

  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });

  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gatehouse',
        version: '0.1.0',
        description: 'Self-hosted authentication and authorization. Errors carry a stable `error` code and a `message`.',
      },
      servers: [{ url: config.authUrl }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });

  await app.register(healthRoutes, { storage: services.storage });
  await app.register(jwksRoutes, { keys: services.keys });
  await app.register(signInRoutes, { credentials: services.credentials, config, clock: services.clock });

  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());

  await app.ready();
  return app;
}
