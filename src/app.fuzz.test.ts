/**
 * Fuzzing (issue 7, item 7): random and hostile requests to every route the running app serves,
 * on SQLite. The routes are read from the app itself (Fastify's route tree, checked against the
 * OpenAPI document), so a new endpoint is fuzzed without anyone adding it here. Whatever arrives,
 * the answer is a success or a client error, never a 5xx, and no body or header shows a stack
 * trace, a source path or an internal error name; at the end the process still answers its health
 * check. A failure prints fast-check's seed and the shrunk request. The seed is fixed so runs are
 * reproducible: FUZZ_SEED explores elsewhere, FUZZ_RUNS multiplies the number of runs, and
 * FUZZ_SESSION_STRATEGY=jwt fuzzes the other session strategy.
 *
 * Requests come from a "profile" (anonymous, Bearer, a signed-in browser with its CSRF token, a
 * browser with only the CSRF pair, hostile credentials) so that some get past authentication and
 * the CSRF check and reach the handlers, and from hostile parts on top: path parameters, query
 * strings, headers, cookies, content types and bodies. Real values (the seeded users' ids, tokens,
 * sessions, a live OAuth flow) appear as references resolved at send time, so every run has live
 * credentials even after an earlier run ended a session or disabled a user.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { METHODS } from 'node:http';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase, type TestDatabase } from '../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../test/helpers/app.ts';
import { startGitHubPeer, startOidcPeer, type GitHubPeer, type OidcPeer, peerEnv } from '../test/helpers/oauth-peers.ts';
import { BODY_LIMIT_BYTES, OPENAPI_PATH } from './app.ts';
import { errorCatalogue } from './modules.ts';
import { REPO_ROOT } from '../test/helpers/process.ts';

const AUTH_URL = 'http://localhost:3000';
const ORIGIN = AUTH_URL;
const PASSWORD = 'correct horse battery staple';
const PROVIDERS = ['github', 'google', 'oidc'] as const;

const SEED = Number(process.env.FUZZ_SEED ?? 20_070_707);
const RUNS_FACTOR = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (count: number) => Math.max(1, Math.round(count * RUNS_FACTOR));
/** A run that takes this long is a hang: fast-check reports it like any failure. */
const RUN_TIMEOUT_MS = 10_000;

/** What an answer must never show (unless the request itself carried it, to be echoed back). */
const LEAKS = ['    at ', REPO_ROOT, '/src/', '.ts:', 'node_modules', 'TypeError', 'ReferenceError', 'SyntaxError', 'RangeError', 'SQLITE_'];

// ---------------------------------------------------------------------------------------------
// The routes, from the running app
// ---------------------------------------------------------------------------------------------

interface Operation {
  method: string;
  /** Fastify's pattern, e.g. `/api/admin/users/:id/sessions/:sessionId`. */
  path: string;
}

/**
 * Every method and path the app serves, read from `printRoutes()`: one node per line, its depth
 * given by the indentation (4 characters a level), its path the concatenation of its ancestors'.
 */
function listOperations(app: FastifyInstance): Operation[] {
  const operations: Operation[] = [];
  const prefixes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (.+?)(?: \(([A-Z, -]+)\))?$/.exec(line);
    if (match === null) continue;
    const depth = match[1]!.length / 4;
    const path = (depth === 0 ? '' : prefixes[depth - 1]!) + match[2]!;
    prefixes.length = depth;
    prefixes.push(path);
    for (const method of match[3]?.split(', ') ?? []) operations.push({ method, path });
  }
  return operations;
}

const paramNames = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);

// ---------------------------------------------------------------------------------------------
// References: real values, resolved when the request is sent
// ---------------------------------------------------------------------------------------------

const MEMBER_REFS = ['email', 'password', 'userId', 'sessionId', 'accessToken', 'refreshToken', 'tamperedToken', 'unsignedToken'] as const;
const ADMIN_REFS = ['adminEmail', 'adminId', 'adminSessionId', 'adminToken', 'adminRefreshToken'] as const;
const OAUTH_REFS = ['oauthCookie', 'oauthLinkCookie', 'oauthState', 'oauthCode'] as const;
/** A live password reset link's token (the member's), and a live e-mail verification link's (a new unverified user's). */
const LINK_REFS = ['resetToken', 'verifyToken'] as const;
type RefName = (typeof MEMBER_REFS)[number] | (typeof ADMIN_REFS)[number] | (typeof OAUTH_REFS)[number] | (typeof LINK_REFS)[number] | 'csrfToken' | 'csrfCookie';
type Context = Partial<Record<RefName, string>>;

const MARK = '\u0001';
const ref = (name: RefName) => `${MARK}${name}${MARK}`;
const REF_PATTERN = /\u0001(\w+)\u0001/g;

/** The names of the references anywhere in `value`. */
function refsIn(value: unknown): Set<string> {
  return new Set([...JSON.stringify(value).matchAll(/\\u0001(\w+)\\u0001/g)].map((m) => m[1]!));
}

function resolve(text: string, context: Context): string {
  return text.includes(MARK) ? text.replace(REF_PATTERN, (whole, name: RefName) => context[name] ?? whole) : text;
}

function resolveDeep(value: unknown, context: Context): unknown {
  if (typeof value === 'string') return resolve(value, context);
  if (value instanceof JsonText) return value;
  if (Array.isArray(value)) return value.map((item) => resolveDeep(item, context));
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      Object.defineProperty(copy, resolve(key, context), { value: resolveDeep(child, context), enumerable: true, configurable: true, writable: true });
    }
    return copy;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
