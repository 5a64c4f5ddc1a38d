/**
 * `BENCH_ONLY=oidc`: the OpenID Provider's token endpoint (`POST /oidc/token`) with each grant an
 * app uses, and token introspection (`POST /oidc/token/introspection`), on one server, beside
 * baselines measured on the same core in interleaved rounds: Gatehouse's own refresh
 * (`POST /api/auth/refresh`) for the provider's refresh grant, bare Fastify answering the code
 * exchange's JSON to the same form post for the others.
 *
 * Clients are registered through the admin API, as an operator would (docs/clients.md): a
 * confidential first-party web app (authorization code with PKCE, refresh tokens) and a machine
 * client (client credentials). Every measured request is a real success:
 * - authorization codes work once and live 60 s: before each round (unmeasured) as many are made
 *   through the real authorization flow (a signed-in browser: /oidc/auth, the interaction, back to
 *   the redirect URI) as the previous run's rate fills a round with, and the round runs by count;
 * - refresh tokens rotate: each use spends the token and returns the next. Each connection
 *   refreshes a chain of its own, sending the token the previous answer returned; before each run
 *   a fresh grant per connection (the chains of the last run died with its requests in flight).
 *   Gatehouse's own refresh is driven the same way, from a sign-in per connection;
 * - introspection answers 200 for a dead token too (`active: false`): every answer is checked;
 * - token exchange (RFC 8693, issue 38 part 6): an agent client (client credentials, allowed to
 *   exchange for a second API) exchanges a person's access token for the first API, from the web
 *   app's code flow, into a narrower one for the second. The subject token is not spent, so every
 *   request sends the same one; each answer is a new signed JWT and an audit event.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Request as AutocannonRequest, Result } from 'autocannon';
import { inParallel, postJson, ratio, sizedAmount, type App, type Gatehouse, type LoadSpec } from './harness.ts';
import { compare, describeServer, gatehouse, measureRuns, pathTarget, result, startBare, withApps, type Context, type NamedSubject, type ScenarioResult, type Target } from './scenarios.ts';

/** An API tokens may be bound to (OIDC_PROVIDER_RESOURCES); nothing listens there, it is only named in tokens. */
const API = 'http://127.0.0.1:1/api';
/** The API an agent exchanges a person's token for API for (token exchange). */
const API_B = 'http://127.0.0.1:1/api-b';
const API_SCOPE = 'read:items';
const REDIRECT_URI = 'http://127.0.0.1:1/callback';
const OIDC_ENV = { OIDC_PROVIDER_RESOURCES: `${API}=${API_SCOPE}, ${API_B}=${API_SCOPE}` };
const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const FORM = 'application/x-www-form-urlencoded';
/** Codes in the first warm-up run, before any rate is known. */
const FIRST_WARMUP_CODES = 300;
/** Authorization flows in flight while codes are made: one signed-in browser each. */
const PREPARE_CONCURRENCY = 8;
const MAX_REDIRECTS = 10;

interface RegisteredClient {
  clientId: string;
  clientSecret: string;
}

const basic = (client: RegisteredClient) => `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`;
const base64url = (bytes: Buffer) => bytes.toString('base64url');

