/**
 * The rendered API reference: `GET /api/docs` is Swagger UI (from the `swagger-ui-dist` package)
 * showing the OpenAPI document at `/api/docs/openapi.json`. Everything the page loads comes from
 * this origin: the package's script and stylesheets and our initializer
 * (`assets/api-docs.client.js`) under `/api/docs/assets/…`. The page's CSP runs only the two
 * scripts carrying this response's nonce (no inline script, no `eval`), takes styles from us alone,
 * images from us and `data:` (the stylesheet's icons), and lets the scripts fetch from us and from
 * AUTH_URL (the document's server, for "Try it out"). No CDN, no web fonts, no validator badge.
 *
 * Assets are read on first use (most processes never serve them), kept in memory with a gzip copy,
 * and linked with `?v=<hash of the content>`, so they are cached for a year (`immutable`) and a new
 * version is a new URL; the page itself is `no-store` (its nonce is fresh each time).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { createScriptNonce } from '../web/render.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';

export const API_DOCS_PATH = '/api/docs';
const ASSETS_PATH = `${API_DOCS_PATH}/assets`;
const ONE_YEAR_SECONDS = 365 * 86_400;

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip: Buffer;
  readonly etag: string;
  /** `?v=` in the page's link: the content's hash, so a new version is a new URL. */
  readonly version: string;
}

const swaggerUiDir = () => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** Name → file and type; nothing else is served. */
const SOURCES: Readonly<Record<string, { file: () => string; type: string }>> = {
  'swagger-ui-bundle.js': { file: () => join(swaggerUiDir(), 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { file: () => join(swaggerUiDir(), 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
  'index.css': { file: () => join(swaggerUiDir(), 'index.css'), type: 'text/css; charset=utf-8' },
  'favicon-32x32.png': { file: () => join(swaggerUiDir(), 'favicon-32x32.png'), type: 'image/png' },
  'api-docs.js': { file: () => join(import.meta.dirname, 'assets/api-docs.client.js'), type: 'text/javascript; charset=utf-8' },
};

let loaded: ReadonlyMap<string, Asset> | undefined;

/** The assets, read once per process; the source-map comments go (the maps are not served). */
function assets(): ReadonlyMap<string, Asset> {
  if (loaded !== undefined) return loaded;
  const entries = Object.entries(SOURCES).map(([name, source]) => {
    let body = readFileSync(source.file());
    if (!source.type.startsWith('image/')) body = Buffer.from(body.toString('utf8').replace(/\n?\/[/*]# sourceMappingURL=\S+?(?:\s*\*\/)?\s*$/, '\n'));
    const hash = createHash('sha256').update(body).digest('base64url');
    const asset: Asset = { type: source.type, body, gzip: gzipSync(body), etag: `"${hash.slice(0, 27)}"`, version: hash.slice(0, 12) };
    return [name, asset] as const;
  });
  loaded = new Map(entries);
  return loaded;
}

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function page(openApiPath: string, nonce: string): string {
  const all = assets();
  const link = (name: string) => escapeAttribute(`${ASSETS_PATH}/${name}?v=${all.get(name)!.version}`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gatehouse API reference</title>
<link rel="stylesheet" href="${link('swagger-ui.css')}">
<link rel="stylesheet" href="${link('index.css')}">
<link rel="icon" type="image/png" href="${link('favicon-32x32.png')}">
</head>
<body>
<noscript><p>This reference needs JavaScript. The OpenAPI document itself is at <a href="${escapeAttribute(openApiPath)}">${escapeAttribute(openApiPath)}</a>.</p></noscript>
<div id="swagger-ui" data-url="${escapeAttribute(openApiPath)}"></div>
<script nonce="${nonce}" src="${link('swagger-ui-bundle.js')}"></script>
<script nonce="${nonce}" src="${link('api-docs.js')}"></script>
</body>
</html>
`;
}

/** The page's headers: the strict page CSP, with this response's nonce for the two scripts. */
function pageHeaders(nonce: string, authOrigin: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      "style-src 'self'",
      "img-src 'self' data:",
      ["connect-src 'self'", authOrigin].join(' '),
      "form-action 'none'",
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  void reply.headers({
    'cache-control': `public, max-age=${ONE_YEAR_SECONDS}, immutable`,
    etag: asset.etag,
    vary: 'accept-encoding',
    'x-content-type-options': 'nosniff',
  });
  const presented = request.headers['if-none-match'];
  if (presented !== undefined && presented.split(',').some((tag) => tag.trim().replace(/^W\//, '') === asset.etag)) return reply.code(304).send();
  void reply.type(asset.type);
  const acceptsGzip = /\bgzip\b/i.test(request.headers['accept-encoding'] ?? '');
  return acceptsGzip ? reply.header('content-encoding', 'gzip').send(asset.gzip) : reply.send(asset.body);
}

export const apiDocsRoutes: FastifyPluginAsync<{ openApiPath: string; authUrl: string }> = async (app, { openApiPath, authUrl }) => {
  const authOrigin = new URL(authUrl).origin;
  // The reference is public, like the document it shows.
  const forAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };

  app.get(API_DOCS_PATH, { config: forAnyone, schema: { hide: true } }, async (_request, reply) => {
    const nonce = createScriptNonce();
    return reply.headers(pageHeaders(nonce, authOrigin)).send(page(openApiPath, nonce));
  });

  app.get<{ Params: { name: string } }>(`${ASSETS_PATH}/:name`, { config: forAnyone, schema: { hide: true } }, async (request, reply) => {
    const asset = Object.hasOwn(SOURCES, request.params.name) ? assets().get(request.params.name) : undefined;
    if (asset === undefined) throw new AppError('NOT_FOUND');
    return sendAsset(request, reply, asset);
  });
};