/** Bidi overrides, zero-width and full-width characters, NFKC expanders, separators, syntax. (NUL comes with the huge texts and samples.) */
const specialChar = fc.constantFrom(
  '\u202e', '\u202d', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u2028', '\u2029', '\u0085', '\u00a0', '\u3000',
  '\u0301', 'ａ', 'Ａ', '＠', '．', '／', 'İ', 'ı', 'ß', 'ﬃ', 'ﷺ', '﷽', '𝔞', '🏳️‍🌈', '\r', '\n', '\t', '\u007f',
  '"', "'", '`', '<', '>', '&', '%', '+', '/', '\\', '?', '#', ';', ',', '=', ' ', '.', ':', '@', '*', '$', '{', '}', '[', ']',
);
const hostileUnit = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: specialChar },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 1 }) },
);
const SAMPLES = [
  '', ' ', 'null', 'undefined', 'true', '0', '-1', '1e309', 'NaN', '[]', '{}', '__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString',
  '../../../../etc/passwd', '..%2f..%2fetc', '%2e%2e', '//evil.example', '/\\evil.example', '/.//evil.example', 'https://evil.example/', 'javascript:alert(1)',
  'data:text/html,<script>alert(1)</script>', '<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "' OR '1'='1' --", '"; DROP TABLE users; --',
  '%', '%00', '%zz', '%C0%80', '%ED%A0%80', '%FF', '%%', '\\', '${7*7}', '<%= it.title %>', '<%~ it %>', '{{7*7}}', '%s%s%n',
  'ＡＤＭＩＮ＠ＥＸＡＭＰＬＥ．ＣＯＭ', 'a@b', '@', 'a@', '@b', 'a@b.c', '\u202eadmin@example.com', 'admin\u200b@example.com', 'x@[127.0.0.1]',
  'OAuthSignin', 'OAuthCallback', 'INVALID_TOKEN', 'VALIDATION_ERROR', 'TOO_SHORT', 'access_denied', 'ADMIN', 'admin', 'USER_NOT_FOUND', 'signin.failure',
  '/dashboard', '/admin/users', '/api/auth/session', 'true', 'false', '1', '200', '201', '9007199254740993', '-0',
  'MDAwMDAwMDAwMDAwMS54', 'OTk5OTk5OTk5OTk5OTk5OTk5Lng', 'MS4uLi4', // cursors: well-formed, too big, bad id
];
const hugeText = (maxLength: number) =>
  fc
    .tuple(fc.constantFrom('a', 'é', '\u{1f600}', '\u0000', 'ﷺ', '%', '\ud800', '<', 'a@'), fc.integer({ min: Math.min(512, maxLength), max: maxLength }))
    .map(([piece, length]) => piece.repeat(Math.ceil(length / piece.length)));

// Built once: a string arbitrary with a custom unit is costly to construct.
const shortHostileText = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: hostileUnit, maxLength: 40 }) },
  { weight: 3, arbitrary: fc.constantFrom(...SAMPLES) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);
/** Any text an attacker might send; `maxHuge` bounds the occasional very long one. */
const hostileText = (maxHuge: number) => fc.oneof({ weight: 10, arbitrary: shortHostileText }, { weight: 1, arbitrary: hugeText(maxHuge) });

const realValue = fc.constantFrom(
  ref('email'), ref('password'), ref('userId'), ref('sessionId'), ref('refreshToken'), ref('accessToken'),
  ref('adminEmail'), ref('adminId'), ref('adminSessionId'), ref('csrfToken'), ref('resetToken'), ref('verifyToken'), ...PROVIDERS, 'ADMIN', PASSWORD,
);
/** A string value: hostile, or a real one (an id, a token, an address) so handlers get past their lookups. */
const text = (maxHuge: number) => fc.oneof({ weight: 5, arbitrary: hostileText(maxHuge) }, { weight: 2, arbitrary: realValue });

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** JWT-shaped junk: `alg: none`, foreign algorithms, key-pointing headers, escalated claims. */
const forgedJwt = fc
  .tuple(
    fc.oneof(
      fc.constantFrom({ alg: 'none' }, { alg: 'none', typ: 'at+jwt' }, { alg: 'None' }, { alg: 'HS256', typ: 'at+jwt' }, { alg: 'EdDSA', jku: 'https://evil.example/jwks' }),
      fc.record(
        {
          alg: fc.constantFrom('none', 'HS256', 'EdDSA', 'RS256', 'ES256', 'dir', ''),
          kid: text(64),
          typ: fc.constantFrom('at+jwt', 'JWT', 'jwt', ''),
          jwk: fc.constant({ kty: 'OKP', crv: 'Ed25519', x: 'AAAA' }),
          crit: fc.constant(['b64']),
          b64: fc.boolean(),
        },
        { requiredKeys: ['alg'] },
      ),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    fc.oneof(
      fc.record(
        {
          sub: text(64),
          sid: text(64),
          roles: fc.oneof(fc.constant(['ADMIN']), fc.array(text(64), { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
          iss: fc.constantFrom(AUTH_URL, 'https://evil.example', ''),
          aud: fc.constantFrom(AUTH_URL, 'https://evil.example'),
          exp: fc.oneof(fc.integer(), fc.constantFrom(1e308, 4_102_444_800, -1, 0)),
          iat: fc.integer(),
          nbf: fc.integer(),
          jti: text(64),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    fc.oneof(fc.constant(''), fc.constant('AAAA'), fc.base64String({ maxLength: 90 }).map((s) => s.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_'))),
  )
  .map(([header, claims, signature]) => `${b64(header)}.${b64(claims)}.${signature}`);

const authorization = fc.oneof(
  { weight: 3, arbitrary: forgedJwt.map((token) => `Bearer ${token}`) },
  { weight: 2, arbitrary: fc.constantFrom(`Bearer ${ref('tamperedToken')}`, `Bearer ${ref('unsignedToken')}`, `Bearer ${ref('refreshToken')}`, `Bearer ${ref('csrfToken')}`, `bearer   ${ref('accessToken')}  `, `Bearer ${ref('accessToken')}x`) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'Basic', 'Digest', 'Token', 'JWT', 'Bearer:', 'Bearer\t', ''), text(8_000)).map(([scheme, value]) => `${scheme} ${value}`) },
  { weight: 1, arbitrary: fc.integer({ min: 4_000, max: 15_000 }).map((length) => `Bearer ${'A'.repeat(length)}`) },
  { weight: 1, arbitrary: fc.constantFrom('Bearer', 'Bearer ', 'Bearer .', 'Bearer ..', 'Bearer a.b.c', `Basic ${b64(`admin@example.com:${PASSWORD}`)}`, 'Negotiate YII=') },
);

const COOKIE_NAMES = ['gatehouse.session', 'gatehouse.refresh', 'gatehouse.csrf', 'gatehouse.oauth', '__Host-gatehouse.session', '__Host-gatehouse.csrf', 'GATEHOUSE.SESSION', '__proto__', 'constructor'];
const cookieValue = fc.oneof(
  { weight: 3, arbitrary: hostileText(4_000) },
  { weight: 2, arbitrary: fc.constantFrom(ref('accessToken'), ref('refreshToken'), ref('csrfCookie'), ref('csrfToken'), ref('oauthCookie'), ref('adminToken'), ref('tamperedToken'), ref('unsignedToken')) },
  { weight: 1, arbitrary: forgedJwt },
  { weight: 1, arbitrary: fc.tuple(hostileText(200), hostileText(200)).map(([value, signature]) => `${value}.${signature}`) },
  { weight: 1, arbitrary: fc.constantFrom(`${ref('csrfCookie')}x`, `${ref('oauthCookie')}x`, 'a.b.c.d.e', '....', '%', '%zz', '"quoted"', '=', 's:junk') },
);
const cookies = fc.array(fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...COOKIE_NAMES) }, { weight: 1, arbitrary: hostileText(100) }), cookieValue), { maxLength: 4 });

/** A second Content-Type (the two are joined with a comma, as Node joins repeated headers). */
const CONTENT_TYPES_FOR_EXTRA = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'];
const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,24}$/);
const extraHeader: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(fc.constant('origin'), fc.oneof(fc.constantFrom(ORIGIN, 'null', 'https://evil.example', 'http://localhost:3000.evil.example', 'http://LOCALHOST:3000', `${ORIGIN}/`, 'http://localhost', ''), hostileText(200))),
  fc.tuple(fc.constant('sec-fetch-site'), fc.oneof(fc.constantFrom('same-origin', 'same-site', 'cross-site', 'none', ''), hostileText(100))),
  fc.tuple(fc.constant('x-csrf-token'), fc.oneof(fc.constant(ref('csrfToken')), hostileText(8_000))),
  fc.tuple(fc.constantFrom('x-forwarded-for', 'x-real-ip'), fc.oneof(fc.constantFrom('127.0.0.1', '::1', '1.2.3.4, 127.0.0.1', 'unknown'), hostileText(200))),
  fc.tuple(fc.constantFrom('x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port'), fc.oneof(fc.constantFrom('evil.example', 'https', 'localhost:3000', '443'), hostileText(200))),
  fc.tuple(fc.constant('forwarded'), fc.oneof(fc.constant('for=127.0.0.1;host=evil.example;proto=https'), hostileText(200))),
  fc.tuple(fc.constant('host'), fc.oneof(fc.constantFrom('localhost:3000', 'evil.example', '', '[::1]:3000', 'localhost:99999'), hostileText(200))),
  fc.tuple(fc.constantFrom('user-agent', 'accept-language', 'referer', 'x-request-id', 'if-none-match', 'range'), hostileText(8_000)),
  fc.tuple(fc.constant('accept'), fc.oneof(fc.constantFrom('text/html', 'application/json', '*/*', 'text/html;q=0'), hostileText(200))),
  fc.tuple(fc.constant('content-length'), fc.constantFrom('0', '1', '-1', 'abc', '99999999', String(BODY_LIMIT_BYTES + 1), ' 5', '1e3', '5, 6')),
  fc.tuple(fc.constant('authorization'), authorization),
  fc.tuple(fc.constant('content-type'), fc.oneof(fc.constantFrom(...CONTENT_TYPES_FOR_EXTRA), hostileText(200))),
  fc.tuple(fc.constant('cookie'), hostileText(4_000)),
  fc.tuple(headerName, hostileText(1_000)),
);

