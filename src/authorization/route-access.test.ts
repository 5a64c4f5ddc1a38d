/**
 * Access lives on the route (issue 31): every route of the real app declares who may call it; the
 * start refuses a route that declares nothing, or names a requirement or an exemption no module
 * enforces; and the one hook decides exactly what the old route guard, access policies, admin-only
 * hooks and hand-written handler checks decided, over the route table and the hostile spellings of
 * the route-guard, fuzz and MFA-policy suites, for callers in every state that matters.
 *
 * The old decisions come from a frozen copy (test/helpers/legacy-access.ts). Accepted differences,
 * by design of the redesign:
 * - a refusal now comes before body validation and the CSRF check (the hook runs on onRequest);
 *   the old handlers checked the session after both. The oracle states the old *access* decision,
 *   and the probes send a body no route parses (415 once past the hook), so no handler runs.
 * - a path no route serves (404) meets only the prefix rules, no module policy: the old policies
 *   ran on every request with a session, routed or not (a user who must enrol was sent to
 *   enrolment from a 404 page).
 * - the refusals listed in `ACCEPTED` below, refused as before but shown by the route's own page.
 * Only the access outcome is compared: a 401 or 403 with an access code, or a 303 to sign-in, to
 * enrolment or to a page with an access code in its `error`; every other answer counts as "let
 * through" (the handler's own answer).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createUser, testEnv } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { totpCode } from '../../test/helpers/totp.ts';
import { legacyAccess, legacyRouteGuard, SIGNED_OUT, type LegacyOutcome, type LegacyUser } from '../../test/helpers/legacy-access.ts';
import { loadConfig, migrateToLatest, MODULES } from '../modules.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { createServices, type Services } from '../services.ts';
import { buildApp } from '../app.ts';
import { defineModule, type GatehouseModule } from '../module.ts';
import type { Env } from '../config.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { access } from './access.ts';

const PASSWORD = 'correct horse battery staple';
/** Listed in MFA_REQUIRED_ROLES: an ADMIN who also holds it is an ADMIN under MFA_REQUIRED_ROLES=ADMIN, and one server holds both kinds of ADMIN. */
const REQUIRED_ROLE = 'AUDITOR';
const REAUTH_WINDOW_MS = 10 * 60_000;
const ENV: Env = { MFA_REQUIRED_ROLES: REQUIRED_ROLE, REAUTH_WINDOW: '600' };
/** A body no route parses: the hook has answered (or not) before Fastify refuses it with 415. */
const PROBE_TYPE = 'application/x-gatehouse-access-probe';
/** Which route pattern a request reached (set by the probe module below), empty for none. */
const ROUTE_HEADER = 'x-probe-route';
const ACCESS_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'STEP_UP_REQUIRED', 'REAUTH_REQUIRED', 'MFA_ENROLLMENT_REQUIRED']);
const MFA_ENROLMENT_PAGE = '/dashboard#mfa-heading';
const SIGN_IN_PAGE = '/auth/signin';

// Hostile spellings. app.inject resolves dot segments and backslashes before the app sees them (as
// a browser would; route-guard.test.ts sends them raw): the oracle is asked about what the app
// received. From src/authorization/route-guard.test.ts:
const ADMIN_PAGES = ['/admin', '/Admin', '/ADMIN', '/%61dmin', '/admin/.', '//admin', '/./admin', '/dashboard/../admin', '/admin;x', '/admin/users'];
const ADMIN_APIS = ['/api/admin/users', '/api/Admin/users', '/API/ADMIN/users', '/api/%61dmin/users', '/api/admin/./users', '//api//admin/users', '/api/./admin/users', '/api/auth/../admin/users', '/api/admin;x/users', '/api/admin/users/.'];
const USER_PAGES = ['/dashboard', '/dashboard/x', '/Dashboard'];
const USER_APIS = ['/api/things', '/api', '/api/auth/../things'];
const PUBLIC = ['/', '/auth/signin', '/api/health', '/api/auth/csrf', '/api/docs/openapi.json', '/.well-known/jwks.json', '/api/ad%00min/users'];
// From src/app.fuzz.test.ts (its unknown paths, and the raw parameter values it puts in paths):
const UNKNOWN_PATHS = ['/api/auth/nope', '/api/admin', '/admin/users', '/api/auth/sessions/', '//api/auth', '/api/auth/callback', '/api/docs', '/assets/../src/app.ts', '/%2e%2e/%2e%2e/package.json', '/dev/outbox/x'];
const RAW_PARAMS = ['%', '%zz', '%C0%80', '%ED%A0%80', '%FF', '%2F', '%2f..%2f', '..', '.', '%2e%2e', '', '%00', '%252F', ';', '*', '%20', '+', '~', '%u0041'];
// From the MFA policy's tests (main: src/mfa/mfa-policy.test.ts): an exempt prefix that resolves elsewhere.
const ESCAPING_EXEMPT = ['/api/auth/mfa/../../admin/users', '/api/auth/mfa/%2e%2e/%2e%2e/admin/users', '/api/auth/mfa/..%2F..%2Fadmin/users'];
const HOSTILE_PATHS = [...ADMIN_PAGES, ...ADMIN_APIS, ...USER_PAGES, ...USER_APIS, ...PUBLIC, ...UNKNOWN_PATHS, ...ESCAPING_EXEMPT];
const HOSTILE_METHODS = ['GET', 'POST', 'PATCH', 'DELETE'];

