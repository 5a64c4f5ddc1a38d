/**
 * The SSO module's service: connections (sso-connections.ts), the SAML service provider
 * (saml-sp.ts), the OIDC relying party (oidc-rp.ts), sign-in with what they assert (sso-signin.ts),
 * discovery by the address's verified domain, and the enforcement rule.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { SYSTEM_SOURCE, type AuditService, type AuditSource } from '../audit/audit.service.ts';
import type { UserService } from '../users/user.service.ts';
import type { SignInPipeline } from '../signin/signin-pipeline.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { randomSecret, sha256Base64url } from '../lib/random.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import type { TargetPolicy } from '../http/outbound/target-rules.ts';
import { createDocumentFetch } from '../http/outbound/fetcher.ts';
import { createSsoConnections } from './sso-connections.ts';
import { createSamlServiceProvider, REQUEST_TTL_MS, type SamlFailure } from './saml-sp.ts';
import { claimsIdentity, createOidcRelyingParty, oidcRedirectUri } from './oidc-rp.ts';
import { createSsoSignIn, type SsoSignInResult, type VerifiedDomainLookup } from './sso-signin.ts';
import { createSecretSeal } from './sso-secrets.ts';
import { createSsoSetup } from './sso-setup.service.ts';
import * as store from './sso.store.ts';
import * as setupStore from './sso-setup.store.ts';
import type { AssertedIdentity, Connection } from './sso.model.ts';

export type { SsoSignInResult, VerifiedDomainLookup };

/** A sign-in sent to the IdP: where to, and for OIDC the browser binding to keep in a cookie. */
export type StartResult = { ok: true; url: string; browserBinding: string | null } | { ok: false; reason: 'SSO_CONNECTION_NOT_FOUND' | 'SSO_IDP_UNREACHABLE' | 'SSO_IDP_ADDRESS_REFUSED' };

interface OidcFlow {
  kind: 'oidc';
  codeVerifier: string;
  nonce: string;
  callbackUrl: string;
  browser: string;
  /** A setup link's test sign-in (sso-setup.service.ts): shown, never signed in. */
  testId?: string;
}

/** A response that answered a setup link's test sign-in: what it asserted is kept for the link's page; nobody is signed in. */
export interface SetupTestAnswered {
  ok: false;
  reason: 'SSO_SETUP_TEST';
  testId: string;
}

/** What a test sign-in showed (kept in `sso_setup_tests.result`). */
export type SetupTestOutcome =
  | { ok: true; subject: string; email: string | null; name: string | null; groups: string[]; attributeNames: string[] }
  | { ok: false; reason: string };

