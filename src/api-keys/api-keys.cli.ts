/**
 * The `gatehouse api-keys …` commands as this module declares them (module.ts: `CliCommandGroup`):
 * their usage lines, read by `gatehouse help`, which must load nothing more; the commands are in
 * api-keys.commands.ts, imported when one runs. (`gatehouse keys` is the signing keys'.)
 */
import type { CliCommandGroup } from '../module.ts';

export const API_KEYS_USAGE = `  gatehouse api-keys list [--user EMAIL | --org ID_OR_SLUG] [--json]
                                    API keys (all, a person's or an organization's): never the secret
  gatehouse api-keys create (--user EMAIL | --org ID_OR_SLUG) --name NAME [--days N]
                            [--role ROLE]... [--scope SCOPE]... [--json]
                                    a personal key (roles the person holds; --scope admin for an
                                    ADMIN) or an organization key (one --role, default MEMBER);
                                    the key is printed this once
  gatehouse api-keys revoke ID      refuse a key from now on`;

export const cli: readonly CliCommandGroup[] = [{ name: 'api-keys', usage: API_KEYS_USAGE, order: 45, load: async () => (await import('./api-keys.commands.ts')).runApiKeysCommand }];