/** A value for each kind of path parameter, plausible but matching nothing stored. */
const PLAUSIBLE: Record<string, string> = { provider: 'github', name: 'probe.css' };
const plausible = (name: string) => PLAUSIBLE[name] ?? 'probe-1';

/** Tells which route each request reached: what the old handlers checked depended on it. */
const routeProbe: GatehouseModule = defineModule({
  name: 'route-probe',
  routes: [
    {
      scope: 'api',
      async register(app) {
        // Before the hijacking routes (the OpenID Provider's bridge) send their headers; and on
        // every answer the hook or an error ended.
        app.addHook('onRequest', (request, reply, done) => {
          void reply.header(ROUTE_HEADER, request.routeOptions.url ?? '');
          done();
        });
        app.addHook('onSend', (request, reply, payload, done) => {
          if (!reply.hasHeader(ROUTE_HEADER)) void reply.header(ROUTE_HEADER, request.routeOptions.url ?? '');
          done(null, payload);
        });
      },
    },
  ],
});

interface Built {
  readonly database: TestDatabase;
  readonly storage: Storage;
  readonly dataDir: string;
  readonly env: Env;
}

async function prepare(env: Env): Promise<Built> {
  const database = await createSqliteDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-access-'));
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database, env) });
  const storage = openStorage(config.database);
  await migrateToLatest(storage.db);
  return { database, storage, dataDir, env };
}

async function release(built: Built): Promise<void> {
  await built.storage.close();
  await built.database.drop();
  rmSync(built.dataDir, { recursive: true, force: true });
}

async function servicesFor(built: Built, modules: readonly GatehouseModule[], clock?: ReturnType<typeof fakeClock>): Promise<Services> {
  const config = loadConfig({ DATA_DIR: built.dataDir, ...testEnv(built.database, built.env) });
  return createServices({ config, storage: built.storage, modules, ...(clock && { clock }) });
}

/** Builds the app with `modules` added, expecting the start to stop; the error it stopped with. */
async function startRefusal(built: Built, extra: GatehouseModule): Promise<Error> {
  const services = await servicesFor(built, [...MODULES, extra]);
  try {
    const app = await buildApp(services);
    await app.close();
  } catch (error) {
    await services.stop();
    return error as Error;
  }
  assert.fail('the app started');
}

// ---------------------------------------------------------------------------------------------
// Callers
// ---------------------------------------------------------------------------------------------

interface CallerSpec {
  readonly name: string;
  readonly roles?: readonly string[];
  /** A second factor this session did not use, or used (a step-up). */
  readonly factor?: 'unused' | 'used';
  /** Signed in (or stepped up) longer ago than REAUTH_WINDOW. */
  readonly isStale?: boolean;
}

