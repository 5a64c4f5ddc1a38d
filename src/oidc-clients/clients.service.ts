/**
 * The registry of the OAuth 2.0 / OpenID Connect clients the OpenID Provider serves: register,
 * list, show, rotate a secret, change a name or redirect URIs, delete; and the provider's view of
 * one client (`providerMetadata`).
 *
 * A confidential client gets a secret of 256 random bits, returned once by `create` and by
 * `rotateSecret` and never stored: the row keeps its SHA-256 (hex). A fast hash is enough for a
 * secret that random (nothing to guess); the provider checks a presented secret with
 * `clientSecretMatches` (constant time). Rotating replaces the hash, so the old secret stops
 * working at once. A confidential client may instead name its public keys (`jwksUri`): it then
 * authenticates with a JWT it signs (private_key_jwt) and has no secret at all. Every change is audited (the domain events `oidc_client.*`) in the transaction
 * of the change, with the client's id and name, never its secret.
 *
 * Expected outcomes are values: `{ ok: false, … }` or null; only the HTTP boundary (and the CLI)
 * turn them into errors.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { SYSTEM_SOURCE, type AuditService, type AuditSource } from '../audit/audit.service.ts';
import { CLIENT_ORIGINS, checkBackchannelLogoutUri, checkClientInput, TOKEN_EXCHANGE_GRANT, checkOpenRegistration, checkName, checkRedirectUris, isNativeApp, type ClientInput, type ClientOrigin, type ClientProblem, type GrantType, type IdTokenAlg } from './client-rules.ts';
import * as store from './clients.store.ts';
import { hashClientSecret, newClientId, newClientSecret } from './client-credentials.ts';
import { checkExchangeChange, exchangePolicyOf, recordTokenExchange, type TokenExchanged } from './exchange-policy.ts';

/** A registered client, as the registry shows it: never its secret or the secret's hash. */
export interface OidcClient {
  /** The client_id. */
  id: string;
  name: string;
  /** No secret: authenticates with nothing at the token endpoint (PKCE protects the code). */
  isPublic: boolean;
  /** One of ours: the provider may skip the consent screen for it. */
  isFirstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: GrantType[];
  idTokenSignedResponseAlg: IdTokenAlg;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
  /** When the secret was last rotated; null if never (or public). */
  secretRotatedAt: number | null;
  /** Where logout tokens go when a person signed in to it signs out (OpenID Back-Channel Logout 1.0); null: none. */
  backchannelLogoutUri: string | null;
  /** How it came (see ClientOrigin). */
  origin: ClientOrigin;
  /** When the provider last issued it a code or token (epoch ms, to the hour: RECORD_USE_EVERY_MS); null: never. */
  lastUsedAt: number | null;
  /** The APIs it may exchange a person's access token for (RFC 8693); empty: none. */
  exchangeResources: string[];
  /** Its token requests must carry a DPoP proof: its tokens are all bound to its key (RFC 9449). */
  dpopBoundAccessTokens: boolean;
  /** Where its public keys are: it authenticates with them (private_key_jwt) and has no secret; null: a secret, or none (public). */
  jwksUri: string | null;
}


/** A client's last use is written at most this often (a busy client does not write on every token). */
export const RECORD_USE_EVERY_MS = 60 * 60_000;

export type { ClientInput, ClientProblem, GrantType, IdTokenAlg } from './client-rules.ts';
export { CLIENT_ORIGINS, type ClientOrigin } from './client-rules.ts';

/** Registering a client: the client and, for a confidential one, its secret (this once). */
export type CreateClientResult =
  | { ok: true; client: OidcClient; clientSecret?: string }
  | { ok: false; reason: 'INVALID_CLIENT'; problems: ClientProblem[] };

/** A dynamic registration: as `create`, or refused because open mode's cap is reached. */
export type RegisterClientResult = CreateClientResult | { ok: false; reason: 'REGISTRATION_FULL' };

export type RotateSecretResult =
  | { ok: true; client: OidcClient; clientSecret: string }
  | { ok: false; reason: 'NOT_FOUND' | 'PUBLIC_CLIENT' | 'KEY_CLIENT' };

