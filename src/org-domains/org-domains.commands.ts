/**
 * `gatehouse domains …`, through the same service as the API and pages, audited as made at the
 * command line. Exit codes: 0 done, 1 the operation was refused or failed, 2 the command line is wrong.
 */
import type { CliIo } from '../cli/args.ts';
import { CliError, formatTable, parseCommandLine, type OptionSpecs } from '../cli/args.ts';
import type { BuiltServices, CliCommandContext } from '../module.ts';
import { CLI_SOURCE } from '../audit/audit-source.ts';
import { OPERATOR } from '../organizations/organizations.service.ts';
import { DOMAINS_USAGE } from './org-domains.cli.ts';
import { METHODS, type VerificationMethod } from './domain-challenge.ts';
import type { DomainView } from './org-domains.model.ts';

type Command = (args: string[], io: CliIo, context: CliCommandContext) => Promise<void>;

function parse<const T extends OptionSpecs>(command: string, args: string[], options: T, positionals = 0) {
  return parseCommandLine(args, options, { command: `domains ${command}`, usage: DOMAINS_USAGE, positionals, what: 'DOMAIN' });
}

async function organizationOf(services: BuiltServices, org: string | undefined, command: string): Promise<string> {
  if (org === undefined) throw new CliError(`domains ${command}: --org ID_OR_SLUG is required`, 2);
  const organization = await services.organizations.find(org);
  if (organization === null) throw new CliError(`no organization ${org}`);
  return organization.id;
}

async function domainOf(services: BuiltServices, organizationId: string, name: string): Promise<DomainView> {
  const domain = await services.orgDomains.find(organizationId, name);
  if (domain === null) throw new CliError(`the organization has no domain ${name}`);
  return domain;
}

const time = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().slice(0, 16).replace('T', ' '));
const row = (domain: DomainView) => [domain.organizationId, domain.domain, domain.status, domain.status === 'verified' ? `${time(domain.verifiedAt)} (${domain.verifiedMethod})` : (domain.lastFailure ?? '-'), domain.challenge.recordValue];
const publish = (domain: DomainView) =>
  `Publish this DNS record, then run: gatehouse domains verify --org ${domain.organizationId} ${domain.domain}\n  ${domain.challenge.recordName}. TXT "${domain.challenge.recordValue}"\n` +
  (domain.challenge.fileUrl === null ? '' : `or serve ${domain.challenge.fileUrl} with the line:\n  ${domain.challenge.fileContent}\n`);

const COMMANDS: Readonly<Record<string, Command>> = {
  async list(args, io, { withServices }) {
    const { values } = parse('list', args, { org: { type: 'string' }, json: { type: 'boolean' } });
    await withServices(io, async (services) => {
      const domains = values.org === undefined ? await services.orgDomains.listAll() : ((await services.orgDomains.list(await organizationOf(services, values.org, 'list'), OPERATOR)) as { ok: true; domains: DomainView[] }).domains;
      if (values.json) return void io.stdout.write(`${JSON.stringify(domains)}\n`);
      if (domains.length === 0) return void io.stdout.write('No domains.\n');
      io.stdout.write(formatTable(['ORGANIZATION', 'DOMAIN', 'STATE', 'VERIFIED (UTC) / LAST FAILURE', 'TXT VALUE'], domains.map(row)));
    });
  },

  async add(args, io, { withServices }) {
    const { values, positionals } = parse('add', args, { org: { type: 'string' }, json: { type: 'boolean' } }, 1);
    await withServices(io, async (services) => {
      const organizationId = await organizationOf(services, values.org, 'add');
      const result = await services.orgDomains.add(organizationId, positionals[0]!, OPERATOR, CLI_SOURCE);
      if (!result.ok) throw new CliError(`the domain was not added: ${result.reason}`, result.reason === 'DOMAIN_INVALID' ? 2 : 1);
      if (values.json) return void io.stdout.write(`${JSON.stringify(result.domain)}\n`);
      io.stdout.write(`Added ${result.domain.domain} (pending) to organization ${organizationId}\n${publish(result.domain)}`);
    });
  },

  async verify(args, io, { withServices }) {
    const { values, positionals } = parse('verify', args, { org: { type: 'string' }, method: { type: 'string' } }, 1);
    const method = (values.method ?? 'dns') as VerificationMethod;
    if (!(METHODS as readonly string[]).includes(method)) throw new CliError('domains verify: --method is dns or http', 2);
    await withServices(io, async (services) => {
      const organizationId = await organizationOf(services, values.org, 'verify');
      const domain = await domainOf(services, organizationId, positionals[0]!);
      const result = await services.orgDomains.verify(organizationId, domain.id, OPERATOR, CLI_SOURCE, method);
      if (!result.ok) throw new CliError(`${domain.domain} was not verified: ${result.reason}${result.reason === 'DOMAIN_RECORD_NOT_FOUND' || result.reason === 'DOMAIN_RECORD_MISMATCH' ? `\n${publish(domain)}` : ''}`);
      io.stdout.write(`Verified ${result.domain.domain} for organization ${organizationId} (${result.domain.verifiedMethod})\n`);
    });
  },

  async remove(args, io, { withServices }) {
    const { values, positionals } = parse('remove', args, { org: { type: 'string' } }, 1);
    await withServices(io, async (services) => {
      const organizationId = await organizationOf(services, values.org, 'remove');
      const domain = await domainOf(services, organizationId, positionals[0]!);
      const result = await services.orgDomains.remove(organizationId, domain.id, OPERATOR, CLI_SOURCE);
      if (!result.ok) throw new CliError(`${domain.domain} was not removed: ${result.reason}`);
      io.stdout.write(`Removed ${domain.domain} from organization ${organizationId}\n`);
    });
  },
};

/** `gatehouse domains <command> …`: the exit code; failures are written to `io.stderr`. */
export async function runDomainsCommand(args: string[], io: CliIo, context: CliCommandContext): Promise<number> {
  const [name = '', ...rest] = args;
  try {
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) throw new CliError(`unknown domains command "${name}"\n\nUsage:\n${context.usage}`, 2);
    await command(rest, io, context);
    return 0;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    io.stderr.write(`gatehouse: ${error.message}\n`);
    return error.exitCode;
  }
}