const CALLERS: readonly CallerSpec[] = [
  { name: 'no session' },
  { name: 'a user', roles: [] },
  { name: 'a user signed in before REAUTH_WINDOW', roles: [], isStale: true },
  { name: 'a user with a factor this session did not use', roles: [], factor: 'unused' },
  { name: 'a user who used their factor recently', roles: [], factor: 'used' },
  { name: 'an ADMIN', roles: [ADMIN_ROLE] },
  { name: 'an ADMIN signed in before REAUTH_WINDOW', roles: [ADMIN_ROLE], isStale: true },
  { name: 'an ADMIN with a factor this session did not use', roles: [ADMIN_ROLE], factor: 'unused' },
  { name: 'an ADMIN who used their factor recently', roles: [ADMIN_ROLE], factor: 'used' },
  { name: 'a MFA_REQUIRED_ROLES holder without a factor', roles: [REQUIRED_ROLE] },
  { name: 'an ADMIN under MFA_REQUIRED_ROLES without a factor', roles: [ADMIN_ROLE, REQUIRED_ROLE] },
  { name: 'an ADMIN under MFA_REQUIRED_ROLES whose session did not use their factor', roles: [ADMIN_ROLE, REQUIRED_ROLE], factor: 'unused' },
  { name: 'an ADMIN under MFA_REQUIRED_ROLES who used their factor recently', roles: [ADMIN_ROLE, REQUIRED_ROLE], factor: 'used' },
  { name: 'an ADMIN under MFA_REQUIRED_ROLES who used their factor before REAUTH_WINDOW', roles: [ADMIN_ROLE, REQUIRED_ROLE], factor: 'used', isStale: true },
];

/** The callers the raw parameter spellings are tried with (fewer: there are many spellings). */
const RAW_PARAM_CALLERS = new Set(['no session', 'a user', 'an ADMIN', 'a user with a factor this session did not use', 'an ADMIN under MFA_REQUIRED_ROLES without a factor', 'an ADMIN under MFA_REQUIRED_ROLES whose session did not use their factor']);

interface Caller {
  readonly name: string;
  readonly token: string | null;
  readonly facts: LegacyUser;
}

function factsOf(spec: CallerSpec): LegacyUser {
  if (spec.roles === undefined) return SIGNED_OUT;
  return {
    signedIn: true,
    roles: spec.roles,
    hasSecondFactor: spec.factor !== undefined,
    usedSecondFactor: spec.factor === 'used',
    usedSecondFactorRecently: spec.factor === 'used' && spec.isStale !== true,
    signedInRecently: spec.isStale !== true,
    mfaRequiredRole: spec.roles.includes(REQUIRED_ROLE),
  };
}

/** A user with `spec`'s roles, a session and (with `factor`) an authenticator app. */
async function makeCaller(services: Services, clock: () => number, spec: CallerSpec, index: number): Promise<Caller> {
  if (spec.roles === undefined) return { name: spec.name, token: null, facts: SIGNED_OUT };
  const user = await createUser(services, { email: `caller${index}@example.com`, password: PASSWORD, roles: [...spec.roles] });
  // Signed in before the factor existed: the session did not use it.
  const session = await services.sessions.startSession({ userId: user.id, roles: spec.roles, verifiedPasswordHash: null, amr: ['pwd'], ip: null, userAgent: null });
  assert.ok(session !== null);
  if (spec.factor !== undefined) {
    const setup = await services.mfa.beginTotpSetup(user);
    assert.ok(setup.ok);
    const enabled = await services.mfa.enableTotp(user, totpCode(setup.secret, clock()), { actorUserId: user.id, ip: null, userAgent: null });
    assert.ok(enabled.ok);
  }
  if (spec.factor === 'used') {
    const auth = await services.sessions.authenticate(session.accessToken);
    assert.ok(auth !== null && (await services.sessions.reauthenticate(auth, ['otp', 'mfa'])) !== null);
  }
  return { name: spec.name, token: session.accessToken, facts: factsOf(spec) };
}

// ---------------------------------------------------------------------------------------------
// Asking the app, and comparing
// ---------------------------------------------------------------------------------------------

type Outcome = LegacyOutcome;
const ALLOW: Outcome = { kind: 'allow' };

/** What light-my-request delivers for `url` (it resolves dot segments and backslashes, as a browser would). */
function sentUrl(url: string): string {
  const parsed = new URL(url.startsWith('//') ? `http://localhost${url}` : url, 'http://localhost');
  return parsed.pathname + parsed.search;
}

