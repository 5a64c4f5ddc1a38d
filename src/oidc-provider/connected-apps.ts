/**
 * A person's connected apps, as the dashboard and the administrators' page of a user show them:
 * each app (a registered client, or one named by its metadata document) they gave access to, with
 * what it may do, since when, and when it last used that access.
 *
 * - What it may do: the scopes of its live grants and of the remembered consent, and the APIs
 *   (resource indicators) with their scopes, worded as the consent page words them.
 * - Granted: the oldest of its live grants (oidc-provider's `iat`) and the remembered consent.
 * - Last used: recorded when the provider issues it a code or tokens for this person
 *   (oidc_app_uses, oidc-provider.service.ts), so the page reads one row per app.
 * - Not reviewed: a client named by its metadata document (its host is its client_id's) or one
 *   that registered itself (its redirect URIs' hosts). An administrator registered the others.
 * - Acting for the person (token exchange, RFC 8693): the chains of clients that exchanged a token
 *   the app got for the person (`act`, token-exchange.ts), read from the audit log's recent
 *   `oidc_client.token_exchanged` events. A chained exchange names the client before it, not the
 *   app; it is put under the app its first actor exchanged from (a chain whose first step is no
 *   longer among the recent events is left out). Revoking the app stops them all: an exchange
 *   needs the subject token's grant alive.
 */
import type { Db } from '../storage/database.ts';
import type { OidcClientsService } from '../oidc-clients/clients.service.ts';
import type { PageLanguage } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { documentClientHost } from './cimd.ts';
import { listGrantsByAccount } from './oidc.store.ts';
import { listConsents } from './consents.store.ts';
import { listAppUses } from './app-uses.store.ts';
import { consentItems } from './oidc.routes.ts';

export interface ConnectedApp {
  clientId: string;
  name: string;
  /** False for a client named by its metadata document or one that registered itself: nobody here reviewed it. */
  reviewed: boolean;
  /** The host such a client is known by (its client_id's, else its redirect URIs'); null for a reviewed client. */
  host: string | null;
  /** What it was allowed beside its APIs' scopes (OIDC scopes), in the consent page's order. */
  scopes: string[];
  /** The APIs it may call (resource indicators) and its scopes at each. */
  resources: Record<string, string[]>;
  /** When the person first gave it access (epoch ms), as far as live grants and the consent tell. */
  grantedAt: number | null;
  /** When the provider last issued it a code or tokens for this person (epoch ms); null: not since this was recorded. */
  lastUsedAt: number | null;
  /** Clients acting for the person with its tokens (token exchange), the most recent first. */
  delegations: Delegation[];
}

/** A chain of clients acting for a person through an app, as the app's tokens were exchanged. */
export interface Delegation {
  /** The acting clients, the first to act first (each exchanged the token of the one before), by name. */
  actors: string[];
  /** The API the last of them got a token for. */
  audience: string;
  /** When it last did (epoch ms). */
  lastAt: number;
}

/** One token exchange for the person (`oidc_client.token_exchanged`'s details, and when). */
export interface ExchangeRecord {
  clientId: string;
  subjectClientId: string;
  toAudience: string;
  /** The acting parties before this one, outermost first. */
  priorActors: string[];
  at: number;
}

interface Collected {
  scopes: Set<string>;
  resources: Map<string, Set<string>>;
  grantedAt: number | null;
}

/** Scopes in the consent page's order (who you are first), then the others by name. */
const SCOPE_ORDER = ['openid', 'profile', 'email', 'roles', 'offline_access'];
const byConsentOrder = (a: string, b: string): number => {
  const rank = (scope: string) => (SCOPE_ORDER.includes(scope) ? SCOPE_ORDER.indexOf(scope) : SCOPE_ORDER.length);
  return rank(a) - rank(b) || a.localeCompare(b);
};
const words = (text: string | undefined): string[] => (text ?? '').split(' ').filter(Boolean);
const earliest = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));

