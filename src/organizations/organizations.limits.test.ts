/**
 * What one account may make the organizations module do, on every backend (issue 30.5):
 * MAX_ORGANIZATIONS_PER_USER holds against concurrent creations.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { CLI_SOURCE } from '../audit/audit.service.ts';
import { api, assertError, uniqueEmail } from './organizations.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';
const MAX_OWNED = 3;

for (const backend of await backends()) {
  describe(`organization limits (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const t = useTestApp(backend, { env: { MAX_ORGANIZATIONS_PER_USER: String(MAX_OWNED) } });

    async function person(label: string) {
      const user = await createSignedInUser(t, { email: uniqueEmail(label), password: PASSWORD });
      return { ...user, api: api(t, user.token) };
    }

    it('regression (issue 30.5): concurrent creations at MAX_ORGANIZATIONS_PER_USER: exactly the cap succeeds', async () => {
      const ownedBy = async (userId: string) => (await t.services.organizations.listFor(userId)).filter((membership) => membership.role === 'OWNER').length;
      // Through the API, all at once.
      const owner = await person('cap-api');
      const answers = await Promise.all(Array.from({ length: 3 * MAX_OWNED }, (_, index) => owner.api.post('/api/organizations', { name: `Capped ${index}` })));
      assert.equal(answers.filter((response) => response.statusCode === 201).length, MAX_OWNED, answers.map((response) => `${response.statusCode} ${response.body}`).join('\n'));
      for (const refused of answers.filter((response) => response.statusCode !== 201)) assertError(refused, 409, 'ORGANIZATION_LIMIT_REACHED');
      assert.equal(await ownedBy(owner.id), MAX_OWNED);

      // The service the API and pages call, all at once: its reads interleave on SQLite too (there,
      // injected requests mostly run one after the other, each handler never waiting on I/O).
      const other = await person('cap-service');
      const policyFor = (await t.services.users.findUserById(other.id))!;
      const results = await Promise.all(Array.from({ length: 3 * MAX_OWNED }, (_, index) => t.services.organizations.create({ name: `Capped ${index}` }, other.id, CLI_SOURCE, { policyFor })));
      assert.equal(results.filter((result) => result.ok).length, MAX_OWNED);
      assert.deepEqual([...new Set(results.flatMap((result) => (result.ok ? [] : [result.reason])))], ['ORGANIZATION_LIMIT_REACHED']);
      assert.equal(await ownedBy(other.id), MAX_OWNED);

      // The operator's command line is not held to it.
      assert.ok((await t.services.organizations.create({ name: 'By the operator' }, other.id, CLI_SOURCE)).ok);
    });
  });
}
