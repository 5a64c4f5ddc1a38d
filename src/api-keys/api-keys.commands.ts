/**
 * `gatehouse api-keys …`, through the same service as the API and pages, audited as made at the
 * command line. A new key is printed once on standard output (with `--json`, `{"key":…,"secret":…}`)
 * and never logged. Exit codes: 0 done, 1 the operation was refused, 2 the command line is wrong.
 */
import type { CliIo } from '../cli/args.ts';
import { CliError, formatTable, parseCommandLine, type OptionSpecs } from '../cli/args.ts';
import type { BuiltServices, CliCommandContext } from '../module.ts';
import { CLI_SOURCE } from '../audit/audit-source.ts';
import { API_KEYS_USAGE } from './api-keys.cli.ts';
import type { ApiKeyOwner, ApiKeyView } from './api-keys.model.ts';
import { toKeyBody } from './api-keys.schemas.ts';

type Command = (args: string[], io: CliIo, context: CliCommandContext) => Promise<void>;

function parse<const T extends OptionSpecs>(command: string, args: string[], options: T, positionals = 0) {
  return parseCommandLine(args, options, { command: `api-keys ${command}`, usage: API_KEYS_USAGE, positionals, what: 'key ID' });
}

/** The owner the options name: a person by address, an organization by id or slug. */
async function ownerOf(services: BuiltServices, values: { user?: string; org?: string }): Promise<ApiKeyOwner | null> {
  if (values.user !== undefined) {
    const user = await services.users.findUserByEmail(values.user);
    if (user === null) throw new CliError(`no user with the address ${values.user}`);
    return { userId: user.id };
  }
  if (values.org !== undefined) {
    const organization = await services.organizations.find(values.org);
    if (organization === null) throw new CliError(`no organization ${values.org}`);
    return { organizationId: organization.id };
  }
  return null;
}

const time = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().slice(0, 16).replace('T', ' '));
const row = (key: ApiKeyView) => [key.id, key.kind, key.status, key.name.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?'), [...key.roles, ...key.scopes.map((scope) => `scope:${scope}`)].join(',') || '-', time(key.expiresAt), time(key.lastUsedAt)];

const COMMANDS: Readonly<Record<string, Command>> = {
  async list(args, io, { withServices }) {
    const { values } = parse('list', args, { user: { type: 'string' }, org: { type: 'string' }, json: { type: 'boolean' } });
    await withServices(io, async (services) => {
      const keys = (await services.apiKeys.list((await ownerOf(services, values)) ?? 'all', 'operator')) ?? [];
      if (values.json) return void io.stdout.write(`${JSON.stringify({ apiKeys: keys.map(toKeyBody) })}\n`);
      if (keys.length === 0) return void io.stdout.write('No API keys.\n');
      io.stdout.write(formatTable(['ID', 'KIND', 'STATE', 'NAME', 'GRANTS', 'EXPIRES (UTC)', 'LAST USED (UTC)'], keys.map(row)));
    });
  },

  async create(args, io, { withServices }) {
    const { values } = parse('create', args, { user: { type: 'string' }, org: { type: 'string' }, name: { type: 'string' }, days: { type: 'string' }, role: { type: 'string', multiple: true }, scope: { type: 'string', multiple: true }, json: { type: 'boolean' } });
    if ((values.user === undefined) === (values.org === undefined)) throw new CliError('api-keys create: name one owner, --user EMAIL or --org ID_OR_SLUG', 2);
    if (values.name === undefined || values.name.trim() === '') throw new CliError('api-keys create: --name is required', 2);
    const days = values.days === undefined ? undefined : Number(values.days);
    if (days !== undefined && !(Number.isSafeInteger(days) && days >= 1)) throw new CliError('api-keys create: --days must be a whole number of days', 2);
    await withServices(io, async (services) => {
      const owner = (await ownerOf(services, values))!;
      const input = { name: values.name!, ...(days !== undefined && { ttlSeconds: days * 86_400 }), ...(values.role !== undefined && { roles: values.role }), scopes: values.scope ?? [] };
      const result = 'userId' in owner ? await services.apiKeys.createPersonal(owner.userId, 'operator', input, CLI_SOURCE) : await services.apiKeys.createForOrganization(owner.organizationId, 'operator', input, CLI_SOURCE);
      if (!result.ok) throw new CliError(`the key was not created: ${result.reason}`);
      if (values.json) return void io.stdout.write(`${JSON.stringify({ key: toKeyBody(result.key), secret: result.secret })}\n`);
      io.stdout.write(`Created API key ${result.key.id} (${result.key.kind}, expires ${time(result.key.expiresAt)} UTC)\n`);
      io.stdout.write(`Key (shown only this once): ${result.secret}\n`);
    });
  },

  async revoke(args, io, { withServices }) {
    const { positionals } = parse('revoke', args, {}, 1);
    await withServices(io, async (services) => {
      const result = await services.apiKeys.revoke(positionals[0]!, 'operator', CLI_SOURCE);
      if (!result.ok) throw new CliError(`no API key ${positionals[0]}`);
      io.stdout.write(`Revoked API key ${result.key.id}\n`);
    });
  },
};

/** `gatehouse api-keys <command> …`: the exit code; failures are written to `io.stderr`. */
export async function runApiKeysCommand(args: string[], io: CliIo, context: CliCommandContext): Promise<number> {
  const [name = '', ...rest] = args;
  try {
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) throw new CliError(`unknown api-keys command "${name}"\n\nUsage:\n${context.usage}`, 2);
    await command(rest, io, context);
    return 0;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    io.stderr.write(`gatehouse: ${error.message}\n`);
    return error.exitCode;
  }
}
