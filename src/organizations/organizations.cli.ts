/**
 * `gatehouse orgs …`: organizations at the command line, through the same service as the API and
 * pages; changes are audited as made at the command line (an operator: no organization role is
 * needed, but every organization keeps an OWNER). Organizations are named by id or slug, users by
 * e-mail address. Exit codes as the rest of the command: 0 done, 1 the operation failed, 2 the
 * command line is wrong.
 */
import type { CliCommandGroup, ServiceRegistry } from '../module.ts';
import { isoTime } from '../lib/clock.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import { CliError, parseCommandLine, unknownSubcommand, type OptionSpecs } from '../cli/args.ts';
import type { Member, Organization } from './organizations.service.ts';

/**
 * What the commands use besides the services, loaded when one runs: `gatehouse help` imports this
 * file for its usage lines and must not load the service and schemas with it.
 */
const runtime = async () => {
  const [{ CLI_SOURCE }, { MEMBER, OPERATOR }, { toMemberJson, toOrganizationJson }] = await Promise.all([
    import('../audit/audit.service.ts'),
    import('./organizations.service.ts'),
    import('./organizations.schemas.ts'),
  ]);
  return { CLI_SOURCE, MEMBER, OPERATOR, toMemberJson, toOrganizationJson };
};

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Runs `fn` with the server's services on the configured, migrated database (the CLI's `withServices`). */
export type WithServices = (io: CliIo, fn: (services: ServiceRegistry) => Promise<void>) => Promise<void>;

/** The lines of `gatehouse help` about these commands. */
export const ORGS_USAGE = `  gatehouse orgs list [--json]      organizations, newest first, with their member counts
  gatehouse orgs show ORG [--json]  one organization (ORG: its id or slug)
  gatehouse orgs create --name N [--slug S] --owner-email E [--json]
                                    create an organization with that user as its OWNER
  gatehouse orgs members ORG [--json]
                                    its members and their roles
  gatehouse orgs add-member ORG --email E [--role R]
                                    add a user (default role MEMBER)
  gatehouse orgs set-role ORG --email E --role R
                                    change a member's role (OWNER, ADMIN, MEMBER or custom)
  gatehouse orgs remove-member ORG --email E
                                    remove a member (an organization keeps at least one OWNER)
  gatehouse orgs delete ORG         delete an organization with its members and invitations`;

/** These commands as the organizations module declares them (module.ts: `CliCommandGroup`); `gatehouse help` reads this file. */
export const cli: readonly CliCommandGroup[] = [{ name: 'orgs', usage: ORGS_USAGE, order: 40, load: async () => runOrgsCommand }];

type Command = (args: string[], io: CliIo, withServices: WithServices) => Promise<void>;

const COMMANDS: Readonly<Record<string, Command>> = {
  list: listOrganizations,
  show: showOrganization,
  create: createOrganization,
  members: listMembers,
  'add-member': addMember,
  'set-role': setRole,
  'remove-member': removeMember,
  delete: deleteOrganization,
};

/** Why the service refused, in the command line's words. */
const REASONS: Readonly<Record<string, string>> = {
  LAST_OWNER: 'an organization must keep at least one OWNER: make another member OWNER first',
  MEMBER_NOT_FOUND: 'that user is not a member',
  ALREADY_MEMBER: 'that user is a member already',
  SLUG_TAKEN: 'another organization has this slug',
  INVALID_ROLE: '--role must be UPPER_SNAKE (OWNER, ADMIN, MEMBER or a custom role)',
  ORGANIZATION_NOT_FOUND: 'no such organization',
};

/** `gatehouse orgs <command> …`: the exit code; failures are written to `io.stderr`. */
export async function runOrgsCommand(args: readonly string[], io: CliIo, deps: { withServices: WithServices; usage: string }): Promise<number> {
  const [name = '', ...rest] = args;
  try {
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) throw unknownSubcommand('orgs', name, Object.keys(COMMANDS), deps.usage);
    await command(rest, io, deps.withServices);
    return 0;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    io.stderr.write(`gatehouse: ${error.message}\n`);
    return error.exitCode;
  }
}