/** The access outcome of an answer; anything but an access refusal counts as let through. */
function outcomeOf(response: LightMyRequestResponse): Outcome {
  const { statusCode: status } = response;
  if (status === 302 || status === 303) {
    const location = String(response.headers.location ?? '');
    // The hook's: to sign-in (coming back to a page), to enrolment, or a route's own page for a
    // refusal (`?error=REAUTH_REQUIRED`). A handler's own (sign-in with `error=MFA_EXPIRED`, say)
    // is its answer, not an access decision.
    const error = new URL(location, 'http://localhost').searchParams.get('error');
    const isAccess =
      location === SIGN_IN_PAGE || location.startsWith(`${SIGN_IN_PAGE}?callbackUrl=`) || location === MFA_ENROLMENT_PAGE || (error !== null && ACCESS_CODES.has(error));
    return isAccess ? { kind: 'redirect', location } : ALLOW;
  }
  if (status !== 401 && status !== 403) return ALLOW;
  const type = String(response.headers['content-type'] ?? '');
  const isPage = type.includes('text/html');
  const code = isPage ? /<p class="code">[\s\S]*?<code>([^<]+)<\/code>/.exec(response.body)?.[1] : (response.json() as { error?: string }).error;
  // The handler's own refusal (CSRF_FAILED, an organization's role…): not an access decision.
  if (code === undefined || !ACCESS_CODES.has(code)) return ALLOW;
  return { kind: 'refused', status, code, as: isPage ? 'page' : 'json' };
}

/** The oracle's answer, as the comparison sees it: the floor's 400 for an unreadable path is no access outcome. */
function comparable(outcome: Outcome): Outcome {
  return outcome.kind === 'refused' && outcome.status === 400 ? ALLOW : outcome;
}

function show(outcome: Outcome): string {
  if (outcome.kind === 'allow') return 'let through';
  if (outcome.kind === 'redirect') return `303 ${outcome.location}`;
  return `${outcome.status} ${outcome.code} (${outcome.as})`;
}

interface Probe {
  readonly method: string;
  readonly url: string;
}

async function ask(app: FastifyInstance, probe: Probe, caller: Caller): Promise<{ outcome: Outcome; route: string | null }> {
  const headers: Record<string, string> = {};
  if (caller.token !== null) headers.authorization = `Bearer ${caller.token}`;
  const hasBody = probe.method !== 'GET' && probe.method !== 'HEAD';
  if (hasBody) headers['content-type'] = PROBE_TYPE;
  const response = await app.inject({ method: probe.method as 'GET', url: probe.url, headers, ...(hasBody && { payload: 'probe' }) });
  const route = response.headers[ROUTE_HEADER];
  return { outcome: outcomeOf(response), route: typeof route === 'string' && route !== '' ? route : null };
}

/** Every disagreement between the old decisions and the app's, one line each. */
async function disagreements(app: FastifyInstance, probes: readonly Probe[], callers: readonly Caller[]): Promise<string[]> {
  const found: string[] = [];
  for (const probe of probes) {
    for (const caller of callers) {
      const { outcome, route } = await ask(app, probe, caller);
      const request = { method: probe.method, url: sentUrl(probe.url), route };
      // A path no route serves meets the prefix rules only (accepted difference, see above).
      const expected = comparable(route === null ? legacyRouteGuard(request, caller.facts) : legacyAccess(request, caller.facts));
      if (show(expected) !== show(outcome) && !isAccepted(probe, route, show(expected), show(outcome))) {
        found.push(`${probe.method} ${probe.url} (route ${route ?? 'none'}) for ${caller.name}: old ${show(expected)}, new ${show(outcome)}`);
      }
    }
  }
  return found;
}

/**
 * The refusals that changed only in how they are shown (the request is refused either way, with the
 * same or a more precise code), each accepted by name: a refusal by a route's requirement is now
 * shown by the route's own form error handling, where the old step-up policy, which knew nothing
 * of the route, showed the generic 403 page.
 * - the dashboard's authenticator-app forms: the forms' error page ("sign in again first", 403
 *   REAUTH_REQUIRED) instead of the generic 403 page;
 * - the dashboard's passkey forms: the forms' refusal (back to the dashboard with
 *   `?error=REAUTH_REQUIRED`, or 403 REAUTH_REQUIRED as JSON) instead of the generic 403 page;
 * - the account deletion form: back to the form with `?error=REAUTH_REQUIRED` (as its own check
 *   already did for a form post) instead of the generic 403 page or a JSON 403.
 * And one by design: a hostile path parameter (`%2f..%2f`) on a route reachable during enrolment
 * reaches that route's handler (which reads it as a parameter, nothing more), where the old path
 * lists read the resolved path as outside the exempt prefix.
 */
