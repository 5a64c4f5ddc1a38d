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
 * - Delegation: tokens carrying `act` (token exchange) are not stored (access tokens are JWTs),
 *   so there is no chain to show yet; it belongs beside "Last used" once exchanges are recorded.
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
export async function listConnectedApps(deps: { db: Db; clients: OidcClientsService; now: number }, userId: string): Promise<ConnectedApp[]> {
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
  }));
}
