/** `GET /.well-known/jwks.json`: the public keys that verify our tokens (RFC 7517). */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { SigningKeys } from './signing-keys.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';

// Ed25519 keys (`crv`, `x`) and RSA keys (`n`, `e`): only the public members, whatever else a key holds.
const jwk = z.object({
  kty: z.string(),
  crv: z.string().optional(),
  x: z.string().optional(),
  n: z.string().optional(),
  e: z.string().optional(),
  kid: z.string(),
  alg: z.string(),
  use: z.literal('sig'),
});
const jwksResponse = z.object({ keys: z.array(jwk) }).meta({ id: 'JWKS' });

export const jwksRoutes: FastifyPluginAsyncZod<{ keys: SigningKeys }> = async (app, { keys }) => {
  app.get(
    '/.well-known/jwks.json',
    { config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) }, schema: { tags: ['keys'], summary: 'Public signing keys (JWKS)', response: { 200: jwksResponse } } },
    async (_request, reply) => {
      // Verifiers may cache briefly; a rotated key is published before it signs anything.
      void reply.header('cache-control', 'public, max-age=300');
      return {
        keys: keys.publicJwks().map(({ kty, crv, x, n, e, kid, alg, use }) => ({ kty: kty!, ...(kty === 'RSA' ? { n: n!, e: e! } : { crv: crv!, x: x! }), kid, alg, use })),
      };
    },
  );
};
