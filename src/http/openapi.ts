/**
 * The OpenAPI document (`GET /api/docs/openapi.json`): `@fastify/swagger` builds it from every
 * route's zod `schema`, and the rules here finish it, the same way for every route, so that it
 * passes `redocly lint` with its recommended rules (see `redocly.yaml` and `openapi.test.ts`):
 *
 * - **operationId**: camelCase from the method and the path without its leading `/api`
 *   (`DELETE /api/auth/sessions/{id}` → `deleteAuthSessionsById`), unless the route names one. Two
 *   routes reading the same stop the document with both named.
 * - **security**: from the route's access declaration (`config.access`, authorization/access.ts),
 *   the one the access hook enforces: `access.user()` and `access.role()` need a session
 *   (`[{ bearer: [] }]`); `access.anyone()` needs none (`[]`); `access.anyone({ readsSession: true })`
 *   takes one if given (`[{}, { bearer: [] }]`: anonymous, or a Bearer token the route acts on, as
 *   `POST /api/auth/signout` does). A route that declares nothing (only while route-access.ts is
 *   lenient) is documented as the hook treats it: by the prefix rules (`GATEHOUSE_RULES`).
 * - **responses** every route can give, added where the route does not document the status itself:
 *   400 (a refused URL; on a body, malformed JSON), 401 and 403 on the routes that need a session
 *   (no session; a role missing, a requirement unmet or a policy refusing: the access hook), 403
 *   `CSRF_FAILED` on unsafe methods, 413 / 415 / 422 on a body (422 also on
 *   a validated query or path), 429 with `Retry-After` on rate-limited routes, 500, and 503
 *   `SERVICE_UNAVAILABLE` with `Retry-After` (storage or Redis unavailable, or the instance shutting
 *   down). A route is rate limited when one of its preHandlers is a request limit
 *   (`services.limits`), when it says so with `config: { rateLimited: true }` (a limit counted in
 *   its handler), or when it documents a 429 itself.
 * - **components**: only the schemas something refers to (the zod provider emits an input and an
 *   output variant of each named schema: the one no route uses goes), an input-only one under its
 *   plain name; shared responses and the `Retry-After` header once each.
 * - **info.license**, **servers** (AUTH_URL), and the **tags** in use, each with the description
 *   the module that introduces it declares (`openApiTags`, module.ts; `openapi.test.ts` fails on a tag
 *   no module describes).
 */
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { GATEHOUSE_RULES, decide, type ProtectionRules } from '../../packages/protect/src/rules.ts';
import type { RouteAccess } from '../authorization/access.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route counts a rate limit in its handler (not with a limiter preHandler): document its 429. */
    rateLimited?: boolean;
  }
}

/** The route's facts the document cannot show, carried from `transform` to `transformObject`. */
const ROUTE_FACTS = 'x-gatehouse-route';
interface RouteFacts {
  rateLimited: boolean;
  skipCsrf: boolean;
  /** Who may call it, from its declaration; null when it declares nothing. */
  caller: Caller | null;
}

/** What a declaration asks of the caller, as the document can say it. */
type Caller = 'anyone' | 'anyone-or-signed-in' | 'signed-in';

function callerOf(access: RouteAccess | undefined): Caller | null {
  if (access === undefined) return null;
  if (access.who !== 'anyone') return 'signed-in';
  return access.readsSession ? 'anyone-or-signed-in' : 'anyone';
}

/** The security requirement of each kind of caller (OpenAPI: `{}` is "no credential"). */
function securityFor(caller: Caller): Record<string, string[]>[] {
  if (caller === 'signed-in') return [{ bearer: [] }];
  return caller === 'anyone-or-signed-in' ? [{}, { bearer: [] }] : [];
}

const UNSAFE_METHODS = new Set(['post', 'put', 'patch', 'delete']);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = Record<string, unknown>;
interface Operation extends Json {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: unknown[];
  requestBody?: unknown;
  responses?: Record<string, Json>;
}

const ref = (kind: 'schemas' | 'responses' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });
const errorContent = { 'application/json': { schema: ref('schemas', 'ErrorResponse') } };
const retryAfter = { 'Retry-After': ref('headers', 'RetryAfter') };