export function createSsoService(deps: {
  db: Db;
  clock: Clock;
  authUrl: string;
  authSecret: string;
  audit: AuditService;
  users: UserService;
  organizations: OrganizationsService;
  pipeline: SignInPipeline;
  policy: TargetPolicy;
  allowHttp: boolean;
  domains: () => VerifiedDomainLookup | null;
}) {
  const { db, clock, authUrl } = deps;
  const fetch = createDocumentFetch({ policy: deps.policy, maxBytes: 256 * 1024, userAgent: 'Gatehouse-SSO/1.0' });
  const connections = createSsoConnections({
    db,
    clock,
    authUrl,
    audit: deps.audit,
    seal: createSecretSeal(deps.authSecret),
    policy: deps.policy,
    fetch,
    organizationExists: async (id) => (await deps.organizations.get(id, OPERATOR)) !== null,
  });
  const saml = createSamlServiceProvider({ db, authUrl, clock });
  // The provider's discovery, keys and token endpoint: the same outbound rules, POST allowed (the token request).
  const oidcFetch = createDocumentFetch({ policy: deps.policy, maxBytes: 256 * 1024, timeoutMs: 10_000, methods: ['GET', 'POST'], userAgent: 'Gatehouse-SSO/1.0' });
  const oidc = createOidcRelyingParty({ authUrl, clock, allowHttp: deps.allowHttp, fetch: oidcFetch });
  const signIn = createSsoSignIn({ db, clock, users: deps.users, audit: deps.audit, organizations: deps.organizations, pipeline: deps.pipeline, domains: deps.domains });

  /**
   * Keeps what a test sign-in's answer said, for the setup link's page, and audits it (the outcome,
   * never the attributes). No account is looked up, made or linked; no session starts.
   */
  async function answerTest(connection: Connection, testId: string, outcome: SetupTestOutcome, source: AuditSource): Promise<SetupTestAnswered> {
    await setupStore.recordTestResult(db, testId, connection.id, JSON.stringify(outcome), clock());
    await deps.audit.record({ type: 'sso.setup_test_completed', userId: null, source, ...(!outcome.ok && { reason: outcome.reason }), details: { connectionId: connection.id, organizationId: connection.organizationId, protocol: connection.protocol, ok: outcome.ok } });
    return { ok: false, reason: 'SSO_SETUP_TEST', testId };
  }

  function testOutcome(identity: AssertedIdentity, attributeNames: string[]): SetupTestOutcome {
    return { ok: true, subject: identity.subject, email: identity.email, name: identity.name, groups: identity.groups, attributeNames };
  }

  function samlIdentity(connection: Connection, nameId: string, attributes: Record<string, string[]>): AssertedIdentity {
    const { mapping } = connection.settings;
    const email = attributes[mapping.email]?.[0] ?? (nameId.includes('@') ? nameId : null);
    return { subject: nameId, email, emailAsserted: email !== null, name: attributes[mapping.name]?.[0] ?? null, groups: attributes[mapping.groups] ?? [] };
  }

  /** The connection that serves an address: its domain verified for an organization that has one. */
  async function connectionForEmail(email: string): Promise<Connection | null> {
    const found = await deps.domains()?.findVerifiedForEmail(email);
    if (found === null || found === undefined) return null;
    const candidates = await connections.list(found.organizationId);
    return candidates.find((connection) => connection.enforce) ?? candidates[0] ?? null;
  }

  return {
    connections,

    /** Setup links for an organization's IT admin (sso-setup.service.ts). */
    setup: createSsoSetup({ db, clock, audit: deps.audit, organizations: deps.organizations, connections, authUrl }),

    /** SP metadata for a SAML connection; null when there is no such SAML connection. */
    async spMetadata(connectionId: string): Promise<string | null> {
      const connection = await connections.get(connectionId);
      const full = connection === null ? null : await connections.samlConnection(connection);
      return full === null ? null : saml.metadata(full);
    },

    /**
     * Sends a sign-in to the connection's IdP; `callbackUrl` is already a safe path of ours. With
     * `testId` (a setup link's test, sso-setup.service.ts) the answer is shown, not signed in.
     */
    async start(connectionId: string, callbackUrl: string, source: AuditSource = SYSTEM_SOURCE, testId: string | null = null): Promise<StartResult> {
      const connection = await connections.get(connectionId);
      if (connection === null) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
      if (connection.protocol === 'saml') {
        const full = await connections.samlConnection(connection);
        if (full === null) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
        return { ok: true, url: await saml.authorizeUrl(full, callbackUrl, testId), browserBinding: null };
      }
      const rp = await connections.oidcConnection(connection);
      if (rp === null) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
      const started = await oidc.start(rp);
      if (!started.ok && started.reason === 'IDP_ADDRESS_REFUSED') {
        // An issuer (or an endpoint its discovery names) on an address the outbound rules refuse: the operator must see why.
        await signIn.refuse(connection, 'SSO_IDP_ADDRESS_REFUSED', source);
        return { ok: false, reason: 'SSO_IDP_ADDRESS_REFUSED' };
      }
      if (!started.ok) return { ok: false, reason: 'SSO_IDP_UNREACHABLE' };
      const browserBinding = randomSecret();
      const flow: OidcFlow = { kind: 'oidc', codeVerifier: started.checks.codeVerifier, nonce: started.checks.nonce, callbackUrl, browser: sha256Base64url(browserBinding), ...(testId !== null && { testId }) };
      await store.insertRequest(db, { id: sha256Base64url(started.checks.state), connection_id: connection.id, data: JSON.stringify(flow), expires_at: clock() + REQUEST_TTL_MS });
      return { ok: true, url: started.url, browserBinding };
    },

    /** A SAML response POSTed to this connection's ACS URL. */
    async completeSaml(connectionId: string, samlResponse: string, source: AuditSource): Promise<SsoSignInResult | SetupTestAnswered | { ok: false; reason: 'SSO_CONNECTION_NOT_FOUND' }> {
      const connection = await connections.get(connectionId);
      const full = connection === null ? null : await connections.samlConnection(connection);
      if (connection === null || full === null) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
      const result = await saml.validate(full, samlResponse);
      // The answer to a test sign-in (its InResponseTo names a test's request): shown, never signed in.
      if (typeof result.testId === 'string') {
        const outcome: SetupTestOutcome = result.ok ? testOutcome(samlIdentity(connection, result.assertion.nameId, result.assertion.attributes), Object.keys(result.assertion.attributes)) : { ok: false, reason: samlReason(result.reason) };
        return answerTest(connection, result.testId, outcome, source);
      }
      if (!result.ok) return signIn.refuse(connection, samlReason(result.reason), source);
      return signIn.signIn(connection, samlIdentity(connection, result.assertion.nameId, result.assertion.attributes), source);
    },

    /** An OIDC provider's answer at this connection's callback: the query, and the browser binding from its cookie. */
    async completeOidc(connectionId: string, query: string, browserBinding: string | undefined, source: AuditSource): Promise<{ result: SsoSignInResult | SetupTestAnswered | { ok: false; reason: 'SSO_CONNECTION_NOT_FOUND' }; callbackUrl: string | null }> {
      const connection = await connections.get(connectionId);
      const rp = connection === null ? null : await connections.oidcConnection(connection);
      if (connection === null || rp === null) return { result: { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' }, callbackUrl: null };
      const state = new URLSearchParams(query).get('state') ?? '';
      const key = sha256Base64url(state);
      const row = state.length === 0 ? undefined : await store.findRequest(db, connection.id, key, clock());
      const flow = row === undefined ? null : (JSON.parse(row.data) as OidcFlow);
      // Used once, and only by the browser that started it (login CSRF).
      if (flow === null || !(await store.takeRequest(db, connection.id, key, clock())) || browserBinding === undefined || sha256Base64url(browserBinding) !== flow.browser) {
        return { result: await signIn.refuse(connection, 'SSO_INVALID_STATE', source), callbackUrl: null };
      }
      const answered = await oidc.complete(rp, new URL(`${oidcRedirectUri(authUrl, connection.id)}?${query}`), { state, codeVerifier: flow.codeVerifier, nonce: flow.nonce });
      if (flow.testId !== undefined) {
        const outcome: SetupTestOutcome = answered.ok ? testOutcome(claimsIdentity(answered.claims, connection.settings.mapping), Object.keys(answered.claims)) : { ok: false, reason: `SSO_${answered.reason}` };
        return { result: await answerTest(connection, flow.testId, outcome, source), callbackUrl: null };
      }
      if (!answered.ok) return { result: await signIn.refuse(connection, `SSO_${answered.reason}`, source), callbackUrl: null };
      return { result: await signIn.signIn(connection, claimsIdentity(answered.claims, connection.settings.mapping), source), callbackUrl: flow.callbackUrl };
    },

    connectionForEmail,

    /** Whether an address must sign in through its organization's IdP (a connection that enforces). */
    async isEnforcedFor(email: string): Promise<boolean> {
      const connection = await connectionForEmail(email);
      return connection !== null && connection.enforce;
    },

    /** The identities an account is linked to at the IdPs (its data export): the connection and the IdP's subject. */
    async identitiesOf(userId: string): Promise<Array<{ connectionId: string; subject: string; createdAt: string }>> {
      return (await store.listIdentitiesOf(db, userId)).map((row) => ({ connectionId: row.connection_id, subject: row.subject, createdAt: new Date(Number(row.created_at)).toISOString() }));
    },
  };
}

function samlReason(reason: SamlFailure): string {
  return `SSO_${reason}`;
}

export type SsoService = ReturnType<typeof createSsoService>;
