/**
 * `gatehouse clients …`: the client registry at the command line, through the same service as the
 * admin API and pages; changes are audited as made at the command line. A new secret is printed
 * once, on standard output, and never logged. `create --json` prints all an app needs to be this
 * client: the issuer (AUTH_URL), `clientId`, `clientSecret` (a confidential client) and the client's
 * registered fields as the admin API answers them.
 * Exit codes as the rest of the command: 0 done, 1 the operation failed, 2 the command line is wrong
 * (a value the registry's rules refuse included, with each problem on standard error).
 */
import type { BuiltServices, CliCommandGroup } from '../module.ts';
import { CliError, parseCommandLine, unknownSubcommand, type OptionSpecs } from '../cli/args.ts';
import type { ClientProblem } from './client-rules.ts';
import type { OidcClient } from './clients.service.ts';

/**
 * What the commands use besides the services, loaded when one runs: `gatehouse help` imports this
 * file for its usage lines and must not load the routes and rules with it.
 */
const runtime = async () => {
  const [{ CLI_SOURCE }, { DEVICE_CODE_GRANT, ID_TOKEN_ALGS }, { toClientBody }] = await Promise.all([import('../audit/audit.service.ts'), import('./client-rules.ts'), import('./clients.routes.ts')]);
  return { CLI_SOURCE, DEVICE_CODE_GRANT, ID_TOKEN_ALGS, toClientBody };
};

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Runs `fn` with the server's services on the configured, migrated database (the CLI's `withServices`). */
export type WithServices = (io: CliIo, fn: (services: BuiltServices) => Promise<void>) => Promise<void>;

/** The lines of `gatehouse help` about these commands. */
export const CLIENTS_USAGE = `  gatehouse clients create --name N --redirect-uri U [--redirect-uri U]...
                          [--post-logout-redirect-uri U]... [--public] [--grant-type G]...
                          [--first-party] [--id-token-alg EdDSA|RS256] [--dpop]
                          [--backchannel-logout-uri U] [--exchange-resource R]...
                          [--jwks-uri U] [--json]
                                    register an OAuth / OIDC client; a confidential client's secret
                                    is printed this once; --json prints all the app needs (issuer,
                                    clientId, clientSecret, the registered URIs) (G: authorization_code, refresh_token,
                                    client_credentials, device_code; default the first two); U of
                                    --backchannel-logout-uri receives a logout token when a person
                                    signed in to the app signs out of Gatehouse; R: an API (of
                                    OIDC_PROVIDER_RESOURCES) the client may exchange a person's
                                    token for (token exchange, RFC 8693; confidential clients only;
                                    without --grant-type and --redirect-uri the client only exchanges);
                                    --dpop: its token requests must carry a DPoP proof (RFC 9449);
                                    --jwks-uri: the URL of its public keys: it authenticates with
                                    a JWT it signs (private_key_jwt) and gets no secret
  gatehouse clients list [--json]   the registered clients, newest first, with their origin (admin,
                                    cli, registration, open_registration) and last use
  gatehouse clients show ID [--json]
                                    one client (never its secret)
  gatehouse clients rotate-secret ID [--json]
                                    a new secret, printed this once; the old one stops working
  gatehouse clients set-exchange ID [--exchange-resource R]...
                                    replace the APIs the client may exchange tokens for (none: it
                                    may not exchange)
  gatehouse clients delete ID       delete a client`;

/** These commands as the oidc-clients module declares them (module.ts: `CliCommandGroup`); `gatehouse help` reads this file. */
export const cli: readonly CliCommandGroup[] = [{ name: 'clients', usage: CLIENTS_USAGE, order: 30, load: async () => runClientsCommand }];

/** Short names the command line accepts for grant types. */
const grantAliases = (deviceCodeGrant: string): Readonly<Record<string, string>> => ({ device_code: deviceCodeGrant });

type Command = (args: string[], io: CliIo, withServices: WithServices) => Promise<void>;

const COMMANDS: Readonly<Record<string, Command>> = {
  create: createClient,
  list: listClients,
  show: showClient,
  'rotate-secret': rotateSecret,
  'set-exchange': setExchange,
  delete: deleteClient,
};

/** `gatehouse clients <command> …`: the exit code; failures are written to `io.stderr`. */
export async function runClientsCommand(args: readonly string[], io: CliIo, deps: { withServices: WithServices; usage: string }): Promise<number> {
  const [name = '', ...rest] = args;
  try {
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) throw unknownSubcommand('clients', name, Object.keys(COMMANDS), deps.usage);
    await command(rest, io, deps.withServices);
    return 0;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    io.stderr.write(`gatehouse: ${error.message}\n`);
    return error.exitCode;
  }
}

function parse<const T extends OptionSpecs>(command: string, args: string[], options: T, positionals: number) {
  return parseCommandLine(args, options, { command: `clients ${command}`, usage: CLIENTS_USAGE, positionals, what: 'client ID' });
}