const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16le', 'APPLICATION/JSON', 'application/json;', 'application/json; charset="',
  'application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=iso-8859-1', 'text/plain', 'text/plain;charset=UTF-8',
  'multipart/form-data; boundary=fuzz', 'multipart/form-data', 'application/vnd.api+json', 'application/merge-patch+json', 'application/jsonx', 'text/html', '*/*', '', ';',
];

const KNOWN_FIELDS = ['email', 'password', 'name', 'callbackUrl', 'csrfToken', 'refreshToken', 'token', 'currentPassword', 'newPassword', 'roles', 'disabled', 'sessionId', 'provider'];
const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'roles', 'emailVerified', 'id', 'isAdmin', 'passwordHash', 'toString', 'hasOwnProperty', 'valueOf', '', 'email ', 'EMAIL'];
const fieldName = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...KNOWN_FIELDS) }, { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_KEYS) }, { weight: 1, arbitrary: hostileText(200) });

/** Arrays (or objects) nested up to the body limit, as JSON text. */
const deepJson = fc
  .tuple(fc.integer({ min: 16, max: BODY_LIMIT_BYTES / 2 }), fc.boolean())
  .map(([depth, isArray]) => (isArray ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(Math.floor(depth / 5))}1${'}'.repeat(Math.floor(depth / 5))}`));

/** JSON written into a body as is: nesting too deep to be a value that fast-check could print. */
class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  [fc.toStringMethod](): string {
    return `JsonText(${this.text.slice(0, 20)}… ${this.text.length} chars)`;
  }
}

const fieldValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: text(BODY_LIMIT_BYTES + 1_024) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, 2 ** 53 + 2, [], {}, [null], { $ne: null }, { $gt: '' }) },
  { weight: 1, arbitrary: fc.array(text(200), { maxLength: 5 }) },
  { weight: 1, arbitrary: deepJson.map((json) => new JsonText(json)) },
);

/** Plausible fields (real values often) so that validation passes and the handlers' logic runs. */
const plausibleFields = fc.record(
  {
    email: fc.oneof(fc.constantFrom(ref('email'), ref('adminEmail'), 'nobody@example.com', ' Member@Example.COM ', 'ｍｅｍｂｅｒ＠ｅｘａｍｐｌｅ．ｃｏｍ'), text(2_000)),
    password: fc.oneof(fc.constantFrom(ref('password'), 'Tr0ub4dor&3-is-not-it', 'a'), text(5_000)),
    currentPassword: fc.oneof(fc.constant(ref('password')), text(5_000)),
    newPassword: fc.oneof(fc.constantFrom('a much longer passphrase 9!', 'password', 'correct horse'), text(5_000)),
    name: text(1_000),
    callbackUrl: text(3_000),
    token: fc.oneof(fc.constantFrom(ref('resetToken'), ref('verifyToken')), text(1_000)),
    refreshToken: fc.oneof(fc.constant(ref('refreshToken')), text(1_000)),
    sessionId: fc.oneof(fc.constantFrom(ref('sessionId'), ref('adminSessionId')), text(200)),
    provider: fc.oneof(fc.constantFrom(...PROVIDERS), text(200)),
    roles: fc.oneof(fc.constantFrom('ADMIN', 'ADMIN EDITOR', 'admin', 'A,B,,C', ''), fc.array(fc.constantFrom('ADMIN', 'EDITOR', 'a b', ''), { maxLength: 60 }), text(4_000)),
    disabled: fc.oneof(fc.boolean(), fc.constantFrom('true', 'false', 1, 0, null)),
  },
  { requiredKeys: [] },
);

const fieldPairs = fc
  .tuple(plausibleFields, fc.array(fc.tuple(fieldName, fieldValue), { maxLength: 6 }))
  .map(([plausible, extra]) => [...Object.entries(plausible), ...extra] as Array<[string, unknown]>);

const formPairsWith = (maxExtra: number) =>
  fc.tuple(plausibleFields, fc.array(fc.tuple(fieldName, text(BODY_LIMIT_BYTES + 1_024)), { maxLength: maxExtra })).map(
    ([plausible, extra]) =>
      [...Object.entries(plausible).map(([name, value]) => [name, Array.isArray(value) ? value.join(' ') : String(value)]), ...extra] as Array<[string, string]>,
  );
const formPairs = formPairsWith(6);

/** Byte sequences that are not UTF-8: lone continuation bytes, overlong NUL, encoded surrogates, beyond U+10FFFF, truncated. */
const invalidUtf8 = fc.constantFrom([0xff], [0xfe, 0xff], [0x80], [0xc0, 0x80], [0xc1, 0xbf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xf0, 0x9f, 0x98]);

type Body =
  | { kind: 'none' }
  /** A JSON object written pair by pair, so `__proto__` and duplicate keys reach the parser as sent. */
  | { kind: 'object'; pairs: Array<[string, unknown]> }
  | { kind: 'json'; value: unknown }
  | { kind: 'form'; pairs: Array<[string, string]> }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: number[] };

const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 5, arbitrary: fieldPairs.map((pairs) => ({ kind: 'object' as const, pairs })) },
  { weight: 4, arbitrary: formPairs.map((pairs) => ({ kind: 'form' as const, pairs })) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => ({ kind: 'json' as const, value })) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        deepJson,
        hugeText(BODY_LIMIT_BYTES * 2),
        fc.constantFrom('{', '{"email":', '{"__proto__":{"roles":["ADMIN"]},"email":"a@b.c","password":"x"}', '{"constructor":{"prototype":{"isAdmin":true}}}', '{"email":"a@b.c","email":["x"]}', '{"a":1}garbage', '\ufeff{}', 'null', '"string"', '1e999', '[]'),
        fc.constantFrom('email=%zz&password=%E0%A4%A', '&&&=&=', 'a[b]=1&a[c]=2', '__proto__[roles]=ADMIN&email=a@b.c', 'csrfToken=a&csrfToken=b', `csrfToken=${ref('csrfToken')}&csrfToken=${ref('csrfToken')}`, '=', '%', '+++'),
        fc.constant(`--fuzz\r\nContent-Disposition: form-data; name="email"\r\n\r\n${ref('email')}\r\n--fuzz\r\nContent-Disposition: form-data; name="password"\r\n\r\n${PASSWORD}\r\n--fuzz--\r\n`),
        hostileText(4_000),
      )
      .map((value) => ({ kind: 'text' as const, text: value })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.uint8Array({ maxLength: 300 }).map((bytes) => [...bytes]),
        fc.tuple(fc.constantFrom('email', 'password', 'name', 'callbackUrl', 'token', 'csrfToken'), invalidUtf8, fc.boolean()).map(([field, bad, isForm]) =>
          isForm
            ? [...Buffer.from(`${field}=`), ...bad, ...Buffer.from(`&password=x&email=a%40b.c`)]
            : [...Buffer.from(`{"email":"a@b.c","password":"x","${field}":"`), ...bad, ...Buffer.from('"}')],
        ),
      )
      .map((bytes) => ({ kind: 'bytes' as const, bytes })),
  },
);

