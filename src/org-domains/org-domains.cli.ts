/**
 * The `gatehouse domains …` commands as this module declares them (module.ts: `CliCommandGroup`):
 * their usage lines, read by `gatehouse help`, which must load nothing more; the commands are in
 * org-domains.commands.ts, imported when one runs.
 */
import type { CliCommandGroup } from '../module.ts';

export const DOMAINS_USAGE = `  gatehouse domains list [--org ID_OR_SLUG] [--json]
                                    organizations' domains: status, and the record to publish
  gatehouse domains add --org ID_OR_SLUG DOMAIN [--json]
                                    claim a domain for an organization; prints the TXT record
  gatehouse domains verify --org ID_OR_SLUG DOMAIN [--method dns|http]
                                    look for the record (or the well-known file) now
  gatehouse domains remove --org ID_OR_SLUG DOMAIN
                                    remove a domain, pending or verified`;

export const cli: readonly CliCommandGroup[] = [{ name: 'domains', usage: DOMAINS_USAGE, order: 42, load: async () => (await import('./org-domains.commands.ts')).runDomainsCommand }];