/** What the command line calls the field a problem is about. */
function describeProblem(problem: ClientProblem, input: { redirectUris: readonly string[]; postLogoutRedirectUris: readonly string[] }): string {
  const [field, index] = problem.field.split('.');
  const value = (list: readonly string[]) => (index === undefined ? '' : ` "${list[Number(index)] ?? ''}"`);
  const option =
    field === 'name'
      ? '--name'
      : field === 'redirectUris'
        ? `--redirect-uri${value(input.redirectUris)}`
        : field === 'postLogoutRedirectUris'
          ? `--post-logout-redirect-uri${value(input.postLogoutRedirectUris)}`
          : field === 'grantTypes'
            ? '--grant-type'
            : field === 'idTokenSignedResponseAlg'
              ? '--id-token-alg'
              : field === 'backchannelLogoutUri'
                ? '--backchannel-logout-uri'
                : field === 'exchangeResources'
                  ? '--exchange-resource'
                  : problem.field;
  return `${option}: ${problem.message}`;
}

async function createClient(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values } = parse(
    'create',
    args,
    {
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      'post-logout-redirect-uri': { type: 'string', multiple: true },
      public: { type: 'boolean' },
      'grant-type': { type: 'string', multiple: true },
      'first-party': { type: 'boolean' },
      'id-token-alg': { type: 'string' },
      'backchannel-logout-uri': { type: 'string' },
      'exchange-resource': { type: 'string', multiple: true },
      dpop: { type: 'boolean' },
      'jwks-uri': { type: 'string' },
      json: { type: 'boolean' },
    },
    0,
  );
  if (values.name === undefined || values.name.trim() === '') throw new CliError('--name is required', 2);
  const alg = values['id-token-alg'];
  const { CLI_SOURCE, DEVICE_CODE_GRANT, ID_TOKEN_ALGS, toClientBody } = await runtime();
  const GRANT_ALIASES = grantAliases(DEVICE_CODE_GRANT);
  // With an exchange policy and nothing to sign people in with, the client only exchanges tokens.
  const onlyExchanges = values['exchange-resource'] !== undefined && values['grant-type'] === undefined && values['redirect-uri'] === undefined;
  if (alg !== undefined && !(ID_TOKEN_ALGS as readonly string[]).includes(alg)) throw new CliError(`--id-token-alg must be one of ${ID_TOKEN_ALGS.join(', ')}`, 2);
  const input = {
    name: values.name,
    redirectUris: values['redirect-uri'] ?? [],
    postLogoutRedirectUris: values['post-logout-redirect-uri'] ?? [],
    ...(onlyExchanges && { grantTypes: [] }),
    ...(values['grant-type'] !== undefined && { grantTypes: values['grant-type'].map((grant) => (Object.hasOwn(GRANT_ALIASES, grant) ? GRANT_ALIASES[grant]! : grant)) }),
    isPublic: values.public ?? false,
    isFirstParty: values['first-party'] ?? false,
    ...(alg !== undefined && { idTokenSignedResponseAlg: alg }),
    ...(values['backchannel-logout-uri'] !== undefined && { backchannelLogoutUri: values['backchannel-logout-uri'] }),
    ...(values['exchange-resource'] !== undefined && { exchangeResources: values['exchange-resource'] }),
    ...(values.dpop === true && { dpopBoundAccessTokens: true }),
    ...(values['jwks-uri'] !== undefined && { jwksUri: values['jwks-uri'] }),
  };
  await withServices(io, async ({ oidcClients, config }) => {
    const result = await oidcClients.create(input, CLI_SOURCE);
    if (!result.ok) throw new CliError(`the client was not registered:\n${result.problems.map((problem) => `  ${describeProblem(problem, input)}`).join('\n')}`, 2);
    const { client, clientSecret } = result;
    if (values.json) {
      const { clientId, ...registered } = toClientBody(client);
      io.stdout.write(`${JSON.stringify({ issuer: config.authUrl, clientId, ...(clientSecret !== undefined && { clientSecret }), ...registered })}\n`);
      return;
    }
    io.stdout.write(`Registered ${client.isPublic ? 'public' : 'confidential'} client ${client.id} (${client.name})\n`);
    if (clientSecret !== undefined) io.stdout.write(`Client secret (shown only this once; Gatehouse keeps only a hash): ${clientSecret}\n`);
  });
}