/** How the request presents itself, before the hostile parts are added. */
const PROFILES = ['anonymous', 'member', 'admin', 'memberBrowser', 'adminBrowser', 'refreshingBrowser', 'csrfOnly', 'hostile'] as const;
type Profile = (typeof PROFILES)[number];

interface RequestSpec {
  method: string;
  path: string;
  /** Per path parameter: [isRaw, text]. Raw text goes into the path as is (hostile encodings); the rest is percent-encoded. */
  params: Record<string, [boolean, string]>;
  query: Array<[string, string]>;
  /** Appended to the query string as is. */
  rawQuery: string | null;
  profile: Profile;
  /** Browser profiles: also put the CSRF token in the body. */
  isCsrfInBody: boolean;
  cookies: Array<[string, string]>;
  headers: Array<[string, string]>;
  contentType: string | null;
  body: Body;
  remoteAddress: string | null;
}

const RAW_PARAMS = ['%', '%zz', '%C0%80', '%ED%A0%80', '%FF', '%2F', '%2f..%2f', '..', '.', '%2e%2e', '', '%00', '%252F', ';', '*', '%20', '+', '~', '%u0041'];
const paramValue: fc.Arbitrary<[boolean, string]> = fc.oneof(
  { weight: 4, arbitrary: text(4_000).map((value): [boolean, string] => [false, value]) },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_PARAMS).map((value): [boolean, string] => [true, value]) },
);

const QUERY_NAMES = ['error', 'callbackUrl', 'token', 'cursor', 'limit', 'query', 'keepCurrent', 'userId', 'type', 'reason', 'notice', 'code', 'state', 'iss', 'error_description', 'csrfToken', '__proto__', 'constructor', 'toString'];
const RAW_QUERIES = ['%', '%zz', '&&&', '=', 'a=%', '?', '#', 'callbackUrl=%2F%2Fevil.example', 'error=%ED%A0%80', 'token=%C0%80', '__proto__[x]=1', 'limit=1e3', 'limit=-0', 'limit=0x10', 'a[]=1&a[]=2', 'keepCurrent=true&keepCurrent=false', 'cursor=%00'];
const query = fc.array(fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...QUERY_NAMES) }, { weight: 1, arbitrary: hostileText(200) }), text(4_000)), { maxLength: 6 });

function requestSpec(paths: fc.Arbitrary<string>, method: fc.Arbitrary<string>): fc.Arbitrary<RequestSpec> {
  return paths.chain((path) =>
    fc.record({
      method,
      path: fc.constant(path),
      params: fc.record(Object.fromEntries(paramNames(path).map((name) => [name, paramValue]))) as fc.Arbitrary<Record<string, [boolean, string]>>,
      query: fc.oneof({ weight: 1, arbitrary: fc.constant<Array<[string, string]>>([]) }, { weight: 1, arbitrary: query }),
      rawQuery: fc.option(fc.constantFrom(...RAW_QUERIES), { nil: null, freq: 5 }),
      profile: fc.constantFrom(...PROFILES),
      isCsrfInBody: fc.boolean(),
      cookies: fc.oneof({ weight: 3, arbitrary: fc.constant<Array<[string, string]>>([]) }, { weight: 1, arbitrary: cookies }),
      headers: fc.array(extraHeader, { maxLength: 4 }),
      contentType: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }, { weight: 1, arbitrary: hostileText(200) }),
      body,
      remoteAddress: fc.option(fc.constantFrom('::1', '10.1.2.3', '::ffff:127.0.0.1', '203.0.113.9'), { nil: null, freq: 4 }),
    }),
  );
}

