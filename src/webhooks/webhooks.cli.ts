/**
 * `gatehouse webhooks …`: webhook endpoints at the command line, through the same service as the
 * admin API and pages; changes are audited as made at the command line. A signing secret is printed
 * once, on standard output (with `--json`, as `{"id","secret"}`), and never logged. The CLI starts no
 * worker: the server's delivers what it queues (a redelivery, say).
 * Exit codes as the rest of the command: 0 done, 1 the operation failed, 2 the command line is wrong
 * (a value the rules refuse included, with each problem on standard error).
 */
import type { CliCommandGroup, ServiceRegistry } from '../module.ts';
import { CliError, parseCommandLine, unknownSubcommand, type OptionSpecs } from '../cli/args.ts';
import type { EndpointProblem, WebhookDelivery, WebhookEndpoint } from './webhooks.service.ts';

/**
 * What the commands use besides the services, loaded when one runs: `gatehouse help` imports this
 * file for its usage lines and must not load the routes with it.
 */
const runtime = async () => {
  const [{ CLI_SOURCE }, { toDeliveryBody, toEndpointBody }] = await Promise.all([import('../audit/audit.service.ts'), import('./webhooks.routes.ts')]);
  return { CLI_SOURCE, toDeliveryBody, toEndpointBody };
};

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Runs `fn` with the server's services on the configured, migrated database (the CLI's `withServices`). */
export type WithServices = (io: CliIo, fn: (services: ServiceRegistry) => Promise<void>) => Promise<void>;

/** The lines of `gatehouse help` about these commands. */
export const WEBHOOKS_USAGE = `  gatehouse webhooks create --url U --event T [--event T]... [--description D] [--json]
                                    register a webhook endpoint; its signing secret (whsec_...)
                                    is printed this once
  gatehouse webhooks list [--json]  the webhook endpoints, newest first
  gatehouse webhooks show ID [--json]
                                    one endpoint (never its secret)
  gatehouse webhooks disable ID     stop sending to an endpoint (its pending deliveries stop)
  gatehouse webhooks enable ID      send to an endpoint again
  gatehouse webhooks rotate-secret ID [--json]
                                    a new secret, printed this once; the old one signs too for 24 h
  gatehouse webhooks delete ID      delete an endpoint and its deliveries
  gatehouse webhooks deliveries ID [--limit N] [--json]
                                    an endpoint's deliveries: status, attempts, response code
  gatehouse webhooks redeliver DELIVERY_ID
                                    send a delivered or failed webhook again (same webhook-id)`;

/** These commands as the webhooks module declares them (module.ts: `CliCommandGroup`); `gatehouse help` reads this file. */
export const cli: readonly CliCommandGroup[] = [{ name: 'webhooks', usage: WEBHOOKS_USAGE, order: 50, load: async () => runWebhooksCommand }];

type Command = (args: string[], io: CliIo, withServices: WithServices) => Promise<void>;

const COMMANDS: Readonly<Record<string, Command>> = {
  create: createEndpoint,
  list: listEndpoints,
  show: showEndpoint,
  disable: (args, io, withServices) => setEnabled(args, io, withServices, false),
  enable: (args, io, withServices) => setEnabled(args, io, withServices, true),
  'rotate-secret': rotateSecret,
  delete: deleteEndpoint,
  deliveries: listDeliveries,
  redeliver,
};

/** `gatehouse webhooks <command> …`: the exit code; failures are written to `io.stderr`. */
export async function runWebhooksCommand(args: readonly string[], io: CliIo, deps: { withServices: WithServices; usage: string }): Promise<number> {
  const [name = '', ...rest] = args;
  try {
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) throw unknownSubcommand('webhooks', name, Object.keys(COMMANDS), deps.usage);
    await command(rest, io, deps.withServices);
    return 0;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    io.stderr.write(`gatehouse: ${error.message}\n`);
    return error.exitCode;
  }
}

/**
 * Our ids are base64url, so one in 64 starts with `-`: where a command names an id, the parser
 * takes such an argument as the id (see `parseCommandLine`); `--` also ends the options.
 */
function parse<const T extends OptionSpecs>(command: string, args: string[], options: T, positionals: number, what = 'endpoint ID') {
  return parseCommandLine(args, options, { command: `webhooks ${command}`, usage: WEBHOOKS_USAGE, positionals, what });
}

