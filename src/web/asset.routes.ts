/**
 * `GET /assets/gatehouse.css`: the pages' only stylesheet (their CSP allows styles from us alone).
 * Read once at start; revalidated by ETag after a short max-age, since its URL is not versioned.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';

export const STYLESHEET_PATH = '/assets/gatehouse.css';
const STYLESHEET_FILE = join(import.meta.dirname, 'gatehouse.css');
const MAX_AGE_SECONDS = 3600;

export const assetRoutes: FastifyPluginAsyncZod = async (app) => {
  const css = readFileSync(STYLESHEET_FILE);
  const etag = `"${createHash('sha256').update(css).digest('base64url').slice(0, 27)}"`;

  app.get(STYLESHEET_PATH, { config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) }, schema: { hide: true } }, async (request, reply) => {
    void reply.headers({
      'cache-control': `public, max-age=${MAX_AGE_SECONDS}`,
      etag,
      'x-content-type-options': 'nosniff',
    });
    const presented = request.headers['if-none-match'];
    if (presented !== undefined && presented.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) {
      return reply.code(304).send();
    }
    return reply.type('text/css; charset=utf-8').send(css);
  });
};