function parse<const T extends OptionSpecs>(command: string, args: string[], options: T, positionals: number) {
  return parseCommandLine(args, options, { command: `orgs ${command}`, usage: ORGS_USAGE, positionals, what: 'organization (its id or slug)' });
}

function required(value: string | undefined, option: string): string {
  if (value === undefined || value.trim() === '') throw new CliError(`${option} is required`, 2);
  return value;
}

function refused(reason: string, exitCode = reason === 'INVALID_ROLE' || reason === 'INVALID_NAME' || reason === 'INVALID_SLUG' ? 2 : 1): CliError {
  return new CliError(REASONS[reason] ?? reason, exitCode);
}

async function findOrganization(services: ServiceRegistry, key: string): Promise<Organization> {
  const organization = await services.organizations.find(key);
  if (organization === null) throw new CliError(`no organization with the id or slug ${key}`);
  return organization;
}

async function findUserId(services: ServiceRegistry, email: string): Promise<string> {
  const user = await services.users.findUserByEmail(email);
  if (user === null) throw new CliError(`no user with the e-mail ${email}`);
  return user.id;
}

const time = (ms: number) => isoTime(ms).slice(0, 16).replace('T', ' ');

async function listOrganizations(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values } = parse('list', args, { json: { type: 'boolean' } }, 0);
  const { toOrganizationJson } = await runtime();
  await withServices(io, async ({ organizations }) => {
    // Every organization, a keyset page at a time (there was a cap of 10,000 before).
    const list: Awaited<ReturnType<typeof organizations.listPage>>['organizations'] = [];
    for (let before: KeysetPosition | null | undefined; before !== null; ) {
      const page = await organizations.listPage({ ...(before !== undefined && { before }), limit: 1_000 });
      list.push(...page.organizations);
      before = page.next;
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ organizations: list.map((organization) => ({ ...toOrganizationJson(organization), memberCount: organization.memberCount })) })}\n`);
      return;
    }
    if (list.length === 0) {
      io.stdout.write('No organizations.\n');
      return;
    }
    io.stdout.write(formatTable(['ID', 'SLUG', 'MEMBERS', 'CREATED (UTC)', 'NAME'], list.map((organization) => [organization.id, organization.slug, String(organization.memberCount), time(organization.createdAt), organization.name])));
    io.stdout.write(`${list.length} organization${list.length === 1 ? '' : 's'}\n`);
  });
}

async function showOrganization(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('show', args, { json: { type: 'boolean' } }, 1);
  const { OPERATOR, toOrganizationJson } = await runtime();
  await withServices(io, async (services) => {
    const organization = await findOrganization(services, positionals[0]!);
    const members = (await services.organizations.listMembers(organization.id, OPERATOR)) ?? [];
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ ...toOrganizationJson(organization), memberCount: members.length })}\n`);
      return;
    }
    const lines: Array<[string, string]> = [
      ['ID', organization.id],
      ['Slug', organization.slug],
      ['Name', organization.name],
      ['Members', String(members.length)],
      ['Owners', members.filter((member) => member.role === 'OWNER').map((member) => member.email).join(', ') || '-'],
      ['Created', isoTime(organization.createdAt)],
      ['Updated', isoTime(organization.updatedAt)],
    ];
    const width = Math.max(...lines.map(([label]) => label.length));
    io.stdout.write(lines.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}\n`).join(''));
  });
}

async function createOrganization(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values } = parse('create', args, { name: { type: 'string' }, slug: { type: 'string' }, 'owner-email': { type: 'string' }, json: { type: 'boolean' } }, 0);
  const { CLI_SOURCE, toOrganizationJson } = await runtime();
  const name = required(values.name, '--name');
  const ownerEmail = required(values['owner-email'], '--owner-email');
  await withServices(io, async (services) => {
    const ownerId = await findUserId(services, ownerEmail);
    const result = await services.organizations.create({ name, ...(values.slug !== undefined && { slug: values.slug }) }, ownerId, CLI_SOURCE);
    if (!result.ok) {
      if (result.reason === 'INVALID_NAME') throw new CliError(`--name ${result.message}`, 2);
      if (result.reason === 'INVALID_SLUG') throw new CliError(`--slug ${result.message}`, 2);
      throw refused(result.reason);
    }
    const { organization } = result;
    if (values.json) io.stdout.write(`${JSON.stringify(toOrganizationJson(organization))}\n`);
    else io.stdout.write(`Created organization ${organization.id} (${organization.slug}: ${organization.name}) with ${ownerEmail} as OWNER\n`);
  });
}

async function listMembers(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('members', args, { json: { type: 'boolean' } }, 1);
  const { OPERATOR, toMemberJson } = await runtime();
  await withServices(io, async (services) => {
    const organization = await findOrganization(services, positionals[0]!);
    const members: Member[] = (await services.organizations.listMembers(organization.id, OPERATOR)) ?? [];
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ members: members.map(toMemberJson) })}\n`);
      return;
    }
    io.stdout.write(formatTable(['USER ID', 'ROLE', 'JOINED (UTC)', 'EMAIL', 'NAME'], members.map((member) => [member.userId, member.role, time(member.joinedAt), member.email, member.name])));
    io.stdout.write(`${members.length} member${members.length === 1 ? '' : 's'}\n`);
  });
}