/** The shared responses, by component name; each added to the document only when used. */
const RESPONSES: Readonly<Record<string, Json>> = {
  BadRequest: { description: 'The URL or a field holds a NUL character, or the request is otherwise refused before routing (BAD_REQUEST)', content: errorContent },
  MalformedJson: { description: 'Malformed JSON (MALFORMED_JSON), or a NUL character in the URL or a field (BAD_REQUEST)', content: errorContent },
  Unauthenticated: { description: 'No valid session: no or an expired or revoked Bearer token or session cookie (UNAUTHENTICATED)', content: errorContent },
  Forbidden: {
    description:
      'The session may not do this: a role the route needs is missing (FORBIDDEN), a requirement of the route or an access policy refuses (a second factor to enrol or to prove again, say), or an unsafe request with the session cookie failed the CSRF check (CSRF_FAILED)',
    content: errorContent,
  },
  CsrfFailed: { description: 'A request with the session cookie (or a form post) did not come from this site or lacks a valid CSRF token (CSRF_FAILED)', content: errorContent },
  PayloadTooLarge: { description: 'Body larger than the limit (PAYLOAD_TOO_LARGE)', content: errorContent },
  UnsupportedMediaType: { description: 'Body is not application/json (UNSUPPORTED_MEDIA_TYPE)', content: errorContent },
  ValidationError: { description: 'Invalid fields (VALIDATION_ERROR), listed in `errors`', content: errorContent },
  RateLimited: { description: 'Too many requests (RATE_LIMITED); retry after `Retry-After`', headers: retryAfter, content: errorContent },
  InternalError: { description: 'Unexpected failure (INTERNAL_ERROR); reveals nothing internal', content: errorContent },
  ServiceUnavailable: {
    description: 'Storage or another dependency is unavailable, or this instance is shutting down (SERVICE_UNAVAILABLE); retry after `Retry-After`',
    headers: retryAfter,
    content: errorContent,
  },
};

const RETRY_AFTER_HEADER = {
  description: 'Seconds to wait before trying again',
  schema: { type: 'integer', minimum: 1 },
};

export interface OpenApiOptions {
  /** AUTH_URL: the one server the document names. */
  authUrl: string;
  /** The request-limit preHandlers (`services.limits`): a route using one of them is rate limited. */
  rateLimitHooks: readonly unknown[];
  /** The prefix rules a route that declares nothing is documented by (GATEHOUSE_RULES). */
  rules?: ProtectionRules;
  /** The tags' descriptions, by name: what the modules declare (`collectOpenApiTags`). */
  tags: ReadonlyMap<string, string>;
}

/** Registers `@fastify/swagger` with the rules above; call before any route is added. */
export async function registerOpenApi(app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  const limitHooks = new Set(options.rateLimitHooks);
  const rules = options.rules ?? GATEHOUSE_RULES;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gatehouse',
        version: '0.1.0',
        description: 'Self-hosted authentication and authorization. Errors carry a stable `error` code and a `message`.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: options.authUrl, description: 'This Gatehouse (AUTH_URL)' }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from sign-in; browsers send the session cookie instead' } },
      },
    },
    transform: (input) => {
      const output = jsonSchemaTransform(input);
      if ((output.schema as { hide?: boolean } | undefined)?.hide === true) return output;
      const facts: RouteFacts = { rateLimited: isRateLimited(input.route, limitHooks), skipCsrf: input.route.config?.skipCsrf === true, caller: callerOf(input.route.config?.access) };
      return { ...output, schema: { ...output.schema, [ROUTE_FACTS]: facts } as FastifySchema };
    },
    transformObject: (input) => finishDocument(jsonSchemaTransformObject(input) as Json, rules, options.tags),
  });
}

function isRateLimited(route: RouteOptions, limitHooks: ReadonlySet<unknown>): boolean {
  if (route.config?.rateLimited === true) return true;
  const preHandlers = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
  return preHandlers.some((hook) => limitHooks.has(hook));
}

/** `POST /api/auth/signin/{provider}` → `postAuthSigninByProvider`. */
export function operationIdFor(method: string, path: string): string {
  const segments = path.split('/').filter((segment) => segment !== '');
  if (segments[0] === 'api' && segments.length > 1) segments.shift();
  const words = segments.flatMap((segment) => {
    const parameter = /^\{(.+)\}$/.exec(segment);
    return parameter ? ['by', ...splitWords(parameter[1]!)] : splitWords(segment);
  });
  return method.toLowerCase() + words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('');
}

function splitWords(text: string): string[] {
  return text.split(/[^A-Za-z0-9]+/).filter((word) => word !== '');
}

/** The path as a request could spell it, for the prefix rules: `{id}` → `id`. */
function samplePath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, '$1');
}

/** What the access hook asks of a route that declares nothing: the prefix rules' answer. */
function floorCaller(path: string, rules: ProtectionRules): Caller {
  const floor = decide(samplePath(path), null, rules);
  return floor.action === 'deny' && floor.reason === 'UNAUTHENTICATED' ? 'signed-in' : 'anyone';
}