const OPTION_OF = { url: '--url', eventTypes: '--event', description: '--description' } as const;
const describeProblem = (problem: EndpointProblem) => `${OPTION_OF[problem.field]}: ${problem.message}`;

/** Control characters (a receiver's answer can hold anything) shown as `?`. */
const clean = (value: string) => value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
const time = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
const shortTime = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

async function createEndpoint(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values } = parse('create', args, { url: { type: 'string' }, event: { type: 'string', multiple: true }, description: { type: 'string' }, json: { type: 'boolean' } }, 0);
  const { CLI_SOURCE } = await runtime();
  if (values.url === undefined || values.url.trim() === '') throw new CliError('--url is required', 2);
  if (values.event === undefined || values.event.length === 0) throw new CliError('name at least one --event', 2);
  const input = { url: values.url, eventTypes: values.event, ...(values.description !== undefined && { description: values.description }) };
  await withServices(io, async ({ webhooks }) => {
    const result = await webhooks.create(input, CLI_SOURCE);
    if (!result.ok) {
      const known = result.problems.some((problem) => problem.reason === 'EVENT_UNKNOWN') ? `\n  event types: ${webhooks.eventTypes.join(', ')}` : '';
      throw new CliError(`the endpoint was not registered:\n${result.problems.map((problem) => `  ${describeProblem(problem)}`).join('\n')}${known}`, 2);
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ id: result.endpoint.id, secret: result.secret })}\n`);
      return;
    }
    io.stdout.write(`Registered webhook endpoint ${result.endpoint.id} (${result.endpoint.url})\n`);
    io.stdout.write(`Signing secret (shown only this once): ${result.secret}\n`);
  });
}

async function listEndpoints(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values } = parse('list', args, { json: { type: 'boolean' } }, 0);
  const { toEndpointBody } = await runtime();
  await withServices(io, async ({ webhooks }) => {
    const endpoints = await webhooks.list();
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ endpoints: endpoints.map(toEndpointBody) })}\n`);
      return;
    }
    if (endpoints.length === 0) {
      io.stdout.write('No webhook endpoints.\n');
      return;
    }
    const rows = endpoints.map((endpoint) => [endpoint.id, stateOf(endpoint), shortTime(endpoint.createdAt), endpoint.eventTypes.join(','), clean(endpoint.url)]);
    io.stdout.write(formatTable(['ID', 'STATE', 'CREATED (UTC)', 'EVENTS', 'URL'], rows));
    io.stdout.write(`${endpoints.length} endpoint${endpoints.length === 1 ? '' : 's'}\n`);
  });
}

function stateOf(endpoint: WebhookEndpoint): string {
  if (endpoint.isEnabled) return endpoint.failingSince === null ? 'enabled' : 'failing';
  return endpoint.disabledReason === 'FAILING' ? 'disabled(failing)' : 'disabled';
}

async function showEndpoint(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('show', args, { json: { type: 'boolean' } }, 1);
  const { toEndpointBody } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ webhooks }) => {
    const endpoint = await webhooks.show(id);
    if (endpoint === null) throw new CliError(`no webhook endpoint with the ID ${id}`);
    io.stdout.write(values.json ? `${JSON.stringify(toEndpointBody(endpoint))}\n` : describeEndpoint(endpoint));
  });
}

async function setEnabled(args: string[], io: CliIo, withServices: WithServices, enabled: boolean): Promise<void> {
  const { positionals } = parse(enabled ? 'enable' : 'disable', args, {}, 1);
  const { CLI_SOURCE } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ webhooks }) => {
    const before = await webhooks.show(id);
    const after = before === null ? null : enabled ? await webhooks.enable(id, CLI_SOURCE) : await webhooks.disable(id, CLI_SOURCE);
    if (before === null || after === null) throw new CliError(`no webhook endpoint with the ID ${id}`);
    const word = enabled ? 'enabled' : 'disabled';
    io.stdout.write(before.isEnabled === enabled ? `Webhook endpoint ${id} was already ${word}\n` : `${enabled ? 'Enabled' : 'Disabled'} webhook endpoint ${id}\n`);
  });
}

