/**
 * oidc-provider's storage adapter over Gatehouse's database (`oidc_payloads`, oidc.store.ts), so
 * provider state survives restarts and is shared by every instance. The provider asks for one
 * adapter per model name; every model but `Client` lives in the one table, keyed by (model, id).
 *
 * The behaviour copies the provider's own memory adapter (lib/adapters/memory_adapter.js), which
 * is the reference for what the provider expects:
 * - A row lives `expiresIn` seconds (plus the provider's `clockTolerance`, when given) from its
 *   upsert; `find` answers undefined from that instant on, whether or not housekeeping has deleted
 *   it yet. No `expiresIn`: it never expires.
 * - An upsert replaces the payload whole and makes it unused again.
 * - `consume` leaves the row in place; later finds return it with `consumed` (epoch seconds), which
 *   is how the provider detects a reused code or refresh token.
 * - `revokeByGrantId`, called on any one model's adapter, removes the grant's rows of every model
 *   the memory adapter indexes by grant (the tokens and codes in GRANT_MODELS). An Interaction also
 *   carries `grantId` but is not one of them; the Grant row itself is destroyed by the provider
 *   on its own.
 * - `consume` of a missing id does nothing (the memory adapter throws a TypeError there).
 *
 * `Client` is not stored here: clients are Gatehouse's, read through a ClientSource. Dynamic
 * registration would write them through this adapter, which is refused until it is wired.
 */
import { createHash } from 'node:crypto';
import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import {
  consumeOidcPayload,
  deleteOidcPayloadsByGrantId,
  destroyOidcPayload,
  findOidcPayload,
  findOidcPayloadByUid,
  findOidcPayloadByUserCode,
  upsertOidcPayload,
  type OidcPayloadRow,
} from './oidc.store.ts';

/** Where the provider's `Client` model reads client metadata (snake_case, as registered). */
export interface ClientSource {
  find(clientId: string): Promise<Record<string, unknown> | undefined>;
  /** A client registered through the provider (RFC 7591); throws the provider's error when refused. Absent: refused. */
  register?(clientId: string, metadata: Record<string, unknown>): Promise<void>;
}

export interface AdapterDeps {
  db: Db;
  clock: Clock;
  clients: ClientSource;
  /** The provider's `clockTolerance` (seconds), added to every lifetime as the memory adapter does; 0 by default. */
  clockToleranceSeconds?: number;
}

/** The models whose rows `revokeByGrantId` removes: those the memory adapter indexes by grant. */
export const GRANT_MODELS: ReadonlySet<string> = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
]);

/** The value of the provider's `adapter` option. A plain (not async) function, as the provider requires. */
export function createAdapterFactory(deps: AdapterDeps): AdapterFactory {
  return (model: string): Adapter => (model === 'Client' ? clientAdapter(deps.clients) : tableAdapter(model, deps));
}

/**
 * Models whose id is the bearer token itself (an opaque access token, a refresh token, a code):
 * stored under its SHA-256 and without the `jti` in the payload, so a copy of the database holds
 * no usable token, as Gatehouse keeps its own refresh tokens. They are only ever found by id,
 * which gives the `jti` back.
 */
export const SECRET_ID_MODELS: ReadonlySet<string> = new Set([
  'AccessToken',
  'RefreshToken',
  'AuthorizationCode',
  'ClientCredentials',
  'InitialAccessToken',
  'RegistrationAccessToken',
]);

function tableAdapter(model: string, deps: AdapterDeps): Adapter {
  const { db, clock } = deps;
  const toleranceMs = (deps.clockToleranceSeconds ?? 0) * 1000;
  const isSecret = SECRET_ID_MODELS.has(model);
  const key = (id: string) => (isSecret ? `sha256:${createHash('sha256').update(id).digest('base64url')}` : id);
  return {
    async upsert(id, payload, expiresIn) {
      const { jti: _jti, ...withoutId } = payload;
      await upsertOidcPayload(db, toRow(model, key(id), isSecret ? withoutId : payload, expiresAt(clock(), expiresIn, toleranceMs)));
    },
    async find(id) {
      const found = fromRow(await findOidcPayload(db, model, key(id), clock()));
      return found !== undefined && isSecret ? { ...found, jti: id } : found;
    },
    async findByUserCode(userCode) {
      return fromRow(await findOidcPayloadByUserCode(db, model, userCode, clock()));
    },
    async findByUid(uid) {
      return fromRow(await findOidcPayloadByUid(db, model, uid, clock()));
    },
    async consume(id) {
      await consumeOidcPayload(db, model, key(id), clock());
    },
    async destroy(id) {
      await destroyOidcPayload(db, model, key(id));
    },
    async revokeByGrantId(grantId) {
      await deleteOidcPayloadsByGrantId(db, grantId);
    },
  };
}

/** Epoch ms when a row saved at `now` for `expiresIn` seconds dies; null: never. */
function expiresAt(now: number, expiresIn: number | undefined, toleranceMs: number): number | null {
  return typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? now + expiresIn * 1000 + toleranceMs : null;
}

function toRow(model: string, id: string, payload: AdapterPayload, expires: number | null): OidcPayloadRow {
  return {
    model,
    id,
    payload: JSON.stringify(payload),
    grant_id: GRANT_MODELS.has(model) ? stringOrNull(payload.grantId) : null,
    user_code: stringOrNull(payload.userCode),
    uid: stringOrNull(payload.uid),
    account_id: stringOrNull(payload.accountId),
    expires_at: expires,
    consumed_at: null,
  };
}

/** The payload as it was saved, with `consumed` in epoch seconds once consumed. */
function fromRow(row: OidcPayloadRow | undefined): AdapterPayload | undefined {
  if (row === undefined) return undefined;
  const payload = JSON.parse(row.payload) as AdapterPayload;
  if (row.consumed_at !== null) payload.consumed = Math.floor(row.consumed_at / 1000);
  return payload;
}

/** An index column holds strings only; an empty one indexes nothing (the memory adapter skips falsy values). */
function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function clientAdapter(clients: ClientSource): Adapter {
  const refuse = async (): Promise<never> => {
    throw new Error('clients are managed by Gatehouse');
  };
  return {
    async find(id) {
      // Client metadata is AdapterPayload's client half; the provider validates it on use.
      return (await clients.find(id)) as AdapterPayload | undefined;
    },
    async upsert(id, payload) {
      if (clients.register === undefined) return refuse();
      await clients.register(id, payload as Record<string, unknown>);
    },
    destroy: refuse,
    // Not asked of the Client model by the provider; nothing to find or revoke.
    async findByUserCode() {
      return undefined;
    },
    async findByUid() {
      return undefined;
    },
    async consume() {},
    async revokeByGrantId() {},
  };
}
