/**
 * The `gatehouse keys …` commands as the sessions module declares them (module.ts:
 * `CliCommandGroup`): their usage lines, read by `gatehouse help`, which must load nothing more;
 * the commands are in keys.commands.ts, imported when one runs.
 */
import type { CliCommandGroup } from '../module.ts';

export const KEYS_USAGE = `  gatehouse keys rotate             new signing keys (Ed25519 and RSA): published now, signing new
                                    tokens in 2 minutes (every instance has loaded them by then);
                                    the old keys stay published until their tokens have expired
  gatehouse keys list [--json]      the signing keys: kid, algorithm, created, state`;

export const cli: readonly CliCommandGroup[] = [{ name: 'keys', usage: KEYS_USAGE, order: 20, load: async () => (await import('./keys.commands.ts')).runKeysCommand }];