/** Requests close to what the pages and API clients send (real ids, live credentials, the right content type), with a few hostile values: these reach the handlers' logic. */
const nearlyValidText = fc.oneof({ weight: 3, arbitrary: realValue }, { weight: 2, arbitrary: fc.constantFrom(...SAMPLES) }, { weight: 2, arbitrary: hostileText(2_000) });
const NEARLY_VALID_PARAMS: Record<string, fc.Arbitrary<string>> = {
  id: fc.constantFrom(ref('userId'), ref('adminId')),
  sessionId: fc.constantFrom(ref('sessionId'), ref('adminSessionId')),
  provider: fc.constantFrom(...PROVIDERS),
};
const nearlyValidBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: fc.tuple(plausibleFields, fc.array(fc.tuple(fieldName, fieldValue), { maxLength: 1 })).map(([fields, extra]) => ({ kind: 'object' as const, pairs: [...Object.entries(fields), ...extra] })) },
  { weight: 3, arbitrary: formPairsWith(1).map((pairs) => ({ kind: 'form' as const, pairs })) },
);

function nearlyValidSpec(path: string, method: string): fc.Arbitrary<RequestSpec> {
  const params = Object.fromEntries(
    paramNames(path).map((name) => [name, fc.oneof({ weight: 3, arbitrary: NEARLY_VALID_PARAMS[name] ?? nearlyValidText }, { weight: 1, arbitrary: nearlyValidText }).map((value): [boolean, string] => [false, value])]),
  );
  return fc.record({
    method: fc.constant(method),
    path: fc.constant(path),
    params: fc.record(params) as fc.Arbitrary<Record<string, [boolean, string]>>,
    query: fc.array(fc.tuple(fc.constantFrom(...QUERY_NAMES), nearlyValidText), { maxLength: 3 }),
    rawQuery: fc.constant(null),
    // The admin's pages and API mostly as the admin, so that their handlers run.
    profile: /^\/(api\/)?admin\b/.test(path)
      ? fc.constantFrom<Profile>('admin', 'adminBrowser', 'admin', 'adminBrowser', 'member', 'anonymous')
      : fc.constantFrom<Profile>('anonymous', 'member', 'admin', 'memberBrowser', 'adminBrowser', 'refreshingBrowser', 'csrfOnly'),
    isCsrfInBody: fc.constant(true),
    cookies: fc.constant<Array<[string, string]>>([]),
    headers: fc.array(extraHeader, { maxLength: 1 }),
    contentType: fc.constant(null),
    body: nearlyValidBody,
    remoteAddress: fc.constant(null),
  });
}

// ---------------------------------------------------------------------------------------------
// Building the request a client would send
// ---------------------------------------------------------------------------------------------

/** A header value as Node hands it over: UTF-8 bytes read as Latin-1, no control characters, no outer whitespace. */
function onTheWire(value: string): string {
  return Buffer.from(value.toWellFormed(), 'utf8').toString('latin1').replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '').replace(/^[ \t]+|[ \t]+$/g, '');
}

const encode = (value: string) => encodeURIComponent(value.toWellFormed());

function profileParts(profile: Profile): { headers: Array<[string, string]>; cookies: Array<[string, string]> } {
  const csrfPair: Array<[string, string]> = [['gatehouse.csrf', ref('csrfCookie')]];
  const sameOrigin: Array<[string, string]> = [['origin', ORIGIN], ['x-csrf-token', ref('csrfToken')]];
  switch (profile) {
    case 'anonymous':
      return { headers: [], cookies: [] };
    case 'member':
      return { headers: [['authorization', `Bearer ${ref('accessToken')}`]], cookies: [] };
    case 'admin':
      return { headers: [['authorization', `Bearer ${ref('adminToken')}`]], cookies: [] };
    case 'memberBrowser':
      return { headers: sameOrigin, cookies: [['gatehouse.session', ref('accessToken')], ['gatehouse.refresh', ref('refreshToken')], ...csrfPair] };
    case 'adminBrowser':
      return { headers: sameOrigin, cookies: [['gatehouse.session', ref('adminToken')], ['gatehouse.refresh', ref('adminRefreshToken')], ...csrfPair] };
    case 'refreshingBrowser':
      return { headers: sameOrigin, cookies: [['gatehouse.refresh', ref('refreshToken')], ...csrfPair] };
    case 'csrfOnly':
      return { headers: sameOrigin, cookies: csrfPair };
    case 'hostile':
      return { headers: [['authorization', `Bearer ${ref('tamperedToken')}`]], cookies: [['gatehouse.session', ref('unsignedToken')], ['gatehouse.oauth', ref('oauthCookie')]] };
  }
}

function buildBody(spec: RequestSpec, context: Context): { payload: string | Buffer | undefined; contentType: string | undefined } {
  const r = (value: string) => resolve(value, context);
  const isBrowser = spec.profile === 'memberBrowser' || spec.profile === 'adminBrowser' || spec.profile === 'refreshingBrowser' || spec.profile === 'csrfOnly';
  const csrf: Array<[string, string]> = isBrowser && spec.isCsrfInBody ? [['csrfToken', ref('csrfToken')]] : [];
  const given = spec.contentType ?? undefined;
  switch (spec.body.kind) {
    case 'none':
      return { payload: undefined, contentType: given };
    case 'object': {
      const json = (value: unknown) => (value instanceof JsonText ? value.text : (JSON.stringify(resolveDeep(value, context)) ?? 'null'));
      const members = [...spec.body.pairs, ...csrf].map(([name, value]) => `${JSON.stringify(r(name))}:${json(value)}`);
      return { payload: `{${members.join(',')}}`, contentType: given ?? 'application/json' };
    }
    case 'json':
      return { payload: JSON.stringify(resolveDeep(spec.body.value, context)), contentType: given ?? 'application/json' };
    case 'form':
      return { payload: [...spec.body.pairs, ...csrf].map(([name, value]) => `${encode(r(name))}=${encode(r(value))}`).join('&'), contentType: given ?? 'application/x-www-form-urlencoded' };
    case 'text':
      return { payload: r(spec.body.text), contentType: given };
    case 'bytes':
      return { payload: Buffer.from(spec.body.bytes), contentType: given ?? 'application/json' };
  }
}

function buildRequest(spec: RequestSpec, context: Context): InjectOptions & { url: string; method: string } {
  const r = (value: string) => resolve(value, context);
  const path = spec.path.replace(/:(\w+)/g, (_, name: string) => {
    const [isRaw, value] = spec.params[name] ?? [false, 'x'];
    return isRaw ? value : encode(r(value));
  });
  const queryParts = spec.query.map(([name, value]) => `${encode(r(name))}=${encode(r(value))}`);
  if (spec.rawQuery !== null) queryParts.push(spec.rawQuery);
  const url = queryParts.length === 0 ? path : `${path}?${queryParts.join('&')}`;

  const profile = profileParts(spec.profile);
  const { payload, contentType } = buildBody(spec, context);
  const headers: Record<string, string | string[]> = {};
  const add = (name: string, value: string) => {
    const wire = onTheWire(r(value));
    const existing = headers[name];
    headers[name] = existing === undefined ? wire : [...(Array.isArray(existing) ? existing : [existing]), wire];
  };
  const cookiePairs = [...profile.cookies, ...spec.cookies];
  if (cookiePairs.length > 0) add('cookie', cookiePairs.map(([name, value]) => `${r(name)}=${r(value)}`).join('; '));
  for (const [name, value] of [...profile.headers, ...spec.headers]) add(name, value);
  if (contentType !== undefined) add('content-type', contentType);

  return {
    method: spec.method,
    url,
    headers,
    ...(payload !== undefined && { payload }),
    ...(spec.remoteAddress !== null && { remoteAddress: spec.remoteAddress }),
  };
}