function finishDocument(document: Json, rules: ProtectionRules, tagDescriptions: ReadonlyMap<string, string>): Json {
  const paths = (document.paths ?? {}) as Record<string, Record<string, Operation>>;
  const usedResponses = new Set<string>();
  const usedTags = new Set<string>();
  const operationIds = new Map<string, string>();

  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const facts = (operation[ROUTE_FACTS] ?? { rateLimited: false, skipCsrf: false, caller: null }) as RouteFacts;
      delete operation[ROUTE_FACTS];

      operation.operationId ??= operationIdFor(method, path);
      const other = operationIds.get(operation.operationId);
      if (other !== undefined) throw new Error(`OpenAPI: ${other} and ${where} both have the operationId "${operation.operationId}"; give one an operationId in its schema`);
      operationIds.set(operation.operationId, where);

      // The declaration decides, not what a schema says by hand: the document cannot drift from the hook.
      const caller = facts.caller ?? floorCaller(path, rules);
      operation.security = securityFor(caller);
      const signedIn = caller === 'signed-in';

      const responses = (operation.responses ??= {});
      const add = (status: string, name: string) => {
        if (responses[status] !== undefined) return;
        responses[status] = ref('responses', name);
        usedResponses.add(name);
      };
      const hasBody = operation.requestBody !== undefined;
      add('400', hasBody ? 'MalformedJson' : 'BadRequest');
      if (signedIn) {
        add('401', 'Unauthenticated');
        add('403', 'Forbidden');
      }
      if (UNSAFE_METHODS.has(method) && !facts.skipCsrf) add('403', 'CsrfFailed');
      if (hasBody) {
        add('413', 'PayloadTooLarge');
        add('415', 'UnsupportedMediaType');
      }
      if (hasBody || (operation.parameters?.length ?? 0) > 0) add('422', 'ValidationError');
      if (facts.rateLimited) add('429', 'RateLimited');
      add('500', 'InternalError');
      add('503', 'ServiceUnavailable');
      // A 429 or 503 the route documents itself says when to come back, too.
      for (const status of ['429', '503']) {
        const response = responses[status];
        if (response !== undefined && !('$ref' in response)) response.headers = { ...retryAfter, ...(response.headers as Json | undefined) };
      }
      operation.responses = sortByKey(responses);

      for (const tag of operation.tags ?? []) usedTags.add(tag);
    }
  }

  const components = { ...(document.components as Json | undefined) };
  components.responses = { ...(components.responses as Json | undefined), ...Object.fromEntries([...usedResponses].sort().map((name) => [name, RESPONSES[name]])) };
  components.headers = { ...(components.headers as Json | undefined), RetryAfter: RETRY_AFTER_HEADER };
  const finished: Json = {
    ...document,
    tags: [...usedTags].sort().map((name) => ({ name, ...(tagDescriptions.has(name) && { description: tagDescriptions.get(name) }) })),
    components,
  };
  pruneSchemas(finished);
  return finished;
}

function sortByKey<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/** Every `#/components/<kind>/<name>` the value refers to. */
function collectRefs(value: unknown, found: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) collectRefs(item, found);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string') found.add(child);
      else collectRefs(child, found);
    }
  }
}

/**
 * Keeps the component schemas the paths (and the shared responses) reach, through the schemas
 * they reach in turn; then names an input variant that stayed alone by its plain name.
 */
function pruneSchemas(document: Json): void {
  const components = document.components as Json;
  const schemas = (components.schemas ?? {}) as Record<string, unknown>;
  const prefix = '#/components/schemas/';
  const reached = new Set<string>();
  const pending: unknown[] = [document.paths, components.responses, components.headers];
  while (pending.length > 0) {
    const refs = new Set<string>();
    collectRefs(pending.pop(), refs);
    for (const target of refs) {
      if (!target.startsWith(prefix)) continue;
      const name = decodeURIComponent(target.slice(prefix.length));
      if (reached.has(name) || !(name in schemas)) continue;
      reached.add(name);
      pending.push(schemas[name]);
    }
  }
  const renames = new Map<string, string>();
  for (const name of reached) {
    const plain = name.endsWith('Input') ? name.slice(0, -'Input'.length) : null;
    if (plain !== null && plain !== '' && !reached.has(plain)) renames.set(name, plain);
  }
  const kept = [...reached].map((name) => [renames.get(name) ?? name, schemas[name]] as const);
  components.schemas = Object.fromEntries(kept.sort(([a], [b]) => a.localeCompare(b)));
  if (renames.size > 0) renameRefs(document, new Map([...renames].map(([from, to]) => [prefix + from, prefix + to])));
}

function renameRefs(value: unknown, renames: ReadonlyMap<string, string>): void {
  if (Array.isArray(value)) {
    for (const item of value) renameRefs(item, renames);
  } else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(record)) {
      if (key === '$ref' && typeof child === 'string') record[key] = renames.get(child) ?? child;
      else renameRefs(child, renames);
    }
  }
}