async function rotateSecret(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('rotate-secret', args, { json: { type: 'boolean' } }, 1);
  const { CLI_SOURCE } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ webhooks }) => {
    const result = await webhooks.rotateSecret(id, CLI_SOURCE);
    if (!result.ok) throw new CliError(`no webhook endpoint with the ID ${id}`);
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ id: result.endpoint.id, secret: result.secret })}\n`);
      return;
    }
    const previous = result.endpoint.previousSecretExpiresAt;
    io.stdout.write(
      previous === null
        ? `New signing secret for ${id}; the previous one could not be opened with this AUTH_SECRET and no longer signs.\n`
        : `New signing secret for ${id}; the previous one also signs until ${time(previous)}.\n`,
    );
    io.stdout.write(`Signing secret (shown only this once): ${result.secret}\n`);
  });
}

async function deleteEndpoint(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { positionals } = parse('delete', args, {}, 1);
  const { CLI_SOURCE } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ webhooks }) => {
    if (!(await webhooks.delete(id, CLI_SOURCE))) throw new CliError(`no webhook endpoint with the ID ${id}`);
    io.stdout.write(`Deleted webhook endpoint ${id}\n`);
  });
}

async function listDeliveries(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { values, positionals } = parse('deliveries', args, { json: { type: 'boolean' }, limit: { type: 'string' } }, 1);
  const { toDeliveryBody } = await runtime();
  const id = positionals[0]!;
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 500) throw new CliError('--limit must be an integer from 1 to 500', 2);
  await withServices(io, async ({ webhooks }) => {
    const deliveries = await webhooks.listDeliveries(id, limit);
    if (deliveries === null) throw new CliError(`no webhook endpoint with the ID ${id}`);
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ deliveries: deliveries.map(toDeliveryBody) })}\n`);
      return;
    }
    if (deliveries.length === 0) {
      io.stdout.write('No deliveries.\n');
      return;
    }
    io.stdout.write(formatTable(['DELIVERY ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'RESPONSE', 'ERROR', 'CREATED (UTC)'], deliveries.map(deliveryRow)));
    io.stdout.write(`${deliveries.length} deliver${deliveries.length === 1 ? 'y' : 'ies'}\n`);
  });
}

function deliveryRow(delivery: WebhookDelivery): string[] {
  return [delivery.id, delivery.eventType, delivery.status, String(delivery.attempts), delivery.lastResponseCode === null ? '-' : String(delivery.lastResponseCode), delivery.lastError ?? '-', shortTime(delivery.createdAt)];
}

async function redeliver(args: string[], io: CliIo, withServices: WithServices): Promise<void> {
  const { positionals } = parse('redeliver', args, {}, 1, 'delivery ID');
  const { CLI_SOURCE } = await runtime();
  const id = positionals[0]!;
  await withServices(io, async ({ webhooks }) => {
    const result = await webhooks.redeliver(id, CLI_SOURCE);
    if (!result.ok) {
      const message =
        result.reason === 'PENDING' ? `delivery ${id} is still pending: it will be tried again by itself` : result.reason === 'ENDPOINT_DISABLED' ? `the endpoint of delivery ${id} is disabled: enable it first` : `no webhook delivery with the ID ${id}`;
      throw new CliError(message);
    }
    io.stdout.write(`Queued delivery ${result.delivery.id} (a redelivery of ${id}, webhook-id ${result.delivery.webhookId}); the running server sends it.\n`);
  });
}

function describeEndpoint(endpoint: WebhookEndpoint): string {
  const lines: Array<[string, string]> = [
    ['ID', endpoint.id],
    ['URL', clean(endpoint.url)],
    ['Description', clean(endpoint.description) || '-'],
    ['Events', endpoint.eventTypes.join(', ')],
    ['State', stateOf(endpoint)],
    ['Failing since', time(endpoint.failingSince)],
    ['Created', time(endpoint.createdAt)],
    ['Updated', time(endpoint.updatedAt)],
    ['Secret rotated', endpoint.secretRotatedAt === null ? 'never' : time(endpoint.secretRotatedAt)],
    ...(endpoint.previousSecretExpiresAt === null ? [] : [['Previous secret until', time(endpoint.previousSecretExpiresAt)] as [string, string]]),
  ];
  const width = Math.max(...lines.map(([label]) => label.length));
  return lines.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}\n`).join('');
}

/** Left-aligned columns. */
function formatTable(header: string[], rows: string[][]): string {
  const cells = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => [...row[column]!].length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell + ' '.repeat(widths[column]! - [...cell].length))).join('  ')).join('\n') + '\n';
}
