/**
 * The `gatehouse users …` commands as the users module declares them (module.ts:
 * `CliCommandGroup`): their usage lines, read by `gatehouse help`, which must load nothing more;
 * the commands are in users.commands.ts, imported when one runs.
 */
import type { CliCommandGroup } from '../module.ts';

export const USERS_USAGE = `  gatehouse users create --email E --name N [--role R]... --password-stdin
                                    create a user; the password is read from standard input,
                                    e.g. printf '%s' "$PASSWORD" | gatehouse users create ...
  gatehouse users roles --email E [--add R]... [--remove R]...
                                    add and remove roles (they apply on the user's next request,
                                    or next token refresh with SESSION_STRATEGY=jwt)
  gatehouse users disable --email E disable a user and end all their sessions
  gatehouse users enable --email E  enable a disabled user
  gatehouse users delete --email E --yes
                                    delete the account for good: sessions and app grants ended,
                                    memberships, sign-in methods and factors removed, personal
                                    data erased from the audit log (see docs/guides/admin-and-audit.md)
  gatehouse users export --email E [--output FILE]
                                    everything Gatehouse holds about the user, as JSON (no secret;
                                    see docs/guides/data-export.md), to FILE or standard output
  gatehouse users hashes [--json]   how many stored password hashes are of each kind (imported
                                    foreign ones become argon2id at their next sign-in)
  gatehouse users list [--query Q] [--json]
                                    list users, newest first; Q matches the start of the e-mail
                                    or of a word of the name, *Q anywhere, "Q" exactly`;

export const cli: readonly CliCommandGroup[] = [{ name: 'users', usage: USERS_USAGE, order: 10, load: async () => (await import('./users.commands.ts')).runUsersCommand }];