/** Modules added after the oracle was frozen (their routes' access is tested by their own suites). */
const MODULES_SINCE_THE_ORACLE: ReadonlySet<string> = new Set(['api-keys', 'data-export', 'sso']);

const ACCEPTED: readonly { route: string; methods: readonly string[]; old: RegExp; now: RegExp }[] = [
  { route: '/dashboard/mfa/totp/setup', methods: ['POST'], old: /^403 FORBIDDEN \(page\)$/, now: /^403 REAUTH_REQUIRED \(page\)$/ },
  { route: '/dashboard/mfa/totp/enable', methods: ['POST'], old: /^403 FORBIDDEN \(page\)$/, now: /^403 REAUTH_REQUIRED \(page\)$/ },
  { route: '/dashboard/passkeys/rename', methods: ['POST'], old: /^403 FORBIDDEN \(page\)$/, now: /^403 REAUTH_REQUIRED \(json\)$/ },
  { route: '/dashboard/passkeys/remove', methods: ['POST'], old: /^403 FORBIDDEN \(page\)$/, now: /^403 REAUTH_REQUIRED \(json\)$/ },
  { route: '/dashboard/account/delete', methods: ['POST'], old: /^403 (FORBIDDEN \(page\)|REAUTH_REQUIRED \(json\))$/, now: /^303 \/dashboard\/account\/delete\?error=REAUTH_REQUIRED$/ },
  ...['/api/auth/passkeys/:id', '/api/auth/signin/:provider', '/api/auth/callback/:provider'].map((route) => ({
    route,
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    old: /^403 MFA_ENROLLMENT_REQUIRED \(json\)$/,
    now: /^let through$/,
  })),
  // Routes the oracle predates, whose changes require a recent second factor of their own (module scim).
  ...['/api/organizations/:id/scim-tokens', '/api/organizations/:id/scim-tokens/:tokenId/rotate', '/api/organizations/:id/scim-role-mappings', '/api/admin/organizations/:id/scim-tokens', '/api/admin/organizations/:id/scim-tokens/:tokenId/rotate'].map((route) => ({
    route,
    methods: ['POST', 'PUT'],
    old: /^let through$/,
    now: /^403 REAUTH_REQUIRED \(json\)$/,
  })),
  // The SCIM section's forms on the organization page (module scim), newer than the oracle, which
  // let any path through that no route served: signed in, and a recent second factor to make a token.
  ...['/organizations/:id/scim-tokens', '/organizations/:id/scim-tokens/rotate', '/organizations/:id/scim-tokens/revoke'].map((route) => ({
    route,
    methods: ['POST'],
    old: /^let through$/,
    now: /^(303 \/auth\/signin\?callbackUrl=\/organizations\/\S*|403 FORBIDDEN \(page\))$/,
  })),
];

function isAccepted(probe: Probe, route: string | null, old: string, now: string): boolean {
  return ACCEPTED.some((entry) => entry.route === route && entry.methods.includes(probe.method) && entry.old.test(old) && entry.now.test(now));
}

function report(found: readonly string[], limit = 150): string {
  const shown = found.slice(0, limit).join('\n  ');
  return `${found.length} disagreement(s):\n  ${shown}${found.length > limit ? `\n  … and ${found.length - limit} more` : ''}`;
}

/** `url` with each `:param` (and a trailing `*`) given `value(name)`. */
function fill(url: string, value: (name: string) => string): string {
  return url.replace(/:(\w+)/g, (_, name: string) => value(name)).replace(/\*$/, 'probe');
}

// ---------------------------------------------------------------------------------------------

