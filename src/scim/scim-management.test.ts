/**
 * Managing SCIM outside the protocol, on every backend: the administrators' token API, the
 * `gatehouse scim tokens` commands (run in-process on the app's services), the role-mapping rules,
 * and the per-token rate limit answered in SCIM's error shape.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { api, uniqueEmail } from '../organizations/organizations.test-helpers.ts';
import { CliError } from '../cli/args.ts';
import type { BuiltServices } from '../module.ts';
import { runScimCommand } from './scim.commands.ts';
import { SCIM_USAGE } from './scim.cli.ts';

const PASSWORD = 'correct horse battery staple';

async function cli(t: TestApp, args: string[]): Promise<{ stdout: string; error: CliError | null }> {
  const stdout = new PassThrough();
  let text = '';
  stdout.on('data', (chunk) => (text += String(chunk)));
  const io = { stdin: new PassThrough(), stdout, stderr: new PassThrough() };
  try {
    await runScimCommand(args, io, { usage: SCIM_USAGE, withServices: (_io, fn) => fn(t.services as unknown as BuiltServices) });
    return { stdout: text, error: null };
  } catch (error) {
    if (error instanceof CliError) return { stdout: text, error };
    throw error;
  }
}

for (const backend of await backends()) {
  describe(`SCIM management (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const t = useTestApp(backend, { env: { RATE_LIMIT_SCIM_PER_TOKEN: '3/1m' } });

    async function organization(name: string) {
      const owner = await createSignedInUser(t, { email: uniqueEmail('owner'), password: PASSWORD });
      const created = await api(t, owner.token).post('/api/organizations', { name });
      return { owner, organization: created.json().organization as { id: string; slug: string } };
    }

    it('lets administrators manage any organization’s tokens, and no one else', async () => {
      const { organization: org } = await organization('Admin Tokens');
      const admin = await createSignedInUser(t, { email: uniqueEmail('admin'), password: PASSWORD, roles: ['ADMIN'] });
      const stranger = await createSignedInUser(t, { email: uniqueEmail('stranger'), password: PASSWORD });
      const created = await api(t, admin.token).post(`/api/admin/organizations/${org.id}/scim-tokens`, {});
      assert.equal(created.statusCode, 201, created.body);
      assert.equal((await api(t, admin.token).get(`/api/admin/organizations/${org.id}/scim-tokens`)).json().tokens.length, 1);
      assert.equal((await api(t, stranger.token).get(`/api/admin/organizations/${org.id}/scim-tokens`)).statusCode, 403);
      assert.equal((await api(t, stranger.token).get(`/api/organizations/${org.id}/scim-tokens`)).statusCode, 404, 'a stranger does not see the organization');
      assert.equal((await api(t, admin.token).delete(`/api/admin/organizations/${org.id}/scim-tokens/nope`)).json().error, 'SCIM_TOKEN_NOT_FOUND');
    });

    it('runs gatehouse scim tokens create, list, rotate and revoke', async () => {
      const { organization: org } = await organization('Cli Tokens');
      const created = await cli(t, ['tokens', 'create', '--org', org.slug, '--name', 'Entra', '--json']);
      assert.equal(created.error, null);
      const { token, id, baseUrl } = JSON.parse(created.stdout);
      assert.match(token, /^gatehouse_scim_/);
      assert.equal(baseUrl, `${t.config.authUrl}/scim/v2`);
      const listed = JSON.parse((await cli(t, ['tokens', 'list', '--org', org.id, '--json'])).stdout);
      assert.deepEqual(listed.map((item: { name: string }) => item.name), ['Entra']);
      assert.ok(!JSON.stringify(listed).includes(token));
      const rotated = JSON.parse((await cli(t, ['tokens', 'rotate', '--org', org.slug, '--id', id, '--json'])).stdout);
      assert.notEqual(rotated.token, token);
      assert.equal((await cli(t, ['tokens', 'revoke', '--org', org.slug, '--id', id])).error?.exitCode, 1, 'the rotated token is revoked already');
      assert.equal((await cli(t, ['tokens', 'revoke', '--org', org.slug, '--id', rotated.id])).stdout, 'Revoked.\n');
      assert.equal((await cli(t, ['tokens', 'list'])).error?.exitCode, 2);
      assert.equal((await cli(t, ['tokens', 'explode', '--org', org.slug])).error?.exitCode, 2);
      assert.equal((await cli(t, ['tokens', 'list', '--org', 'no-such-org'])).error?.exitCode, 1);
    });

    it('refuses OWNER and duplicate groups in role mappings', async () => {
      const { owner, organization: org } = await organization('Mappings');
      const put = (mappings: unknown) =>
        t.app.inject({ method: 'PUT', url: `/api/organizations/${org.id}/scim-role-mappings`, headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, payload: JSON.stringify({ mappings }) });
      assert.equal((await put([{ group: 'Owners', role: 'OWNER' }])).json().error, 'SCIM_ROLE_MAPPING_INVALID');
      assert.equal((await put([{ group: 'A', role: 'ADMIN' }, { group: 'a', role: 'MEMBER' }])).json().error, 'SCIM_ROLE_MAPPING_INVALID');
      assert.equal((await put([{ group: 'Admins', role: 'ADMIN' }])).statusCode, 200);
      assert.deepEqual((await api(t, owner.token).get(`/api/organizations/${org.id}/scim-role-mappings`)).json().mappings, [{ group: 'Admins', role: 'ADMIN' }]);
    });

    it('limits requests per token (RATE_LIMIT_SCIM_PER_TOKEN), in SCIM’s error shape with Retry-After', async () => {
      const { owner, organization: org } = await organization('Limits');
      const { token } = (await api(t, owner.token).post(`/api/organizations/${org.id}/scim-tokens`, {})).json();
      const other = (await api(t, owner.token).post(`/api/organizations/${org.id}/scim-tokens`, {})).json().token;
      const get = (bearer: string) => t.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { authorization: `Bearer ${bearer}` } });
      for (let index = 0; index < 3; index++) assert.equal((await get(token)).statusCode, 200);
      const refused = await get(token);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().scimType, 'tooMany');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal((await get(other)).statusCode, 200, 'each token has its own budget');
    });
  });
}