/** The apps the user gave access to: those with a live grant or a remembered consent, by name. */
export async function listConnectedApps(
  deps: { db: Db; clients: OidcClientsService; now: number; recentExchanges: (userId: string) => Promise<ExchangeRecord[]> },
  userId: string,
): Promise<ConnectedApp[]> {
  const { db, clients } = deps;
  const byClient = new Map<string, Collected>();
  const add = (clientId: string, scopes: Iterable<string>, resources: Record<string, Iterable<string>>, grantedAt: number | null) => {
    const entry = byClient.get(clientId) ?? { scopes: new Set<string>(), resources: new Map<string, Set<string>>(), grantedAt: null };
    for (const scope of scopes) entry.scopes.add(scope);
    for (const [indicator, allowed] of Object.entries(resources)) entry.resources.set(indicator, new Set([...(entry.resources.get(indicator) ?? []), ...allowed]));
    entry.grantedAt = earliest(entry.grantedAt, grantedAt);
    byClient.set(clientId, entry);
  };
  for (const row of await listGrantsByAccount(db, userId, deps.now)) {
    const grant = JSON.parse(row.payload) as { clientId?: string; iat?: number; openid?: { scope?: string }; resources?: Record<string, string> };
    if (typeof grant.clientId !== 'string') continue;
    const resources = Object.fromEntries(Object.entries(grant.resources ?? {}).map(([indicator, scope]) => [indicator, words(scope)]));
    add(grant.clientId, words(grant.openid?.scope), resources, typeof grant.iat === 'number' ? grant.iat * 1000 : null);
  }
  for (const consent of await listConsents(db, userId)) add(consent.clientId, consent.scopes, consent.resources, consent.createdAt);
  const uses = await listAppUses(db, userId);
  const delegations = byClient.size === 0 ? new Map<string, Delegation[]>() : delegationsByApp(await deps.recentExchanges(userId));
  const names = new Map<string, string>();
  const nameOf = async (clientId: string): Promise<string> => {
    let name = names.get(clientId);
    if (name === undefined) {
      name = (await clients.show(clientId))?.name ?? documentClientHost(clientId) ?? clientId;
      names.set(clientId, name);
    }
    return name;
  };
  const apps: ConnectedApp[] = [];
  for (const [clientId, entry] of byClient) {
    // An API's scope is told with its API, not again on its own.
    const apiScopes = new Set([...entry.resources.values()].flatMap((scopes) => [...scopes]));
    const common = {
      clientId,
      scopes: [...entry.scopes].filter((scope) => !apiScopes.has(scope)).sort(byConsentOrder),
      resources: Object.fromEntries([...entry.resources].sort(([a], [b]) => a.localeCompare(b)).map(([indicator, scopes]) => [indicator, [...scopes].sort()])),
      grantedAt: entry.grantedAt,
      lastUsedAt: uses.get(clientId) ?? null,
      delegations: await Promise.all((delegations.get(clientId) ?? []).map(async (chain) => ({ ...chain, actors: await Promise.all(chain.actors.map(nameOf)) }))),
    };
    const registered = await clients.show(clientId);
    if (registered !== null) {
      const reviewed = registered.origin === 'admin' || registered.origin === 'cli';
      apps.push({ ...common, name: registered.name, reviewed, host: reviewed ? null : redirectHosts(registered.redirectUris) });
      continue;
    }
    // A deleted client's leftovers are no connected app (its tokens no longer work). A client
    // named by its metadata document is shown by its host (its document is not fetched here).
    const host = documentClientHost(clientId);
    if (host !== null) apps.push({ ...common, name: host, reviewed: false, host });
  }
  return apps.sort((a, b) => a.name.localeCompare(b.name));
}

/** The distinct chains (actors and API) of `exchanges` (newest first), by the app whose token the first actor exchanged, newest first. */
function delegationsByApp(exchanges: readonly ExchangeRecord[]): Map<string, Delegation[]> {
  // Whose token each first actor exchanged (its exchanges with no actor before it).
  const appOfFirstActor = new Map<string, string>();
  for (const exchange of exchanges) if (exchange.priorActors.length === 0 && !appOfFirstActor.has(exchange.clientId)) appOfFirstActor.set(exchange.clientId, exchange.subjectClientId);
  const byApp = new Map<string, Map<string, Delegation>>();
  for (const exchange of exchanges) {
    const actors = [...exchange.priorActors].reverse().concat(exchange.clientId);
    const app = exchange.priorActors.length === 0 ? exchange.subjectClientId : appOfFirstActor.get(actors[0]!);
    if (app === undefined) continue;
    const chains = byApp.get(app) ?? new Map<string, Delegation>();
    const key = JSON.stringify([actors, exchange.toAudience]);
    const known = chains.get(key);
    if (known === undefined || known.lastAt < exchange.at) chains.set(key, { actors, audience: exchange.toAudience, lastAt: exchange.at });
    byApp.set(app, chains);
  }
  return new Map([...byApp].map(([app, chains]) => [app, [...chains.values()].sort((a, b) => b.lastAt - a.lastAt)]));
}

/** The hosts of a client's redirect URIs ("a.example, b.example"); null when it has none (a device-flow client). */
function redirectHosts(uris: readonly string[]): string | null {
  const hosts = new Set<string>();
  for (const uri of uris) {
    try {
      const { host } = new URL(uri);
      if (host !== '') hosts.add(host);
    } catch {
      // A registered redirect URI is a URL; nothing to show otherwise.
    }
  }
  return hosts.size === 0 ? null : [...hosts].join(', ');
}

/** An app as the connected-apps templates show it, in the page's language. */
export interface ConnectedAppView {
  clientId: string;
  name: string;
  reviewed: boolean;
  host: string | null;
  /** What it may do, in the consent page's words (APIs included). */
  items: string[];
  grantedAt: TimeText | null;
  lastUsedAt: TimeText | null;
  delegations: Array<{ actors: string; audience: string; lastAt: TimeText }>;
}

export function connectedAppViews(apps: readonly ConnectedApp[], i18n: PageLanguage): ConnectedAppView[] {
  const time = (at: number | null) => (at === null ? null : formatTime(at, i18n.locale));
  return apps.map((app) => ({
    clientId: app.clientId,
    name: app.name,
    reviewed: app.reviewed,
    host: app.host,
    items: consentItems({ missingOIDCScope: app.scopes, missingResourceScopes: app.resources }, i18n, Object.keys(app.resources)),
    grantedAt: time(app.grantedAt),
    lastUsedAt: time(app.lastUsedAt),
    delegations: app.delegations.map((chain) => ({ actors: chain.actors.join(' → '), audience: chain.audience, lastAt: formatTime(chain.lastAt, i18n.locale) })),
  }));
}
