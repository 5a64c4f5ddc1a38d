/**
 * `gatehouse users export --email E [--output FILE]` (in the users group: users.cli.ts lists it,
 * users.commands.ts runs it from here): the document `GET /api/auth/account/export` gives,
 * written to FILE (created, never overwritten; readable by its owner only) or standard output.
 * Audited as account.exported, made at the command line.
 */
import { writeFile } from 'node:fs/promises';
import { CLI_SOURCE } from '../audit/audit-source.ts';
import { CliError, parseCommandLine, type CliIo } from '../cli/args.ts';
import { withServices } from '../cli/on-demand.ts';
import { emailField } from '../users/email.ts';
import { USERS_USAGE } from '../users/users.cli.ts';

export async function exportUserCommand(args: string[], io: CliIo): Promise<void> {
  const { values } = parseCommandLine(args, { email: { type: 'string' }, output: { type: 'string' } }, { command: 'users export', usage: USERS_USAGE });
  if (values.email === undefined) throw new CliError('--email is required', 2);
  const email = emailField.safeParse(values.email);
  if (!email.success) throw new CliError(`--email ${email.error.issues[0]?.message ?? 'is invalid'}`, 2);
  if (values.output === '') throw new CliError('--output needs a file name', 2);
  await withServices(io, async ({ users, dataExport }) => {
    const user = await users.findUserByEmail(email.data);
    if (user === null) throw new CliError(`no user with the e-mail ${email.data}`);
    const document = await dataExport.exportAccount(user.id, { source: CLI_SOURCE, by: 'cli' });
    if (document === null) throw new CliError(`no user with the e-mail ${email.data}`);
    const text = `${JSON.stringify(document, null, 2)}\n`;
    if (values.output === undefined) {
      io.stdout.write(text);
      return;
    }
    try {
      await writeFile(values.output, text, { flag: 'wx', mode: 0o600 });
    } catch (error) {
      throw new CliError(`cannot write ${values.output}: ${(error as NodeJS.ErrnoException).code === 'EEXIST' ? 'it exists already' : (error as Error).message}`);
    }
    io.stderr.write(`Exported ${email.data} to ${values.output}\n`);
  });
}