async function registerClient(server: Gatehouse, adminToken: string, input: Record<string, unknown>): Promise<RegisteredClient> {
  const answer = await postJson(`${server.url}/api/admin/clients`, input, adminToken);
  const client = answer.body.client as { clientId?: unknown } | undefined;
  if (answer.status !== 201 || typeof client?.clientId !== 'string' || typeof answer.body.clientSecret !== 'string') {
    throw new Error(`client not registered: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return { clientId: client.clientId, clientSecret: answer.body.clientSecret };
}

/** A browser signed in to Gatehouse: its cookies (by name; one flow at a time), kept across redirects. */
class SignedInBrowser {
  readonly #cookies = new Map<string, string>();
  readonly #origin: string;

  constructor(origin: string) {
    this.#origin = origin;
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.#cookies.size > 0) headers.set('cookie', [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(new URL(path, this.#origin), { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(';', 1)[0]!;
      const name = pair.slice(0, pair.indexOf('=')).trim();
      const value = pair.slice(pair.indexOf('=') + 1).trim();
      if (value === '' || /max-age=0/i.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
    return response;
  }

  static async signIn(server: Gatehouse): Promise<SignedInBrowser> {
    const browser = new SignedInBrowser(server.url);
    const response = await browser.fetch('/api/auth/signin', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(server.store.admin) });
    if (response.status !== 200) throw new Error(`browser sign-in failed: ${response.status} ${await response.text()}`);
    return browser;
  }

  /**
   * An authorization request of `client` followed through the provider (the signed-in session and
   * a first-party client need no page) back to the redirect URI: the code and its PKCE verifier.
   */
  async authorize(client: RegisteredClient, scope: string, resource?: string): Promise<{ code: string; verifier: string }> {
    const verifier = base64url(randomBytes(32));
    const query = new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope,
      state: base64url(randomBytes(16)),
      nonce: base64url(randomBytes(16)),
      code_challenge: base64url(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
      // OpenID Connect Core 11: offline_access (a refresh token) only with prompt=consent.
      ...(scope.includes('offline_access') && { prompt: 'consent' }),
      ...(resource !== undefined && { resource }),
    });
    let url = new URL(`/oidc/auth?${query}`, this.#origin);
    for (let hop = 0; hop < MAX_REDIRECTS; hop++) {
      const response = await this.fetch(url.pathname + url.search);
      const location = response.headers.get('location') ?? response.headers.get('refresh')?.replace(/^\d+;\s*url=/i, '') ?? null;
      const text = await response.text();
      if (location === null) throw new Error(`the authorization flow stopped at ${url.pathname}: ${response.status} ${text.slice(0, 200)}`);
      url = new URL(location, url);
      if (url.origin !== this.#origin) {
        const code = url.searchParams.get('code');
        if (code === null) throw new Error(`the authorization flow ended without a code: ${url.search}`);
        return { code, verifier };
      }
    }
    throw new Error(`more than ${MAX_REDIRECTS} redirects in the authorization flow`);
  }
}

async function tokenRequest(server: Gatehouse, client: RegisteredClient, form: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/oidc/token`, { method: 'POST', headers: { 'content-type': FORM, authorization: basic(client) }, body: new URLSearchParams(form) });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200) throw new Error(`token request (${form.grant_type}) failed: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

const codeExchangeForm = (code: string, verifier: string) => new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier }).toString();

/**
 * A load of chained single-use tokens: each connection sends the token the previous answer on it
 * returned. `start` (before each run) makes one first token per connection. A broken chain
 * (an answer without a token) sends a spent token next, which fails and is counted.
 */
function chainedLoad(spec: Omit<LoadSpec, 'requests'>, bodyFor: (token: string) => string, nextToken: (answer: Record<string, unknown>) => unknown, start: () => Promise<string[]>) {
  let ready: string[] = [];
  let lastSent = 'none';
  const request: AutocannonRequest = {
    setupRequest: (params) => {
      lastSent = ready.shift() ?? lastSent;
      return { ...params, body: bodyFor(lastSent) };
    },
    onResponse: (status, body) => {
      if (status !== 200) return;
      const token = nextToken(JSON.parse(body) as Record<string, unknown>);
      if (typeof token === 'string') ready.push(token);
    },
  };
  return {
    spec: { ...spec, requests: [request] } satisfies LoadSpec,
    prepare: async () => {
      ready = await start();
    },
  };
}

export async function oidcScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nOpenID Provider: POST /oidc/token (code exchange, refresh, client credentials, token exchange) and introspection vs bare Fastify; refresh vs Gatehouse\'s own\n');
  const apps: App[] = [];
  return withApps(apps, async () => {
    const connections = ctx.settings.connections;
    const server = await gatehouse(ctx, 'oidc', { database: 'sqlite', strategy: 'database', env: OIDC_ENV });
    apps.push(server);
    const admin = await postJson(`${server.url}/api/auth`, server.store.admin);
    const adminToken = String(admin.body.token);
    const web = await registerClient(server, adminToken, { name: 'Bench web app', redirectUris: [REDIRECT_URI], firstParty: true });
    const machine = await registerClient(server, adminToken, { name: 'Bench service', grantTypes: ['client_credentials'] });
    const agent = await registerClient(server, adminToken, { name: 'Bench agent', grantTypes: ['client_credentials'], exchangeResources: [API_B] });
    const browsers = await inParallel(PREPARE_CONCURRENCY, PREPARE_CONCURRENCY, () => SignedInBrowser.signIn(server));

    // One exchange by hand: its answer is what the bare app answers, its access token what is introspected.
    const first = await browsers[0]!.authorize(web, 'openid email');
    const exchanged = await tokenRequest(server, web, { grant_type: 'authorization_code', code: first.code, redirect_uri: REDIRECT_URI, code_verifier: first.verifier });
    // A person's access token for API (a JWT from the code flow with `resource`): the subject token
    // the agent exchanges. It lives OIDC_PROVIDER_ACCESS_TOKEN_TTL (10 minutes), longer than the runs.
    const forApi = await browsers[0]!.authorize(web, `openid ${API_SCOPE}`, API);
    const personToken = String((await tokenRequest(server, web, { grant_type: 'authorization_code', code: forApi.code, redirect_uri: REDIRECT_URI, code_verifier: forApi.verifier, resource: API })).access_token);
    const exchangeForm = new URLSearchParams({ grant_type: TOKEN_EXCHANGE_GRANT, subject_token: personToken, subject_token_type: ACCESS_TOKEN_TYPE, resource: API_B, scope: API_SCOPE }).toString();
    const exchangedOnce = await tokenRequest(server, agent, Object.fromEntries(new URLSearchParams(exchangeForm)));
    if (exchangedOnce.issued_token_type !== ACCESS_TOKEN_TYPE) throw new Error(`token exchange answered ${JSON.stringify(exchangedOnce)}`);
    const bare = await startBare(ctx, { '/oidc/token': exchanged });
    apps.push(bare);

    const tokenUrl = `${server.url}/oidc/token`;
    const clientHeaders = (client: RegisteredClient) => ({ 'content-type': FORM, authorization: basic(client) });
    /** A load of token requests by `client`, each shaped by `request`. */
    const tokenLoad = (client: RegisteredClient, request: AutocannonRequest): LoadSpec => ({ url: tokenUrl, method: 'POST', headers: clientHeaders(client), connections, requests: [request] });

    // Authorization code exchange: a pool of fresh codes per run, used once each.
    let codes: { code: string; verifier: string }[] = [];
    let sent = 0;
    const exchange = tokenLoad(web, {
      setupRequest: (params) => {
        const { code, verifier } = codes[sent++]!;
        return { ...params, body: codeExchangeForm(code, verifier) };
      },
    });
    const prepareCodes = async (previous: Result | null) => {
      const wanted = sizedAmount(previous, ctx.settings, FIRST_WARMUP_CODES, connections);
      codes = await inParallel(wanted, PREPARE_CONCURRENCY, (_, lane) => browsers[lane]!.authorize(web, 'openid email'));
      sent = 0;
      exchange.amount = codes.length;
    };

    // Refresh token grant: a chain per connection, each from a grant of its own with offline_access.
    const providerRefresh = chainedLoad(
      { url: tokenUrl, method: 'POST', headers: clientHeaders(web), connections },
      (token) => new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }).toString(),
      (answer) => answer.refresh_token,
      () =>
        inParallel(connections, PREPARE_CONCURRENCY, async (_, lane) => {
          const grant = await browsers[lane]!.authorize(web, 'openid offline_access');
          const tokens = await tokenRequest(server, web, { grant_type: 'authorization_code', code: grant.code, redirect_uri: REDIRECT_URI, code_verifier: grant.verifier });
          return String(tokens.refresh_token);
        }),
    );
    // Gatehouse's own refresh (the baseline of the one above): a chain per connection from a sign-in each.
    const ownRefresh = chainedLoad(
      { url: `${server.url}/api/auth/refresh`, method: 'POST', headers: { 'content-type': 'application/json' }, connections },
      (token) => JSON.stringify({ refreshToken: token }),
      (answer) => answer.refreshToken,
      () => inParallel(connections, PREPARE_CONCURRENCY, async () => String((await postJson(`${server.url}/api/auth`, server.store.admin)).body.refreshToken)),
    );

    // Introspection answers 200 whatever the token's state: count the answers that are not `active: true`.
    let inactive = 0;
    const introspection: LoadSpec = {
      url: `${server.url}/oidc/token/introspection`,
      method: 'POST',
      headers: clientHeaders(web),
      connections,
      requests: [
        {
          body: new URLSearchParams({ token: String(exchanged.access_token) }).toString(),
          onResponse: (status, body) => {
            if (status === 200 && !body.includes('"active":true')) inactive++;
          },
        },
      ],
    };
    const clientCredentials: LoadSpec = {
      url: tokenUrl,
      method: 'POST',
      headers: clientHeaders(machine),
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: API_SCOPE, resource: API }).toString(),
      connections,
    };
    // Every answer a 200 with an access token for API_B: a 200 without one would be counted.
    let notExchanged = 0;
    const tokenExchange = tokenLoad(agent, {
      body: exchangeForm,
      onResponse: (status, body) => {
        if (status === 200 && !body.includes(`"issued_token_type":"${ACCESS_TOKEN_TYPE}"`)) notExchanged++;
      },
    });
    const bareSpec: LoadSpec = { url: `${bare.url}/oidc/token`, method: 'POST', headers: clientHeaders(web), body: codeExchangeForm(first.code, first.verifier), connections };

    const service = describeServer(server.options);
    const subjects: NamedSubject[] = [
      { app: server, spec: exchange, prepare: prepareCodes, name: 'oidc-code', label: 'token: authorization code exchange (PKCE)', server: service, isService: true },
      { app: server, ...providerRefresh, name: 'oidc-refresh', label: 'token: refresh token grant (rotation)', server: service, isService: true },
      { app: server, spec: clientCredentials, name: 'oidc-client-credentials', label: 'token: client credentials (JWT for an API)', server: service, isService: true },
      { app: server, spec: introspection, name: 'oidc-introspection', label: 'introspection of an access token', server: service, isService: true },
      { app: server, spec: tokenExchange, name: 'oidc-token-exchange', label: 'token: token exchange (RFC 8693, an agent for a person)', server: service, isService: true },
      { app: server, ...ownRefresh, name: 'gatehouse-refresh', label: 'Gatehouse POST /api/auth/refresh (rotation)', server: service, isService: true },
      { app: bare, spec: bareSpec, name: 'bare', label: 'bare fastify, same form post, code-exchange JSON', server: 'bare fastify', isService: false },
    ];
    const runs = await measureRuns(ctx, subjects);
    const byName = (name: string) => runs.find((run) => run.name === name)!;
    const bareRun = byName('bare');
    compare([byName('oidc-code'), byName('oidc-client-credentials'), byName('oidc-introspection'), byName('oidc-token-exchange'), byName('gatehouse-refresh')], bareRun);
    compare([byName('oidc-refresh')], byName('gatehouse-refresh'));

    const targets: Target[] = [
      pathTarget('oidc:code', 'the token endpoint, authorization code exchange', byName('oidc-code')),
      pathTarget('oidc:refresh', 'the token endpoint, refresh token grant', byName('oidc-refresh'), `; ${ratio(byName('oidc-refresh').requestsPerSecond, bareRun.requestsPerSecond)} × bare Fastify`),
      pathTarget('oidc:client-credentials', 'the token endpoint, client credentials grant', byName('oidc-client-credentials')),
      pathTarget('oidc:introspection', 'token introspection', byName('oidc-introspection'), `; ${inactive} answers not active`, inactive),
      pathTarget('oidc:token-exchange', 'the token endpoint, token exchange (RFC 8693; issue 38)', byName('oidc-token-exchange'), `; ${ratio(byName('oidc-token-exchange').requestsPerSecond, byName('oidc-client-credentials').requestsPerSecond)} × client credentials; ${notExchanged} answers without a token`, notExchanged),
    ];
    const notes = [
      `One server answers every row, pinned to the server core; the rows take turns round by round with their baselines. Clients were registered through the admin API: a confidential first-party web app (authorization code with PKCE and refresh tokens; client_secret_basic) and a machine client (client credentials, with \`resource\` ${API}, so its token is an RFC 9068 JWT). Introspection is of an opaque access token from a code exchange, by the web app. Token exchange: a third client (client credentials, \`exchangeResources\` ${API_B}) exchanges the web app's access token for ${API} (a JWT, from a code flow with \`resource\`) for one for ${API_B}, scope ${API_SCOPE}; each answer is a new signed JWT and an audited event.`,
      `Codes are single-use and live 60 s: before each run of the exchange row (unmeasured), as many are made through the real authorization flow (a signed-in browser, ${PREPARE_CONCURRENCY} flows in flight; a first-party client has no consent page) as the previous run's rate fills a round with, and that run is by count. Refresh tokens rotate on every use: each of the ${connections} connections refreshes its own chain, sending the token the previous answer returned; each run starts from fresh grants (offline_access), or for Gatehouse's own refresh from fresh sign-ins.`,
      'Baselines: the provider\'s refresh grant is divided by Gatehouse\'s own refresh (the same work for a session: spend one token, issue the next); the other rows by bare Fastify answering the code exchange\'s JSON to the same form post (one baseline for the four).',
    ];
    return result(ctx, 'oidc', 'OpenID Provider: token endpoint and introspection (SQLite, database strategy, 1 worker)', runs, targets, { notes });
  });
}
