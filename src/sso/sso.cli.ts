/**
 * `gatehouse sso …`: SSO connections at the command line, through the same service as the API;
 * changes are audited as made at the command line. An OIDC client secret is read from standard
 * input only (`--client-secret-stdin`): an argument would be visible to every user of the machine.
 * Exit codes as the rest of the command: 0 done, 1 the operation failed, 2 the command line is wrong.
 */
import { readFile } from 'node:fs/promises';
import type { CliCommandGroup, CliCommandRunner } from '../module.ts';
import { CliError, formatTable, parseCommandLine, runSubcommand, writeJson, type CliIo, type OptionSpecs } from '../cli/args.ts';

export const SSO_USAGE = `  gatehouse sso list [--org ORG] [--json]
                                    SSO connections, of one organization (its id or slug) or all
  gatehouse sso show ID [--json]    one connection, with the values to paste at the IdP
  gatehouse sso create --org ORG --name N (--metadata-file F | --metadata-url U) [--idp-initiated] [--enforce] [--json]
                                    add a SAML connection from the IdP's metadata
  gatehouse sso create --org ORG --name N --protocol oidc --issuer URL --client-id C --client-secret-stdin [--enforce] [--json]
                                    add an OpenID Connect connection (the secret read from standard input)
  gatehouse sso enforce ID on|off   refuse (or allow again) other ways in for the organization's verified domains
  gatehouse sso delete ID           delete a connection (its members keep their accounts)
  gatehouse sso metadata ID         print the SAML SP metadata to give the IdP
  gatehouse sso setup-link --org ORG [--days N] [--connection ID]
                                    a setup link for the organization's IT admin (printed once; default 7 days)
  gatehouse sso revoke-setup-link --org ORG LINK_ID
                                    stop a setup link now`;

export const cli: readonly CliCommandGroup[] = [{ name: 'sso', usage: SSO_USAGE, order: 55, load: async () => runSsoCommand }];

const runtime = async () => {
  const [{ CLI_SOURCE }, { toView }, { oidcRedirectUri }] = await Promise.all([import('../audit/audit.service.ts'), import('./sso-admin.routes.ts'), import('./sso-endpoints.ts')]);
  return { CLI_SOURCE, toView, oidcRedirectUri };
};

function parse<const T extends OptionSpecs>(command: string, args: string[], options: T, positionals: number) {
  return parseCommandLine(args, options, { command: `sso ${command}`, usage: SSO_USAGE, positionals, what: 'connection ID' });
}