async function addMember(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('add-member', args, { email: { type: 'string' }, role: { type: 'string' } }, 1);
  const { CLI_SOURCE, MEMBER } = await runtime();
  const email = required(values.email, '--email');
  const role = values.role ?? MEMBER;
  await withServices(io, async (services) => {
    const organization = await findOrganization(services, positionals[0]!);
    const result = await services.organizations.addMember(organization.id, await findUserId(services, email), role, CLI_SOURCE);
    if (!result.ok) throw refused(result.reason);
    io.stdout.write(`Added ${email} to ${organization.slug} as ${result.member.role}\n`);
  });
}

async function setRole(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('set-role', args, { email: { type: 'string' }, role: { type: 'string' } }, 1);
  const { CLI_SOURCE, OPERATOR } = await runtime();
  const email = required(values.email, '--email');
  const role = required(values.role, '--role');
  await withServices(io, async (services) => {
    const organization = await findOrganization(services, positionals[0]!);
    const result = await services.organizations.setRole(organization.id, OPERATOR, await findUserId(services, email), role, CLI_SOURCE);
    if (!result.ok) throw refused(result.reason);
    io.stdout.write(`${email} is now ${result.member.role} in ${organization.slug}\n`);
  });
}

async function removeMember(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('remove-member', args, { email: { type: 'string' } }, 1);
  const { CLI_SOURCE, OPERATOR } = await runtime();
  const email = required(values.email, '--email');
  await withServices(io, async (services) => {
    const organization = await findOrganization(services, positionals[0]!);
    const result = await services.organizations.removeMember(organization.id, OPERATOR, await findUserId(services, email), CLI_SOURCE);
    if (!result.ok) throw refused(result.reason);
    io.stdout.write(`Removed ${email} from ${organization.slug}\n`);
  });
}

async function deleteOrganization(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { positionals } = parse('delete', args, {}, 1);
  const { CLI_SOURCE, OPERATOR } = await runtime();
  await withServices(io, async (services) => {
    const organization = await findOrganization(services, positionals[0]!);
    const result = await services.organizations.delete(organization.id, OPERATOR, CLI_SOURCE);
    if (!result.ok) throw refused(result.reason);
    io.stdout.write(`Deleted organization ${organization.id} (${organization.slug})\n`);
  });
}

/** Left-aligned columns (names hold no control characters: the name rule refuses them). */
function formatTable(header: string[], rows: string[][]): string {
  const cells = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => [...row[column]!].length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell + ' '.repeat(widths[column]! - [...cell].length))).join('  ')).join('\n') + '\n';
}