// ---------------------------------------------------------------------------------------------
// What every answer must be
// ---------------------------------------------------------------------------------------------

const KNOWN_CODES = new Set(Object.keys(errorCatalogue()));
/**
 * The OpenID Provider's endpoints answer OAuth errors (RFC 6749 §5.2 and the registries after it)
 * in OAuth's own shape, `{error, error_description}`; `server_error` is never one of them here.
 */
const OAUTH_CODES = new Set([
  'invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope',
  'invalid_target', 'access_denied', 'unsupported_response_type', 'invalid_token', 'insufficient_scope', 'invalid_redirect_uri',
  'invalid_client_metadata', 'invalid_dpop_proof', 'use_dpop_nonce', 'authorization_pending', 'slow_down', 'expired_token',
  'invalid_request_uri', 'invalid_request_object', 'request_not_supported', 'request_uri_not_supported',
  'registration_not_supported', 'login_required', 'consent_required', 'interaction_required', 'invalid_authorization_details',
  'unmet_authentication_requirements', 'invalid_software_statement', 'unapproved_software_statement',
]);
const isProviderPath = (url: string) => /^\/(oidc\/|device(?:[/?]|$)|\.well-known\/(openid-configuration|oauth-authorization-server))/.test(url);

/** Percent-decoded where the escapes are valid, as a page echoing a query value shows it. */
function decodeLeniently(text: string): string {
  return text.replace(/\+/g, ' ').replace(/(?:%[0-9a-f]{2})+/gi, (escapes) => {
    try {
      return decodeURIComponent(escapes);
    } catch {
      return escapes;
    }
  });
}

function describeRequest(request: InjectOptions & { url: string; method: string }): string {
  const payload = request.payload === undefined ? '' : Buffer.isBuffer(request.payload) ? `<${request.payload.length} bytes>` : String(request.payload);
  return `${request.method} ${request.url.slice(0, 300)} ${JSON.stringify(request.headers).slice(0, 600)} ${payload.slice(0, 300)}`;
}

