/**
 * Which APIs a client may exchange a person's access token for (token exchange, RFC 8693; the
 * grant is in src/oidc-provider/token-exchange.ts), and the audit event of each exchange.
 *
 * Only a confidential client an administrator registered (admin API, pages or CLI) may exchange:
 * not a public one (nothing proves who presents its id), not one that registered itself (RFC 7591,
 * with the token or in open mode: nobody vouched for it), and not one named by its metadata
 * document (an https client_id: it is in no registry, so it has no policy at all).
 */
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { ClientOrigin } from './clients.service.ts';
import { checkExchangeResources, type ClientProblem } from './client-rules.ts';

/** The origins whose clients may hold an exchange policy. */
export const EXCHANGE_ORIGINS: ReadonlySet<ClientOrigin> = new Set(['admin', 'cli']);

/** The resources a client may exchange tokens for: its policy, or none when it may not exchange at all. */
export function exchangePolicyOf(client: { isPublic: boolean; origin: ClientOrigin; exchangeResources: readonly string[] }): string[] {
  return client.isPublic || !EXCHANGE_ORIGINS.has(client.origin) ? [] : [...client.exchangeResources];
}

/** A new policy for a registered client: the rules' (client-rules.ts), and none for a client that registered itself. */
export function checkExchangeChange(resources: readonly string[], client: { isPublic: boolean; origin: ClientOrigin }): { resources: string[]; problems: ClientProblem[] } {
  const checked = checkExchangeResources(resources, client.isPublic);
  if (checked.resources.length > 0 && !EXCHANGE_ORIGINS.has(client.origin)) {
    checked.problems.push({ field: 'exchangeResources', reason: 'EXCHANGE_SELF_REGISTERED', message: 'a client that registered itself may not exchange tokens: register it as an administrator' });
  }
  return checked;
}

/** One exchange, as audited (`oidc_client.token_exchanged`): never a token. */
export interface TokenExchanged {
  /** The client that exchanged (the acting party, `act.sub`). */
  clientId: string;
  /** The person the tokens speak for. */
  userId: string;
  /** The client the subject token was issued to. */
  subjectClientId: string;
  fromAudience: string;
  toAudience: string;
  scopes: string[];
  /** The acting parties before this one, outermost first (a chain of exchanges); empty for the first. */
  priorActors: string[];
}

/** Records an exchange in the audit log, about the person (outside a transaction: a failed write is logged). */
export async function recordTokenExchange(audit: AuditService, exchanged: TokenExchanged, source: AuditSource): Promise<void> {
  const { userId, ...details } = exchanged;
  await audit.record({ type: 'oidc_client.token_exchanged', userId, source, details });
}
