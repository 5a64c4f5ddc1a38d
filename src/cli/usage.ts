/** The lines of `gatehouse help` about the commands in src/cli/ (the modules' own are in their *.cli.ts). */

export const SERVE_USAGE = `  gatehouse [serve]                 start the server (same as npm start)`;

export const MIGRATE_USAGE = `  gatehouse migrate                 apply pending database migrations and exit
  gatehouse migrate status [--json] each migration: applied (when) or pending; changes nothing
                                    (migrations are forward-only: there is no "migrate down";
                                    to go back, restore a backup taken before the upgrade)`;

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
  gatehouse users list [--query Q] [--json]
                                    list users, newest first; Q matches part of a name or e-mail`;

export const KEYS_USAGE = `  gatehouse keys rotate             new signing keys (Ed25519 and RSA): published now, signing new
                                    tokens in 2 minutes (every instance has loaded them by then);
                                    the old keys stay published until their tokens have expired
  gatehouse keys list [--json]      the signing keys: kid, algorithm, created, state`;

export const BACKUP_USAGE = `  gatehouse backup FILE [--force]   a consistent copy of the database, safe while the server runs
                                    (SQLite: VACUUM INTO; PostgreSQL: pg_dump --format=custom);
                                    --force replaces an existing FILE
  gatehouse restore FILE [--yes] [--force]
                                    replace the database with a backup, then apply migrations;
                                    --yes confirms replacing an existing database (stop the server
                                    first; --force: PostgreSQL even with other sessions connected)`;

export const DOCTOR_USAGE = `  gatehouse doctor [--json]         check config, storage, migrations, signing keys, SMTP, Redis
                                    and OAuth providers: one line each, ok or the reason`;

export const HELP_USAGE = `  gatehouse help [COMMAND]          show this text (or one command's)
  gatehouse --version, -v           print the version`;