function assertSafeAnswer(request: InjectOptions & { url: string; method: string }, response: LightMyRequestResponse): void {
  const where = () => `${describeRequest(request)}\n  -> ${response.statusCode} ${response.body.slice(0, 400)}`;
  assert.ok(response.statusCode < 500, `a server error:\n  ${where()}`);
  const payload = Buffer.isBuffer(request.payload) ? request.payload.toString('latin1') : String(request.payload ?? '');
  const sent = [request.url, decodeLeniently(request.url), JSON.stringify(request.headers), payload, decodeLeniently(payload)].join('\n');
  const shown = [response.body, ...Object.values(response.headers).flat().map(String)].join('\n');
  // A script we serve (/assets/passkeys.js: @simplewebauthn/browser tests `e.name === "TypeError"`)
  // may name JavaScript's error types in its code; it must still show no path or stack.
  const isScript = response.statusCode === 200 && String(response.headers['content-type']).startsWith('text/javascript');
  for (const leak of LEAKS) {
    if (isScript && leak.endsWith('Error')) continue;
    if (shown.includes(leak) && !sent.includes(leak)) assert.fail(`the answer shows ${JSON.stringify(leak)}:\n  ${where()}`);
  }
  if (response.statusCode >= 400 && response.body !== '' && String(response.headers['content-type']).startsWith('application/json')) {
    const code = (JSON.parse(response.body) as { error?: unknown }).error;
    const isKnown = typeof code === 'string' && (KNOWN_CODES.has(code) || (isProviderPath(request.url) && OAUTH_CODES.has(code)));
    assert.ok(isKnown, `an error without a catalogued code:\n  ${where()}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------------------------

/** The per-route fuzzing of every route, split into this many tests. */
const ROUTE_SHARES = 8;

describe('Fuzzing every endpoint on sqlite', () => {
  let database: TestDatabase;
  let t: TestApp;
  let github: GitHubPeer;
  let google: OidcPeer;
  let oidc: OidcPeer;
  let operations: Operation[];
  let csrf: { token: string; cookie: string };
  /** Errors that escaped every handler: none may. */
  const escaped: unknown[] = [];
  const recordEscape = (error: unknown) => escaped.push(error);

  /** The accounts the runs act as; replaced by fresh ones when a run has locked one out. */
  const accounts = { member: { email: 'member-0@example.com', roles: [] as string[] }, admin: { email: 'admin-0@example.com', roles: ['ADMIN'] } };
  let accountCounter = 0;

  before(async () => {
    process.on('unhandledRejection', recordEscape);
    process.on('uncaughtException', recordEscape);
    [google, oidc, github] = await Promise.all([startOidcPeer({ clientId: 'google-client' }), startOidcPeer({ clientId: 'acme-client' }), startGitHubPeer()]);
    database = await createSqliteDatabase();
    t = await createTestApp(database, {
      env: {
        AUTH_URL,
        ...(process.env.FUZZ_SESSION_STRATEGY && { SESSION_STRATEGY: process.env.FUZZ_SESSION_STRATEGY }),
        // Hashing is not what is under test: cheap parameters keep thousands of requests fast.
        ARGON2_MEMORY_KIB: '1024',
        ARGON2_ITERATIONS: '1',
        ...peerEnv({ google, oidc, github }),
      },
    });
    operations = listOperations(t.app);
    for (const account of Object.values(accounts)) await createUser(t.services, { email: account.email, password: PASSWORD, roles: account.roles });
    const issued = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
    csrf = { token: issued.json().csrfToken, cookie: issued.cookies.find((c) => c.name === 'gatehouse.csrf')!.value };
  });
  after(async () => {
    process.off('unhandledRejection', recordEscape);
    process.off('uncaughtException', recordEscape);
    await t?.close();
    await database?.drop();
    await Promise.all([google?.close(), oidc?.close(), github?.close()]);
  });

  /** A fresh session of the member or the admin; a new account when a run disabled theirs or changed its password. */
  async function signIn(role: 'member' | 'admin') {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const account = accounts[role];
      const result = await t.services.credentials.signIn({ email: account.email, password: PASSWORD, ip: '127.0.0.1', userAgent: 'fuzz' });
      if (result.ok) return { email: account.email, userId: result.user.id, session: result.session };
      accountCounter += 1;
      accounts[role] = { ...account, email: `${role}-${accountCounter}@example.com` };
      await createUser(t.services, { email: accounts[role].email, password: PASSWORD, roles: account.roles });
    }
    throw new Error(`could not sign in as the ${role}`);
  }

  /** An OAuth flow started the way a browser starts one: its cookie, its state, and (if asked) the provider's code. */
  async function startFlow(provider: string, isLink: boolean, accessToken: string | undefined, needsCode: boolean) {
    const response = isLink
      ? await t.app.inject({ method: 'POST', url: `/api/auth/link/${provider}`, headers: { authorization: `Bearer ${accessToken}` }, payload: {} })
      : await t.app.inject({
          method: 'POST',
          url: `/api/auth/signin/${provider}`,
          headers: { origin: ORIGIN, cookie: `gatehouse.csrf=${csrf.cookie}`, 'content-type': 'application/x-www-form-urlencoded' },
          payload: `csrfToken=${encode(csrf.token)}`,
        });
    assert.equal(response.statusCode, 303, response.body);
    const location = new URL(String(response.headers.location));
    const cookie = response.cookies.find((c) => c.name === 'gatehouse.oauth')?.value;
    assert.ok(cookie !== undefined, `a flow cookie from ${provider}`);
    let code: string | undefined;
    if (needsCode) {
      const answer = await fetch(location, { redirect: 'manual' });
      code = new URL(String(answer.headers.get('location'))).searchParams.get('code') ?? undefined;
    }
    return { cookie, state: location.searchParams.get('state') ?? '', code };
  }

  /** The real values that `wanted` names, made for this run (the OAuth flow at `provider`). */
  async function contextFor(wanted: ReadonlySet<string>, provider: string): Promise<Context> {
    const context: Context = { csrfToken: csrf.token, csrfCookie: csrf.cookie };
    const wants = (names: readonly string[]) => names.some((name) => wanted.has(name));
    if (wants(MEMBER_REFS) || wanted.has('oauthLinkCookie') || wanted.has('resetToken')) {
      const member = await signIn('member');
      const [header, payload, signature] = member.session.accessToken.split('.') as [string, string, string];
      const claims = { ...(JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>), roles: ['ADMIN'] };
      const protectedHeader = JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>;
      Object.assign(context, {
        email: member.email,
        password: PASSWORD,
        userId: member.userId,
        sessionId: member.session.sessionId,
        accessToken: member.session.accessToken,
        refreshToken: member.session.refreshToken,
        // The member's own token with ADMIN added: the signature no longer matches.
        tamperedToken: `${header}.${b64(claims)}.${signature}`,
        // The same claims, unsigned.
        unsignedToken: `${b64({ ...protectedHeader, alg: 'none' })}.${b64(claims)}.`,
      });
    }
    // Issued directly: asking through the forgot-password path waits out its constant response time.
    if (wanted.has('resetToken')) {
      context.resetToken = (await t.services.actionTokens.issue(t.services.storage.db, { userId: context.userId!, purpose: 'password_reset', ttlSeconds: 600 })).token;
    }
    if (wanted.has('verifyToken')) {
      accountCounter += 1;
      const created = await t.services.users.createUser({ email: `unverified-${accountCounter}@example.com`, name: 'Unverified', passwordHash: null, emailVerified: false });
      assert.ok(created.ok);
      context.verifyToken = (await t.services.actionTokens.issue(t.services.storage.db, { userId: created.user.id, purpose: 'email_verification', ttlSeconds: 600 })).token;
    }
    if (wants(ADMIN_REFS)) {
      const admin = await signIn('admin');
      Object.assign(context, {
        adminEmail: admin.email,
        adminId: admin.userId,
        adminSessionId: admin.session.sessionId,
        adminToken: admin.session.accessToken,
        adminRefreshToken: admin.session.refreshToken,
      });
    }
    if (wants(OAUTH_REFS)) {
      const isLink = wanted.has('oauthLinkCookie');
      const flow = await startFlow(provider, isLink, context.accessToken, wanted.has('oauthCode'));
      Object.assign(context, { [isLink ? 'oauthLinkCookie' : 'oauthCookie']: flow.cookie, oauthState: flow.state, ...(flow.code !== undefined && { oauthCode: flow.code }) });
    }
    return context;
  }

  /** Sends the requests at once, sharing one set of real values (one member session, one flow), as tabs of one browser would. */
  async function send(...specs: RequestSpec[]): Promise<void> {
    const requested = specs.map((spec) => spec.params.provider?.[1]).find((value) => PROVIDERS.some((id) => id === value));
    const provider = requested ?? PROVIDERS[specs[0]!.path.length % PROVIDERS.length]!;
    const context = await contextFor(refsIn(specs.map((spec) => [spec, profileParts(spec.profile)])), provider);
    await Promise.all(
      specs.map(async (spec) => {
        const request = buildRequest(spec, context);
        const response = await t.app.inject(request);
        assertSafeAnswer(request, response);
      }),
    );
  }

  const check = (arbitrary: fc.Arbitrary<RequestSpec>, numRuns: number, seedOffset: number) =>
    fc.assert(fc.asyncProperty(arbitrary, (spec) => send(spec)), { seed: SEED + seedOffset, numRuns: runs(numRuns), timeout: RUN_TIMEOUT_MS });

  it('finds every route in the running app, including every operation of the OpenAPI document', async () => {
    const served = new Set(operations.map((op) => `${op.method} ${op.path}`));
    assert.ok(operations.length >= 40, `only ${operations.length} operations found: is printRoutes() parsed right?\n${t.app.printRoutes({ commonPrefix: false })}`);
    for (const path of ['/', '/api/health', '/api/auth/sessions/:id', '/api/admin/users/:id/sessions/:sessionId', '/admin/users/:id/sessions/end-all', '/.well-known/jwks.json']) {
      assert.ok(operations.some((op) => op.path === path), `${path} is served`);
    }
    const document = (await t.app.inject({ method: 'GET', url: OPENAPI_PATH })).json() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(document.paths).flatMap(([path, items]) =>
      Object.keys(items).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    assert.ok(documented.length > 20);
    for (const operation of documented) assert.ok(served.has(operation), `${operation} is in the OpenAPI document but was not found among the routes`);
  });

  // Every route of every module, each a few dozen runs: minutes on a busy two-core machine, so in
  // ROUTE_SHARES tests of a share each (the routes are known once the app is up), each far from the
  // per-test timeout.
  for (let share = 0; share < ROUTE_SHARES; share++) {
    it(`answers every route, with each of its methods, without a server error or a leak (share ${share + 1} of ${ROUTE_SHARES})`, async (context) => {
      for (const [index, operation] of operations.entries()) {
        if (index % ROUTE_SHARES !== share) continue;
        await context.test(`${operation.method} ${operation.path}`, async () => {
          const method = fc.oneof({ weight: 9, arbitrary: fc.constant(operation.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) });
          const spec = fc.oneof(requestSpec(fc.constant(operation.path), method), nearlyValidSpec(operation.path, operation.method));
          await check(spec, operation.method === 'HEAD' ? 10 : 30, index);
        });
      }
    });
  }

  it('answers any method on any route', async () => {
    const paths = [...new Set(operations.map((op) => op.path))];
    const anyMethod = fc.oneof({ weight: 2, arbitrary: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) });
    const unknownPaths = fc.constantFrom('/api/auth/nope', '/api/admin', '/admin/users', '/api/auth/sessions/', '//api/auth', '/api/auth/callback', '/api/docs', '/assets/../src/app.ts', '/%2e%2e/%2e%2e/package.json', '/dev/outbox/x');
    await check(requestSpec(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...paths) }, { weight: 1, arbitrary: unknownPaths }), anyMethod), 200, 10_000);
  });

  it('answers requests sent at once with the same credentials (two tabs, a double click)', async () => {
    const one = fc.constantFrom(...operations.filter((op) => op.method !== 'HEAD')).chain((op) =>
      fc.oneof({ weight: 3, arbitrary: nearlyValidSpec(op.path, op.method) }, { weight: 1, arbitrary: requestSpec(fc.constant(op.path), fc.constant(op.method)) }),
    );
    // Often the same request twice or more, as a double click sends it.
    const batch = fc.oneof(
      fc.array(one, { minLength: 2, maxLength: 6 }),
      fc.tuple(one, fc.integer({ min: 2, max: 4 })).map(([spec, count]) => Array.from({ length: count }, () => spec)),
    );
    await fc.assert(fc.asyncProperty(batch, (specs) => send(...specs)), { seed: SEED + 15_000, numRuns: runs(100), timeout: RUN_TIMEOUT_MS });
  });

  it('answers OAuth callbacks that carry a live flow: a real state and cookie, with the rest of the query hostile', async () => {
    const callback = fc.record({
      provider: fc.constantFrom(...PROVIDERS),
      isLink: fc.boolean(),
      pairs: fc.array(
        fc.tuple(
          fc.constantFrom('code', 'state', 'iss', 'error', 'error_description', 'error_uri', 'session_state', 'scope', 'id_token', 'response'),
          fc.oneof({ weight: 2, arbitrary: fc.constantFrom(ref('oauthCode'), ref('oauthState'), AUTH_URL, 'access_denied') }, { weight: 3, arbitrary: hostileText(4_000) }),
        ),
        { maxLength: 5 },
      ),
      isStateFirst: fc.boolean(),
      isCodeGiven: fc.boolean(),
      extraCookies: fc.oneof({ weight: 3, arbitrary: fc.constant<Array<[string, string]>>([]) }, { weight: 1, arbitrary: cookies }),
    });
    await fc.assert(
      fc.asyncProperty(callback, async ({ provider, isLink, pairs, isStateFirst, isCodeGiven, extraCookies }) => {
        const query: Array<[string, string]> = [...(isCodeGiven ? [['code', ref('oauthCode')] as [string, string]] : []), ...pairs.map(([name, value]) => [name, value] as [string, string])];
        if (isStateFirst) query.unshift(['state', ref('oauthState')]);
        else query.push(['state', ref('oauthState')]);
        const spec: RequestSpec = {
          method: 'GET',
          path: '/api/auth/callback/:provider',
          params: { provider: [false, provider] },
          query,
          rawQuery: null,
          profile: isLink ? 'memberBrowser' : 'anonymous',
          isCsrfInBody: false,
          cookies: [['gatehouse.oauth', ref(isLink ? 'oauthLinkCookie' : 'oauthCookie')], ...extraCookies],
          headers: [],
          contentType: null,
          body: { kind: 'none' },
          remoteAddress: null,
        };
        await send(spec);
      }),
      { seed: SEED + 20_000, numRuns: runs(100), timeout: RUN_TIMEOUT_MS },
    );
  });

  it('signs in whatever identity a provider vouches for: hostile names, addresses and ids', async () => {
    const identity = fc.record({
      provider: fc.constantFrom(...PROVIDERS),
      id: fc.oneof(fc.integer({ min: 1 }), fc.constantFrom(0, -1, 2 ** 53, 1.5)),
      subject: hostileText(300).filter((s) => s.length > 0),
      login: hostileText(300),
      name: fc.option(hostileText(3_000), { nil: null }),
      email: fc.oneof(fc.constantFrom(ref('email'), ref('adminEmail'), 'ＦＵＺＺ＠ＥＸＡＭＰＬＥ．ＣＯＭ', 'fuzz@example.com', ' Fuzz@Example.com '), hostileText(400)),
      isVerified: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(identity, async ({ provider, id, subject, login, name, email, isVerified }) => {
        const address = resolve(email, await contextFor(refsIn(email), provider));
        if (provider === 'github') github.signInAs({ id, login, name, emails: [{ email: address, primary: true, verified: isVerified }] });
        else (provider === 'google' ? google : oidc).signInAs({ sub: subject, email: address, email_verified: isVerified, ...(name !== null && { name }) });
        const flow = await startFlow(provider, false, undefined, true);
        const request = {
          method: 'GET',
          url: `/api/auth/callback/${provider}?${new URLSearchParams({ code: flow.code ?? '', state: flow.state })}`,
          headers: { cookie: `gatehouse.oauth=${flow.cookie}` },
        };
        const response = await t.app.inject(request);
        assertSafeAnswer(request, response);
        // Whoever signed in, every page of theirs must render.
        const session = response.cookies.find((c) => c.name === 'gatehouse.session');
        if (session !== undefined) {
          for (const url of ['/', '/dashboard', '/api/auth/session', '/api/auth/accounts', '/auth/signin']) {
            const page = { method: 'GET', url, headers: { cookie: `gatehouse.session=${session.value}` } };
            assertSafeAnswer(page, await t.app.inject(page));
          }
        }
      }),
      { seed: SEED + 30_000, numRuns: runs(40), timeout: RUN_TIMEOUT_MS },
    );
  });

  it('is still up and healthy afterwards, with no error escaped from any request', async () => {
    const health = await t.app.inject({ method: 'GET', url: '/api/health' });
    assert.equal(health.statusCode, 200, health.body);
    assert.deepEqual(health.json(), { status: 'ok' });
    assert.deepEqual(escaped, []);
  });
});