export interface ClientChanges {
  name?: string;
  redirectUris?: readonly string[];
  postLogoutRedirectUris?: readonly string[];
  /** Null or empty: none any more. */
  backchannelLogoutUri?: string | null;
  /** The exchange policy, replaced whole; empty: no exchange. */
  exchangeResources?: readonly string[];
}

export type UpdateClientResult =
  | { ok: true; client: OidcClient }
  | { ok: false; reason: 'NOT_FOUND' }
  | { ok: false; reason: 'INVALID_CLIENT'; problems: ClientProblem[] };

export { clientSecretMatches, hashClientSecret, newClientId, newClientSecret } from './client-credentials.ts';

function parseList(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function toClient(row: store.ClientRow): OidcClient {
  return {
    id: row.id,
    name: row.name,
    isPublic: Number(row.public) === 1,
    isFirstParty: Number(row.first_party) === 1,
    redirectUris: parseList(row.redirect_uris),
    postLogoutRedirectUris: parseList(row.post_logout_redirect_uris),
    grantTypes: parseList(row.grant_types) as GrantType[],
    idTokenSignedResponseAlg: row.id_token_signed_response_alg as IdTokenAlg,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    secretRotatedAt: row.secret_rotated_at,
    backchannelLogoutUri: row.backchannel_logout_uri ?? null,
    origin: (CLIENT_ORIGINS as readonly string[]).includes(row.origin) ? (row.origin as ClientOrigin) : 'admin',
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    exchangeResources: parseList(row.exchange_resources ?? '[]'),
    dpopBoundAccessTokens: Number(row.dpop_bound_access_tokens ?? 0) === 1,
    jwksUri: row.jwks_uri ?? null,
  };
}

/** The origin of a client registered by `source` (an admin's request, or the command line). */
const originOf = (source: AuditSource): ClientOrigin => (source.via === 'cli' ? 'cli' : 'admin');

/** Ids are ours and short: a longer one names no client (and is never looked up). */
const MAX_ID_LENGTH = 64;
const isPlausibleId = (id: string) => id.length > 0 && id.length <= MAX_ID_LENGTH;

export type OidcClientsService = ReturnType<typeof createOidcClientsService>;

export function createOidcClientsService(deps: { db: Db; clock: Clock; audit: AuditService; isPostgres: boolean }) {
  const { db, clock, audit, isPostgres } = deps;
  /** Per instance: when each client's use was last written, so a busy client costs no query at all in between. */
  const usesWritten = new Map<string, number>();
  const USES_REMEMBERED = 10_000;

  async function findRow(id: string, on: Db = db): Promise<store.ClientRow | undefined> {
    return isPlausibleId(id) ? store.findClient(on, id) : undefined;
  }

  /** Checks and stores a client with these credentials (a public one keeps no secret); audited. */
  async function insert(
    input: ClientInput,
    credentials: { clientId: string; clientSecret: string | undefined },
    source: AuditSource,
    origin: ClientOrigin,
    /** The most clients of this origin there may be (open registration's cap). */
    maxOfOrigin?: number,
  ): Promise<RegisterClientResult> {
    const checked = checkClientInput(input);
    const problems = [...(checked.ok ? [] : checked.problems), ...(origin === 'open_registration' ? checkOpenRegistration(input) : [])];
    if (!checked.ok || problems.length > 0) return { ok: false, reason: 'INVALID_CLIENT', problems };
    const { settings } = checked;
    const now = clock();
    // A client with keys proves itself with them: it gets no secret (a registration's is dropped).
    const hasSecret = !settings.isPublic && settings.jwksUri === null;
    const clientSecret = hasSecret ? credentials.clientSecret : undefined;
    if (hasSecret && clientSecret === undefined) throw new Error('a confidential client needs a secret or keys');
    const row: store.ClientRow = {
      id: credentials.clientId,
      name: settings.name,
      secret_hash: clientSecret === undefined ? null : hashClientSecret(clientSecret),
      redirect_uris: JSON.stringify(settings.redirectUris),
      post_logout_redirect_uris: JSON.stringify(settings.postLogoutRedirectUris),
      grant_types: JSON.stringify(settings.grantTypes),
      public: settings.isPublic ? 1 : 0,
      first_party: settings.isFirstParty ? 1 : 0,
      id_token_signed_response_alg: settings.idTokenSignedResponseAlg,
      backchannel_logout_uri: settings.backchannelLogoutUri,
      created_at: now,
      updated_at: now,
      secret_rotated_at: null,
      origin,
      last_used_at: null,
      exchange_resources: JSON.stringify(settings.exchangeResources),
      dpop_bound_access_tokens: settings.dpopBoundAccessTokens ? 1 : 0,
      jwks_uri: settings.jwksUri,
    };
    const isFull = await db.transaction().execute(async (trx) => {
      if (maxOfOrigin !== undefined) {
        if (isPostgres) await store.lockRegistrations(trx);
        if ((await store.countClientsByOrigin(trx, origin)) >= maxOfOrigin) return true;
      }
      await store.insertClient(trx, row);
      await audit.record(
        {
          type: 'oidc_client.created',
          source,
          details: { clientId: row.id, name: row.name, public: settings.isPublic, firstParty: settings.isFirstParty, grantTypes: settings.grantTypes, origin },
        },
        { db: trx },
      );
      return false;
    });
    if (isFull) return { ok: false, reason: 'REGISTRATION_FULL' };
    const client = toClient(row);
    return clientSecret === undefined ? { ok: true, client } : { ok: true, client, clientSecret };
  }

  return {
    /** Registers a client after every rule in client-rules.ts; a confidential one gets its secret, this once. */
    async create(input: ClientInput, source: AuditSource): Promise<CreateClientResult> {
      return (await insert(input, { clientId: newClientId(), clientSecret: newClientSecret() }, source, originOf(source))) as CreateClientResult;
    },

    /**
     * Registers a client whose id and secret the OpenID Provider made (dynamic registration,
     * RFC 7591, which answers the secret itself), after the same rules; never first-party. In open
     * mode (`open`) also under checkOpenRegistration's rules, and refused (REGISTRATION_FULL) when
     * `open.maxClients` self-registered clients exist already.
     */
    async createRegistered(
      input: Omit<ClientInput, 'isFirstParty' | 'exchangeResources'>,
      credentials: { clientId: string; clientSecret: string | undefined },
      source: AuditSource,
      open?: { maxClients: number },
    ): Promise<RegisterClientResult> {
      if (!isPlausibleId(credentials.clientId)) throw new Error('a registered client id must be one of ours (newClientId)');
      return open === undefined
        ? insert({ ...input, isFirstParty: false, exchangeResources: [] }, credentials, source, 'registration')
        : insert({ ...input, isFirstParty: false, exchangeResources: [] }, credentials, source, 'open_registration', open.maxClients);
    },

    /**
     * Notes that the provider issued the client a code or token now. Written at most once per
     * RECORD_USE_EVERY_MS per client: skipped without a query when this instance wrote it within
     * that time, and the update itself does nothing when another instance did.
     */
    async recordUse(id: string): Promise<void> {
      if (!isPlausibleId(id)) return;
      const now = clock();
      const written = usesWritten.get(id);
      if (written !== undefined && now - written < RECORD_USE_EVERY_MS && now >= written) return;
      await store.recordClientUse(db, id, now, now - RECORD_USE_EVERY_MS);
      if (usesWritten.size >= USES_REMEMBERED) usesWritten.clear();
      usesWritten.set(id, now);
    },

    /**
     * Deletes up to `limit` clients that registered themselves in open mode before `createdBefore`
     * and were never used, each as `delete` does, audited `oidc_client.expired`; how many.
     */
    async expireUnused(createdBefore: number, limit: number): Promise<number> {
      let expired = 0;
      for (const candidate of await store.listUnusedClients(db, 'open_registration', createdBefore, limit)) {
        const isDeleted = await db.transaction().execute(async (trx) => {
          // Still unused now: a use recorded since the search keeps it.
          const row = await findRow(candidate.id, trx);
          if (row === undefined || row.last_used_at !== null || !(await store.deleteClient(trx, row.id))) return false;
          await audit.record({ type: 'oidc_client.expired', source: SYSTEM_SOURCE, reason: 'NEVER_USED', details: { clientId: row.id, name: row.name, origin: row.origin } }, { db: trx });
          return true;
        });
        if (isDeleted) {
          expired += 1;
          usesWritten.delete(candidate.id);
        }
      }
      return expired;
    },

    /** The APIs the client may exchange a person's token for (exchange-policy.ts); empty for an unknown client or one that may not. */
    async exchangePolicy(id: string): Promise<string[]> {
      const row = await findRow(id);
      return row === undefined ? [] : exchangePolicyOf(toClient(row));
    },

    /** Audits a token exchange (`oidc_client.token_exchanged`, about the person). */
    async recordExchange(exchanged: TokenExchanged, source: AuditSource = SYSTEM_SOURCE): Promise<void> {
      await recordTokenExchange(audit, exchanged, source);
    },

    /** Every client, newest first. */
    async list(): Promise<OidcClient[]> {
      return (await store.listClients(db)).map(toClient);
    },

    async show(id: string): Promise<OidcClient | null> {
      const row = await findRow(id);
      return row === undefined ? null : toClient(row);
    },

    /** Whether the client is one of ours (the provider may skip consent); false for an unknown one. */
    async isFirstParty(id: string): Promise<boolean> {
      const row = await findRow(id);
      return row !== undefined && Number(row.first_party) === 1;
    },

    /** A new secret for a confidential client: the old one stops working at once. */
    async rotateSecret(id: string, source: AuditSource): Promise<RotateSecretResult> {
      const clientSecret = newClientSecret();
      return db.transaction().execute(async (trx): Promise<RotateSecretResult> => {
        const row = await findRow(id, trx);
        if (row === undefined) return { ok: false, reason: 'NOT_FOUND' };
        if (Number(row.public) === 1) return { ok: false, reason: 'PUBLIC_CLIENT' };
        if (row.jwks_uri !== null) return { ok: false, reason: 'KEY_CLIENT' };
        const now = clock();
        if (!(await store.replaceSecret(trx, id, hashClientSecret(clientSecret), now))) return { ok: false, reason: 'NOT_FOUND' };
        await audit.record({ type: 'oidc_client.secret_rotated', source, details: { clientId: id, name: row.name } }, { db: trx });
        return { ok: true, client: toClient({ ...row, updated_at: now, secret_rotated_at: now }), clientSecret };
      });
    },

    /**
     * Changes the name or the redirect URIs (each list replaced whole), under the same rules as
     * registering. The type, grant types and algorithm stay: register a new client to change those.
     */
    async update(id: string, changes: ClientChanges, source: AuditSource): Promise<UpdateClientResult> {
      return db.transaction().execute(async (trx): Promise<UpdateClientResult> => {
        const row = await findRow(id, trx);
        if (row === undefined) return { ok: false, reason: 'NOT_FOUND' };
        const current = toClient(row);
        const problems: ClientProblem[] = [];
        const set: store.ClientChangeColumns = {};
        if (changes.name !== undefined) {
          const name = checkName(changes.name);
          if (name.ok) set.name = name.name;
          else problems.push(name.problem);
        }
        // Both lists are checked together: a custom scheme in one makes the client a native app for both.
        const redirectUris = changes.redirectUris ?? current.redirectUris;
        const postLogoutRedirectUris = changes.postLogoutRedirectUris ?? current.postLogoutRedirectUris;
        const isNative = isNativeApp(current.isPublic, redirectUris, postLogoutRedirectUris);
        const redirect = checkRedirectUris('redirectUris', redirectUris, current.isPublic, isNative);
        const postLogout = checkRedirectUris('postLogoutRedirectUris', postLogoutRedirectUris, current.isPublic, isNative);
        if (current.grantTypes.includes('authorization_code') && redirect.uris.length === 0) {
          problems.push({ field: 'redirectUris', reason: 'REDIRECT_URI_REQUIRED', message: 'must list at least one redirect URI for the authorization_code grant' });
        }
        problems.push(...redirect.problems, ...postLogout.problems);
        if (changes.backchannelLogoutUri !== undefined) {
          const backchannel = checkBackchannelLogoutUri(changes.backchannelLogoutUri);
          if (backchannel.ok) set.backchannel_logout_uri = backchannel.uri;
          else problems.push(backchannel.problem);
        }
        if (changes.exchangeResources !== undefined) {
          const exchange = checkExchangeChange(changes.exchangeResources, current);
          problems.push(...exchange.problems);
          set.exchange_resources = JSON.stringify(exchange.resources);
        }
        if (problems.length > 0) return { ok: false, reason: 'INVALID_CLIENT', problems };
        if (changes.redirectUris !== undefined) set.redirect_uris = JSON.stringify(redirect.uris);
        if (changes.postLogoutRedirectUris !== undefined) set.post_logout_redirect_uris = JSON.stringify(postLogout.uris);
        const changed = Object.keys(set).filter((key) => set[key as keyof typeof set] !== row[key as keyof typeof set]);
        if (changed.length === 0) return { ok: true, client: current };
        const now = clock();
        if (!(await store.updateClient(trx, id, set, now))) return { ok: false, reason: 'NOT_FOUND' };
        const fields = changed.map((key) => ({ name: 'name', redirect_uris: 'redirectUris', post_logout_redirect_uris: 'postLogoutRedirectUris', backchannel_logout_uri: 'backchannelLogoutUri', exchange_resources: 'exchangeResources' })[key]);
        await audit.record({ type: 'oidc_client.updated', source, details: { clientId: id, name: set.name ?? row.name, fields } }, { db: trx });
        return { ok: true, client: toClient({ ...row, ...set, updated_at: now }) };
      });
    },

    /** Removes the client; false when there was none. Subscribers to `oidc_client.deleted` end what it was granted. */
    async delete(id: string, source: AuditSource): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const row = await findRow(id, trx);
        if (row === undefined || !(await store.deleteClient(trx, id))) return false;
        await audit.record({ type: 'oidc_client.deleted', source, details: { clientId: id, name: row.name } }, { db: trx });
        return true;
      });
    },

    /**
     * The client as oidc-provider reads client metadata (its `findClient`), or undefined for an
     * unknown id. `client_secret` is the SHA-256 of the secret: the provider must compare a
     * presented secret with `clientSecretMatches`, never as plain text, and must not use it as a
     * key (no client_secret_jwt, no HS256). A public client that registered a custom-scheme URI is
     * a native app (`application_type: 'native'`), which is what lets the provider accept it.
     */
    async providerMetadata(clientId: string): Promise<Record<string, unknown> | undefined> {
      const row = await findRow(clientId);
      if (row === undefined) return undefined;
      const client = toClient(row);
      const isNative = isNativeApp(client.isPublic, client.redirectUris, client.postLogoutRedirectUris);
      return {
        client_id: client.id,
        client_name: client.name,
        ...(!client.isPublic && row.secret_hash !== null && { client_secret: row.secret_hash }),
        token_endpoint_auth_method: client.isPublic ? 'none' : client.jwksUri !== null ? 'private_key_jwt' : 'client_secret_basic',
        ...(client.jwksUri !== null && { jwks_uri: client.jwksUri }),
        ...(isNative && { application_type: 'native' }),
        redirect_uris: client.redirectUris,
        post_logout_redirect_uris: client.postLogoutRedirectUris,
        ...(client.backchannelLogoutUri !== null && { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true }),
        // Token exchange is allowed by the policy, not asked for: any other client is refused it (unauthorized_client).
        grant_types: exchangePolicyOf(client).length > 0 ? [...client.grantTypes, TOKEN_EXCHANGE_GRANT] : client.grantTypes,
        response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
        id_token_signed_response_alg: client.idTokenSignedResponseAlg,
        ...(client.dpopBoundAccessTokens && { dpop_bound_access_tokens: true }),
      };
    },
  };
}
