/**
 * `gatehouse import …` and `gatehouse export users` as the user-import module declares them
 * (module.ts `CliCommandGroup`); their code is in user-import.commands.ts, loaded when one runs.
 */
import type { CliCommandGroup } from '../module.ts';

export const IMPORT_USAGE = `  gatehouse import --from FORMAT FILE [--dry-run] [--report FILE] [--on-conflict skip|update|fail]
                   [--map-role FROM=TO]... [--drop-unmapped-roles]
                                    import users from another system's export; FORMAT is json
                                    (the generic JSON Lines), csv, auth0, firebase, keycloak,
                                    clerk, supabase, or better-auth (FILE is then its database:
                                    a SQLite path or a postgres:// URL; docs/guides/moving-to-gatehouse.md).
                                    Firebase also needs --firebase-signer-key, --firebase-salt-separator,
                                    --firebase-rounds and --firebase-mem-cost (its hash parameters).
                                    Exit 0 all imported or skipped, 3 some rows refused (see the
                                    report), 1 failed or every row refused, 2 wrong command line
  gatehouse import hashes [--json]  how many stored password hashes are of each kind (foreign
                                    ones are replaced by argon2id at their owner's next sign-in)`;

export const EXPORT_USAGE = `  gatehouse export users [--output FILE] [--include-totp-secrets]
                                    every user in the generic format (JSON Lines, with password
                                    hashes and linked identities; TOTP secrets only when asked:
                                    keep the file as safe as a backup), for gatehouse import --from json`;

export const cli: readonly CliCommandGroup[] = [
  { name: 'import', usage: IMPORT_USAGE, order: 60, load: async () => (await import('./user-import.commands.ts')).runImportCommand },
  { name: 'export', usage: EXPORT_USAGE, order: 61, load: async () => (await import('./user-import.commands.ts')).runExportCommand },
];