describe('access declared on every route, decided as before', () => {
  const clock = fakeClock();
  let built: Built;
  let services: Services;
  let app: FastifyInstance;
  const callers: Caller[] = [];

  before(async () => {
    built = await prepare(ENV);
    // The probe module first: its hooks then see every route the others register. Modules built
    // after the oracle was frozen are left out: their routes have no old decision to compare with.
    services = await servicesFor(built, [routeProbe, ...MODULES.filter((module) => !MODULES_SINCE_THE_ORACLE.has(module.name))], clock);
    app = await buildApp(services);
    // The stale sessions first, then the clock moves past REAUTH_WINDOW, then the fresh ones.
    const specs = CALLERS.map((spec, index) => ({ spec, index }));
    const made = new Map<number, Caller>();
    for (const { spec, index } of specs.filter(({ spec }) => spec.isStale === true)) made.set(index, await makeCaller(services, clock, spec, index));
    clock.advance(REAUTH_WINDOW_MS + 60_000);
    for (const { spec, index } of specs.filter(({ spec }) => spec.isStale !== true)) made.set(index, await makeCaller(services, clock, spec, index));
    callers.push(...specs.map(({ index }) => made.get(index)!));
  });
  after(async () => {
    await app?.close();
    if (built !== undefined) await release(built);
  });

  it('has a declaration on every route (HEAD is the GET route’s twin)', () => {
    const undeclared = app.routeAccess.filter((route) => route.method !== 'HEAD' && route.access === undefined).map((route) => `${route.method} ${route.url}`);
    assert.equal(undeclared.length, 0, `${undeclared.length} route(s) declare no access:\n  ${undeclared.join('\n  ')}`);
  });

  it('decides every route as the old guard, policies and handlers did, for every caller', async () => {
    const probes = app.routeAccess.filter((route) => route.method !== 'HEAD').map((route) => ({ method: route.method, url: fill(route.url, plausible) }));
    assert.ok(probes.length > 150, `the route table: ${probes.length} routes`);
    const found = await disagreements(app, probes, callers);
    assert.equal(found.length, 0, report(found));
  });

  it('decides the hostile spellings of the route-guard, fuzz and MFA-policy suites as before', async () => {
    const probes = HOSTILE_PATHS.flatMap((url) => HOSTILE_METHODS.map((method) => ({ method, url })));
    const found = await disagreements(app, probes, callers);
    assert.equal(found.length, 0, report(found));
  });

  it('decides every route with hostile path parameters as before', async () => {
    const probes = app.routeAccess
      .filter((route) => route.method !== 'HEAD' && route.url.includes(':'))
      .flatMap((route) => RAW_PARAMS.map((raw) => ({ method: route.method, url: fill(route.url, () => raw) })));
    const found = await disagreements(app, probes, callers.filter((caller) => RAW_PARAM_CALLERS.has(caller.name)));
    assert.equal(found.length, 0, report(found));
  });

  it('left every caller as it was built (no probe reached a handler that changes state)', async () => {
    for (const caller of callers) {
      if (caller.token === null) continue;
      const auth = await services.sessions.authenticate(caller.token);
      assert.ok(auth !== null, `${caller.name}: the session still lives`);
      assert.equal(auth.amr.includes('mfa'), caller.facts.usedSecondFactor, caller.name);
      assert.equal((await services.mfa.methodsOf(auth.userId)).length > 0, caller.facts.hasSecondFactor, caller.name);
    }
  });
});

describe('the start refuses a route whose access is missing or unknown', () => {
  let built: Built;
  before(async () => {
    built = await prepare({});
  });
  after(async () => {
    if (built !== undefined) await release(built);
  });

  it('stops on a route that declares nothing, naming its method and path', async () => {
    const undeclared = defineModule({
      name: 'undeclared-routes',
      routes: [
        { scope: 'api', register: async (app) => void app.get('/probe/undeclared', async () => ({ ok: true })) },
        { scope: 'browser', register: async (app) => void app.post('/probe/undeclared-form', async () => ({ ok: true })) },
      ],
    });
    const error = await startRefusal(built, undeclared);
    assert.match(error.message, /GET \/probe\/undeclared declares no access/);
    assert.match(error.message, /POST \/probe\/undeclared-form declares no access/);
  });

  it('stops on a route that requires what no module enforces, or is exempt from what no policy names', async () => {
    const unknown = defineModule({
      name: 'unknown-names',
      routes: [
        {
          scope: 'api',
          async register(app) {
            app.post('/probe/unknown-requirement', { config: { access: access.user({ requires: ['no-such-requirement'] }) } }, async () => ({ ok: true }));
            app.get('/probe/unknown-exemption', { config: { access: access.anyone({ exempt: ['no-such-exemption'] }) } }, async () => ({ ok: true }));
          },
        },
      ],
    });
    const error = await startRefusal(built, unknown);
    assert.match(error.message, /POST \/probe\/unknown-requirement requires "no-such-requirement", which no module enforces/);
    assert.match(error.message, /GET \/probe\/unknown-exemption is exempt from "no-such-exemption"/);
  });
});
