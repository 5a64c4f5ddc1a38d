/** `gatehouse scim tokens list|create|rotate|revoke` (declared in scim.cli.ts, which loads this file when one runs). */
import type { CliCommandRunner } from '../module.ts';
import { CLI_SOURCE } from '../audit/audit-source.ts';
import { isoTime } from '../lib/clock.ts';
import { CliError, formatTable, parseCommandLine, writeJson } from '../cli/args.ts';
import { SCIM_USAGE } from './scim.cli.ts';
import { SCIM_BASE_PATH } from './scim.routes.ts';

const OPTIONS = { org: { type: 'string' }, name: { type: 'string' }, id: { type: 'string' }, json: { type: 'boolean' } } as const;

/** `gatehouse scim tokens <command> …`. */
export const runScimCommand: CliCommandRunner = async ([group = '', command = '', ...rest], io, context) => {
  if (group !== 'tokens' || !['list', 'create', 'rotate', 'revoke'].includes(command)) throw new CliError(`unknown scim command "${[group, command].join(' ').trim()}"\n\nUsage:\n${SCIM_USAGE}`, 2);
  const { values } = parseCommandLine(rest, OPTIONS, { command: `scim tokens ${command}`, usage: SCIM_USAGE });
  if (values.org === undefined || values.org.trim() === '') throw new CliError('--org is required', 2);
  if ((command === 'rotate' || command === 'revoke') && (values.id === undefined || values.id.trim() === '')) throw new CliError('--id is required', 2);
  await context.withServices(io, async (services) => {
    const organization = await services.organizations.find(values.org!);
    if (organization === null) throw new CliError(`no organization with the id or slug ${values.org}`);
    const { scimTokens } = services;
    const baseUrl = `${services.config.authUrl}${SCIM_BASE_PATH}`;
    const issued = (token: string, id: string) => {
      if (values.json) writeJson(io, { token, id, baseUrl });
      else io.stdout.write(`SCIM token ${id} for ${organization.slug} (shown once):\n${token}\nBase URL: ${baseUrl}\n`);
    };
    switch (command) {
      case 'list': {
        const list = await scimTokens.list(organization.id);
        const time = (ms: number | null) => (ms === null ? '-' : isoTime(ms));
        if (values.json) writeJson(io, list.map((token) => ({ ...token, createdAt: isoTime(token.createdAt), lastUsedAt: token.lastUsedAt === null ? null : isoTime(token.lastUsedAt), revokedAt: token.revokedAt === null ? null : isoTime(token.revokedAt) })));
        else if (list.length === 0) io.stdout.write('No SCIM tokens.\n');
        else io.stdout.write(formatTable(['ID', 'NAME', 'CREATED', 'LAST USED', 'REVOKED'], list.map((token) => [token.id, token.name ?? '-', time(token.createdAt), time(token.lastUsedAt), time(token.revokedAt)])));
        return;
      }
      case 'create': {
        const result = await scimTokens.create(organization.id, values.name?.trim() || null, CLI_SOURCE);
        if (!result.ok) throw new CliError('the organization has as many active SCIM tokens as it may: revoke one first');
        issued(result.token, result.record.id);
        return;
      }
      case 'rotate': {
        const result = await scimTokens.rotate(organization.id, values.id!, CLI_SOURCE);
        if (!result.ok) throw new CliError('no active SCIM token with that id in this organization');
        issued(result.token, result.record.id);
        return;
      }
      default:
        if (!(await scimTokens.revoke(organization.id, values.id!, CLI_SOURCE))) throw new CliError('no active SCIM token with that id in this organization');
        io.stdout.write('Revoked.\n');
    }
  });
};
