/**
 * What one account may make the organizations module do, on every backend (issue 30.5): invitation
 * mail has a budget per inviter (over all their organizations) and per invited address (from
 * everyone), answered 429 INVITATION_LIMIT_REACHED on the API and the pages alike; refused
 * invitations spend no budget; and MAX_ORGANIZATIONS_PER_USER holds against concurrent creations.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { CLI_SOURCE } from '../audit/audit.service.ts';
import { api, assertError, uniqueEmail } from './organizations.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';
const PER_INVITER = 4;
const PER_ADDRESS = 3;
const MAX_OWNED = 3;
const LOCALES = ['en', 'de', 'es', 'fr', 'ja', 'pt-BR'] as const;

for (const backend of await backends()) {
  describe(`organization limits (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const t = useTestApp(backend, {
      env: {
        RATE_LIMIT_ORGANIZATION_INVITATIONS: '1000/1h',
        RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_INVITER: `${PER_INVITER}/1d`,
        RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_ADDRESS: `${PER_ADDRESS}/1d`,
        MAX_ORGANIZATIONS_PER_USER: String(MAX_OWNED),
      },
    });

    async function person(label: string) {
      const user = await createSignedInUser(t, { email: uniqueEmail(label), password: PASSWORD });
      return { ...user, api: api(t, user.token) };
    }

    async function organizationOf(owner: { api: ReturnType<typeof api> }, name: string): Promise<string> {
      const created = await owner.api.post('/api/organizations', { name });
      assert.equal(created.statusCode, 201, created.body);
      return created.json().organization.id as string;
    }

    const invite = (inviter: { api: ReturnType<typeof api> }, organizationId: string, email: string) => inviter.api.post(`/api/organizations/${organizationId}/invitations`, { email, role: 'MEMBER' });

    async function mailsTo(email: string): Promise<number> {
      return (await t.services.mail.listRecent(1000)).filter((message) => message.to === email && message.template === 'organization-invitation').length;
    }

    function assertBudgetRefusal(response: LightMyRequestResponse, label: string) {
      assertError(response, 429, 'INVITATION_LIMIT_REACHED', label);
      assert.ok(Number(response.headers['retry-after']) > 0, `${label}: Retry-After`);
    }

    it("regression (issue 30.5): an inviter's budget spans all their organizations, re-sends included", async () => {
      const owner = await person('budget-owner');
      const [first, second] = [await organizationOf(owner, 'First Budget'), await organizationOf(owner, 'Second Budget')];
      const member = await person('budget-member');
      assert.ok((await t.services.organizations.addMember(first, member.id, 'ADMIN', CLI_SOURCE)).ok);
      // A refused invitation (a member's address) spends nothing.
      assertError(await invite(owner, first, member.email), 409, 'ALREADY_MEMBER');

      // Two organizations, and a re-sent invitation (it mails again): one budget.
      const resent = uniqueEmail('resent');
      const sent = [await invite(owner, first, resent), await invite(owner, first, resent), await invite(owner, second, uniqueEmail('a')), await invite(owner, second, uniqueEmail('b'))];
      assert.deepEqual(sent.map((response) => response.statusCode), Array(PER_INVITER).fill(201), sent.map((response) => response.body).join('\n'));
      const over = uniqueEmail('over');
      assertBudgetRefusal(await invite(owner, second, over), 'past the budget, in another organization');
      assertBudgetRefusal(await invite(owner, first, uniqueEmail('over-again')), 'and in the first');
      assert.equal(await mailsTo(over), 0, 'nothing mailed');

      // The budget is the inviter's: another manager of the same organization still invites.
      assert.equal((await invite(member, first, uniqueEmail('by-member'))).statusCode, 201);
    });

    it("regression (issue 30.5): an address's budget holds across inviters and organizations, the same with or without an account", async () => {
      const inviters = [];
      for (let index = 0; index <= PER_ADDRESS; index++) {
        const inviter = await person(`address-inviter-${index}`);
        inviters.push({ ...inviter, organizationId: await organizationOf(inviter, `Address Budget ${index}`) });
      }
      const withAccount = uniqueEmail('address-known');
      await createUser(t.services, { email: withAccount, password: PASSWORD });
      const withoutAccount = uniqueEmail('address-unknown');

      const refusals: LightMyRequestResponse[] = [];
      for (const address of [withAccount, withoutAccount]) {
        // The normal form is counted: case and surrounding spaces make no other address.
        const spellings = [address, address.toUpperCase(), ` ${address.replace(/^./, (c) => c.toUpperCase())} `];
        for (let index = 0; index < PER_ADDRESS; index++) {
          const sent = await invite(inviters[index]!, inviters[index]!.organizationId, spellings[index]!);
          assert.equal(sent.statusCode, 201, `${address}, inviter ${index}: ${sent.body}`);
        }
        const refused = await invite(inviters[PER_ADDRESS]!, inviters[PER_ADDRESS]!.organizationId, address);
        assertBudgetRefusal(refused, address);
        refusals.push(refused);
        assert.equal(await mailsTo(address), PER_ADDRESS, `${address}: mailed only within its budget`);
      }
      // An account or none: the same answer.
      const [known, unknown] = refusals.map((response) => ({ status: response.statusCode, body: response.json(), hasRetryAfter: response.headers['retry-after'] !== undefined }));
      assert.deepEqual(known, unknown);

      // The refused inviter spent none of their own budget on those two refusals.
      const last = inviters[PER_ADDRESS]!;
      for (let index = 0; index < PER_INVITER; index++) assert.equal((await invite(last, last.organizationId, uniqueEmail('still-fine'))).statusCode, 201);
    });

    it('regression (issue 30.5): the organization page says the budget is spent, in every language', async () => {
      const email = uniqueEmail('page-budget');
      const user = await createUser(t.services, { email, password: PASSWORD });
      const created = await t.services.organizations.create({ name: 'Page Budget' }, user.id, CLI_SOURCE);
      assert.ok(created.ok);
      const page = `/organizations/${created.organization.id}`;
      const jar = new CookieJar();
      jar.store(await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } }));
      const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie: jar.header() } });
      const csrfToken = hiddenValue((await get(page)).body, 'csrfToken');
      const post = (to: string) =>
        t.app.inject({
          method: 'POST',
          url: `${page}/invitations`,
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin: t.config.authUrl, cookie: jar.header() },
          payload: new URLSearchParams({ email: to, role: 'MEMBER', csrfToken }).toString(),
        });
      for (let index = 0; index < PER_INVITER; index++) assert.equal((await post(uniqueEmail('page-invitee'))).headers.location, `${page}?notice=INVITATION_SENT`);
      const refused = await post(uniqueEmail('page-over'));
      assert.equal(refused.statusCode, 303);
      assert.equal(refused.headers.location, `${page}?error=INVITATION_LIMIT_REACHED`);
      for (const locale of LOCALES) {
        const catalog = JSON.parse(readFileSync(new URL(`./messages/${locale}.json`, import.meta.url), 'utf8')) as Record<string, string>;
        const shown = await get(`${page}?error=INVITATION_LIMIT_REACHED&lang=${locale}`);
        assert.ok(shown.body.includes(catalog['organizations.error.INVITATION_LIMIT_REACHED']!), `${locale}: the message`);
        assert.match(shown.body, /<code>INVITATION_LIMIT_REACHED<\/code>/, `${locale}: the code`);
      }
    });

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
