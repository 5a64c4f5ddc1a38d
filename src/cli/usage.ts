/** The lines of `gatehouse help` about the core's commands, in src/cli/ (the modules' own are in their *.cli.ts). */

export const SERVE_USAGE = `  gatehouse [serve]                 start the server (same as npm start)`;

export const MIGRATE_USAGE = `  gatehouse migrate                 apply pending database migrations and exit
  gatehouse migrate status [--json] each migration: applied (when) or pending; changes nothing
                                    (migrations are forward-only: there is no "migrate down";
                                    to go back, restore a backup taken before the upgrade)`;

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
