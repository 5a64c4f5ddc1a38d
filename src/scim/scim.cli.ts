/**
 * The `gatehouse scim …` commands as the SCIM module declares them (module.ts: `CliCommandGroup`):
 * their usage lines, read by `gatehouse help`, which must load nothing more; the commands are in
 * scim.commands.ts, imported when one runs.
 */
import type { CliCommandGroup } from '../module.ts';

export const SCIM_USAGE = `  gatehouse scim tokens list --org ORG [--json]
                                    an organization's SCIM tokens (ORG: its id or slug)
  gatehouse scim tokens create --org ORG [--name N] [--json]
                                    a new SCIM token, printed this once
  gatehouse scim tokens rotate --org ORG --id TOKEN_ID [--json]
                                    a new token in place of that one, which stops working now
  gatehouse scim tokens revoke --org ORG --id TOKEN_ID
                                    revoke a SCIM token`;

export const cli: readonly CliCommandGroup[] = [{ name: 'scim', usage: SCIM_USAGE, order: 47, load: async () => (await import('./scim.commands.ts')).runScimCommand }];