async function listClients(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values } = parse('list', args, { json: { type: 'boolean' } }, 0);
  const { toClientBody } = await runtime();
  await withServices(io, async ({ oidcClients }) => {
    const clients = await oidcClients.list();
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ clients: clients.map(toClientBody) })}\n`);
      return;
    }
    if (clients.length === 0) {
      io.stdout.write('No clients.\n');
      return;
    }
    const minute = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString().slice(0, 16).replace('T', ' '));
    const rows = clients.map((client) => [client.id, client.isPublic ? 'public' : 'confidential', client.grantTypes.join(','), client.origin, minute(client.createdAt), minute(client.lastUsedAt), client.name]);
    io.stdout.write(formatTable(['CLIENT ID', 'TYPE', 'GRANT TYPES', 'ORIGIN', 'CREATED (UTC)', 'LAST USED (UTC)', 'NAME'], rows));
    io.stdout.write(`${clients.length} client${clients.length === 1 ? '' : 's'}\n`);
  });
}

async function showClient(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('show', args, { json: { type: 'boolean' } }, 1);
  const { toClientBody } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ oidcClients }) => {
    const client = await oidcClients.show(id);
    if (client === null) throw new CliError(`no client with the ID ${id}`);
    io.stdout.write(values.json ? `${JSON.stringify(toClientBody(client))}\n` : describeClient(client));
  });
}

async function rotateSecret(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('rotate-secret', args, { json: { type: 'boolean' } }, 1);
  const { CLI_SOURCE } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ oidcClients }) => {
    const result = await oidcClients.rotateSecret(id, CLI_SOURCE);
    if (!result.ok) {
      if (result.reason === 'NOT_FOUND') throw new CliError(`no client with the ID ${id}`);
      throw new CliError(result.reason === 'PUBLIC_CLIENT' ? `${id} is a public client: it has no secret` : `${id} authenticates with its keys (private_key_jwt): it has no secret`);
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ clientId: result.client.id, clientSecret: result.clientSecret })}\n`);
      return;
    }
    io.stdout.write(`New secret for ${result.client.id} (${result.client.name}); the old one no longer works.\n`);
    io.stdout.write(`Client secret (shown only this once; Gatehouse keeps only a hash): ${result.clientSecret}\n`);
  });
}

async function setExchange(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('set-exchange', args, { 'exchange-resource': { type: 'string', multiple: true }, json: { type: 'boolean' } }, 1);
  const { CLI_SOURCE, toClientBody } = await runtime();
  const id = positionals[0]!;
  const exchangeResources = values['exchange-resource'] ?? [];
  await withServices(io, async ({ oidcClients }) => {
    const result = await oidcClients.update(id, { exchangeResources }, CLI_SOURCE);
    if (!result.ok && result.reason === 'NOT_FOUND') throw new CliError(`no client with the ID ${id}`);
    if (!result.ok) throw new CliError(`the exchange policy was not changed:\n${result.problems.map((problem) => `  ${describeProblem(problem, { redirectUris: [], postLogoutRedirectUris: [] })}`).join('\n')}`, 2);
    if (values.json) {
      io.stdout.write(`${JSON.stringify(toClientBody(result.client))}\n`);
      return;
    }
    const listed = result.client.exchangeResources;
    io.stdout.write(listed.length === 0 ? `${id} may not exchange tokens.\n` : `${id} may exchange tokens for: ${listed.join(' ')}\n`);
  });
}

async function deleteClient(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { positionals } = parse('delete', args, {}, 1);
  const { CLI_SOURCE } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ oidcClients }) => {
    const client = await oidcClients.show(id);
    if (client === null || !(await oidcClients.delete(id, CLI_SOURCE))) throw new CliError(`no client with the ID ${id}`);
    io.stdout.write(`Deleted client ${id} (${client.name})\n`);
  });
}

function describeClient(client: OidcClient): string {
  const time = (ms: number) => new Date(ms).toISOString();
  const lines: Array<[string, string]> = [
    ['Client ID', client.id],
    ['Name', client.name],
    ['Type', client.isPublic ? 'public (no secret; PKCE)' : client.jwksUri !== null ? 'confidential (its keys: private_key_jwt)' : 'confidential'],
    ...(client.jwksUri === null ? [] : [['Keys', client.jwksUri] as [string, string]]),
    ['First party', client.isFirstParty ? 'yes' : 'no'],
    ['Grant types', client.grantTypes.join(', ')],
    ['Redirect URIs', client.redirectUris.join(' ') || '-'],
    ['Post-logout URIs', client.postLogoutRedirectUris.join(' ') || '-'],
    ['ID token alg', client.idTokenSignedResponseAlg],
    ['Back-channel logout', client.backchannelLogoutUri ?? '-'],
    ['Token exchange to', client.exchangeResources.join(' ') || '-'],
    ['DPoP required', client.dpopBoundAccessTokens ? 'yes' : 'no'],
    ['Origin', client.origin],
    ['Last used', client.lastUsedAt === null ? 'never' : time(client.lastUsedAt)],
    ['Created', time(client.createdAt)],
    ['Updated', time(client.updatedAt)],
    ...(client.isPublic || client.jwksUri !== null ? [] : [['Secret rotated', client.secretRotatedAt === null ? 'never' : time(client.secretRotatedAt)] as [string, string]]),
  ];
  const width = Math.max(...lines.map(([label]) => label.length));
  return lines.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}\n`).join('');
}

/** Left-aligned columns (names hold no control characters: the rules refuse them). */
function formatTable(header: string[], rows: string[][]): string {
  const cells = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => [...row[column]!].length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell + ' '.repeat(widths[column]! - [...cell].length))).join('  ')).join('\n') + '\n';
}