async function readAll(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export const runSsoCommand: CliCommandRunner = async (args, io, context) => {
  const withServices = context.withServices.bind(context);
  const show = async (id: string, json: boolean | undefined) => {
    const { toView, oidcRedirectUri } = await runtime();
    await withServices(io, async ({ sso, config }) => {
      const connection = await sso.connections.get(id);
      if (connection === null) throw new CliError('no such SSO connection');
      const view = toView(connection, config.authUrl, oidcRedirectUri(config.authUrl, connection.id));
      if (json === true) return writeJson(io, view);
      const lines = [
        ['id', view.id],
        ['organization', view.organizationId],
        ['name', view.name],
        ['protocol', view.protocol],
        ['enforce', String(view.enforce)],
        ['idp-initiated', String(view.idpInitiated)],
        ...Object.entries(view.identityProvider).map(([key, value]) => [`idp ${key}`, String(value)]),
        ...Object.entries(view.serviceProvider).filter(([key]) => !key.endsWith('Certificate')).map(([key, value]) => [`sp ${key}`, String(value)]),
      ];
      io.stdout.write(formatTable(['FIELD', 'VALUE'], lines));
    });
  };

  await runSubcommand('sso', SSO_USAGE, {
    async list(rest) {
      const { values } = parse('list', rest, { org: { type: 'string' }, json: { type: 'boolean' } }, 0);
      const { toView, oidcRedirectUri } = await runtime();
      await withServices(io, async ({ sso, organizations, config }) => {
        let organizationId: string | undefined;
        if (values.org !== undefined) {
          const organization = await organizations.find(values.org);
          if (organization === null) throw new CliError('no such organization');
          organizationId = organization.id;
        }
        const connections = await sso.connections.list(organizationId);
        if (values.json === true) return writeJson(io, { connections: connections.map((connection) => toView(connection, config.authUrl, oidcRedirectUri(config.authUrl, connection.id))) });
        if (connections.length === 0) return void io.stdout.write('No SSO connections.\n');
        io.stdout.write(formatTable(['ID', 'ORGANIZATION', 'PROTOCOL', 'ENFORCE', 'NAME'], connections.map((c) => [c.id, c.organizationId, c.protocol, c.enforce ? 'yes' : 'no', c.name])));
      });
    },
    async show(rest) {
      const { values, positionals } = parse('show', rest, { json: { type: 'boolean' } }, 1);
      await show(positionals[0]!, values.json);
    },
    async create(rest) {
      const { values } = parse(
        'create',
        rest,
        {
          org: { type: 'string' }, name: { type: 'string' }, protocol: { type: 'string' }, 'metadata-file': { type: 'string' }, 'metadata-url': { type: 'string' },
          'idp-initiated': { type: 'boolean' }, enforce: { type: 'boolean' }, issuer: { type: 'string' }, 'client-id': { type: 'string' }, 'client-secret-stdin': { type: 'boolean' }, json: { type: 'boolean' },
        },
        0,
      );
      if (values.org === undefined || values.name === undefined) throw new CliError('--org and --name are required', 2);
      const protocol = values.protocol ?? 'saml';
      let input: Record<string, unknown>;
      if (protocol === 'saml') {
        if ((values['metadata-file'] === undefined) === (values['metadata-url'] === undefined)) throw new CliError('name the IdP metadata: --metadata-file or --metadata-url (one of them)', 2);
        const xml = values['metadata-file'] === undefined ? undefined : await readFile(values['metadata-file'], 'utf8').catch(() => {
          throw new CliError(`cannot read ${values['metadata-file']}`, 2);
        });
        input = { protocol, name: values.name, enforce: values.enforce === true, idpInitiated: values['idp-initiated'] === true, ...(xml !== undefined && { idpMetadataXml: xml }), ...(values['metadata-url'] !== undefined && { idpMetadataUrl: values['metadata-url'] }) };
      } else if (protocol === 'oidc') {
        if (values.issuer === undefined || values['client-id'] === undefined || values['client-secret-stdin'] !== true) throw new CliError('an oidc connection needs --issuer, --client-id and --client-secret-stdin', 2);
        input = { protocol, name: values.name, enforce: values.enforce === true, issuer: values.issuer, clientId: values['client-id'], clientSecret: await readAll(io.stdin) };
      } else {
        throw new CliError('--protocol must be saml or oidc', 2);
      }
      const [{ CLI_SOURCE }, { connectionInput }] = await Promise.all([runtime(), import('./sso.model.ts')]);
      const parsed = connectionInput.safeParse(input);
      if (!parsed.success) throw new CliError(`the connection was not created:\n${parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`).join('\n')}`, 2);
      let id = '';
      await withServices(io, async ({ sso, organizations }) => {
        const organization = await organizations.find(values.org!);
        if (organization === null) throw new CliError('no such organization');
        const created = await sso.connections.create(organization.id, parsed.data, CLI_SOURCE);
        if (!created.ok) throw new CliError(`the connection was not created: ${'message' in created ? created.message : created.reason}`, created.reason === 'SSO_INVALID_CONNECTION' ? 2 : 1);
        id = created.connection.id;
      });
      if (values.json === true) return show(id, true);
      io.stdout.write(`Created SSO connection ${id}\n`);
      await show(id, false);
    },
    async enforce(rest) {
      const { positionals } = parse('enforce', rest, {}, 2);
      const [id, state] = positionals as [string, string];
      if (state !== 'on' && state !== 'off') throw new CliError('say on or off', 2);
      const { CLI_SOURCE } = await runtime();
      await withServices(io, async ({ sso }) => {
        const updated = await sso.connections.update(id, { enforce: state === 'on' }, CLI_SOURCE);
        if (!updated.ok) throw new CliError('no such SSO connection');
        io.stdout.write(`Enforcement ${state} for ${id}\n`);
      });
    },
    async delete(rest) {
      const { positionals } = parse('delete', rest, {}, 1);
      const { CLI_SOURCE } = await runtime();
      await withServices(io, async ({ sso }) => {
        const deleted = await sso.connections.delete(positionals[0]!, CLI_SOURCE);
        if (!deleted.ok) throw new CliError('no such SSO connection');
        io.stdout.write(`Deleted SSO connection ${positionals[0]}\n`);
      });
    },
    async 'setup-link'(rest) {
      const { values } = parse('setup-link', rest, { org: { type: 'string' }, days: { type: 'string' }, connection: { type: 'string' } }, 0);
      if (values.org === undefined) throw new CliError('--org is required', 2);
      const days = values.days === undefined ? undefined : Number(values.days);
      if (days !== undefined && !(Number.isInteger(days) && days >= 1 && days <= 30)) throw new CliError('--days must be a whole number from 1 to 30', 2);
      const { CLI_SOURCE } = await runtime();
      const { OPERATOR } = await import('../organizations/organizations.model.ts');
      await withServices(io, async ({ sso, organizations }) => {
        const organization = await organizations.find(values.org!);
        if (organization === null) throw new CliError('no such organization');
        const created = await sso.setup.create(organization.id, { expiresInDays: days, connectionId: values.connection }, OPERATOR, CLI_SOURCE);
        if (!created.ok) throw new CliError(`the setup link was not created: ${created.reason}`);
        io.stdout.write(`Setup link ${created.link.id} for ${organization.slug}, until ${new Date(created.link.expiresAt).toISOString()} (shown once):\n${created.url}\n`);
      });
    },
    async 'revoke-setup-link'(rest) {
      const { values, positionals } = parse('revoke-setup-link', rest, { org: { type: 'string' } }, 1);
      if (values.org === undefined) throw new CliError('--org is required', 2);
      const { CLI_SOURCE } = await runtime();
      const { OPERATOR } = await import('../organizations/organizations.model.ts');
      await withServices(io, async ({ sso, organizations }) => {
        const organization = await organizations.find(values.org!);
        if (organization === null) throw new CliError('no such organization');
        const revoked = await sso.setup.revoke(organization.id, positionals[0]!, OPERATOR, CLI_SOURCE);
        if (!revoked.ok) throw new CliError('no such active setup link');
        io.stdout.write(`Revoked setup link ${positionals[0]}\n`);
      });
    },
    async metadata(rest) {
      const { positionals } = parse('metadata', rest, {}, 1);
      await withServices(io, async ({ sso }) => {
        const metadata = await sso.spMetadata(positionals[0]!);
        if (metadata === null) throw new CliError('no such SAML connection');
        io.stdout.write(`${metadata}\n`);
      });
    },
  }, args, io as CliIo);
};
