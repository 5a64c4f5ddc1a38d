/**
 * Account deletion, by its owner and by an administrator, on SQLite and PostgreSQL, in both
 * session strategies: everything of the user goes (sessions, with their tokens refused at once;
 * roles, reset tokens, factors, mails to the address, personal data in the audit log), nothing of
 * anyone else's does, and the refusals (not recent, no factor, last ADMIN, own account through the
 * admin API) change nothing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, createUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { enrolTotp, totpCode } from '../../test/helpers/totp.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { DELETE_PAGE_CODES } from './account-deletion-pages.ts';
import { readMessages } from '../i18n/catalog.ts';
import { join } from 'node:path';

const PASSWORD = 'correct horse battery staple';
const TEN_MINUTES = 10 * 60_000;

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`account deletion (${strategy} strategy, ${backend.name})`, { skip: backend.skip }, () => {
      const clock = fakeClock();
      const t = useTestApp(backend, { env: { SESSION_STRATEGY: strategy }, clock });
      let count = 0;
      const email = (label: string) => `${label}-${++count}@example.com`;
      const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
      const db = () => t.services.storage.db;

      /** A browser signed in with the form, holding a CSRF token of its session. */
      async function signedInBrowser(address: string) {
        const browser = await formBrowser(t.app);
        const origin = new URL(t.config.authUrl).origin;
        const signedIn = await postForm(t.app, browser, '/api/auth/signin', { email: address, password: PASSWORD }, origin);
        assert.equal(signedIn.statusCode, 303, signedIn.body);
        browser.csrfToken = (await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: browser.jar.header() } })).json().csrfToken;
        return { browser, origin };
      }

      /** Everything of the user's in the tables that hold a user's things. */
      async function holdings(userId: string, address: string) {
        const countOf = async (query: string) => Number((await sql<{ n: number | string }>`${sql.raw(query)}`.execute(db())).rows[0]!.n);
        return {
          users: await countOf(`select count(*) as n from users where id = '${userId}'`),
          roles: await countOf(`select count(*) as n from user_roles where user_id = '${userId}'`),
          sessions: await countOf(`select count(*) as n from sessions where user_id = '${userId}'`),
          actionTokens: await countOf(`select count(*) as n from action_tokens where user_id = '${userId}'`),
          totp: await countOf(`select count(*) as n from mfa_totp where user_id = '${userId}'`),
          recoveryCodes: await countOf(`select count(*) as n from mfa_recovery_codes where user_id = '${userId}'`),
          mails: await countOf(`select count(*) as n from mail_outbox where to_address = '${address}'`),
          auditWithPersonalData: await countOf(
            `select count(*) as n from audit_events where (user_id = '${userId}' or actor_user_id = '${userId}') and (ip is not null or user_agent is not null or email is not null)`,
          ),
          failuresNamingAddress: await countOf(`select count(*) as n from audit_events where email = '${address}'`),
        };
      }

      /** A user with two sessions, a reset mail (and token), a failed sign-in naming the address, audit rows with an IP and browser. */
      async function busyUser(label: string, roles: string[] = []) {
        const address = email(label);
        const user = await createSignedInUser(t, { email: address, password: PASSWORD, roles });
        const second = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'user-agent': 'Second Browser/1.0' }, payload: { email: address, password: PASSWORD } });
        assert.equal(second.statusCode, 200, second.body);
        const failed = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: address, password: 'not the password at all' } });
        assert.equal(failed.statusCode, 401);
        const reset = await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email: address } });
        assert.equal(reset.statusCode, 202, reset.body);
        return { ...user, address, secondToken: second.json().token as string, refreshToken: second.json().refreshToken as string };
      }

      it('by its owner: every session ends at once, everything of theirs is removed or erased, and nobody else’s', async () => {
        const user = await busyUser('owner');
        const bystander = await busyUser('bystander');
        const before = await holdings(user.id, user.address);
        assert.ok(before.sessions === 2 && before.actionTokens >= 1 && before.mails >= 1 && before.auditWithPersonalData > 0 && before.failuresNamingAddress === 1, JSON.stringify(before));
        const bystanderBefore = await holdings(bystander.id, bystander.address);

        const deleted = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: { ...bearer(user.token), 'user-agent': 'Deleting Browser/1.0' } });
        assert.equal(deleted.statusCode, 200, deleted.body);
        assert.deepEqual(deleted.json(), { ok: true });

        // Both sessions' tokens are refused at once (the jwt strategy through the revocation list), and the refresh token is dead.
        for (const token of [user.token, user.secondToken]) {
          assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(token) })).statusCode, 401);
        }
        const refresh = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: user.refreshToken } });
        assert.equal(refresh.statusCode, 401, refresh.body);
        assert.deepEqual(await holdings(user.id, user.address), {
          users: 0,
          roles: 0,
          sessions: 0,
          actionTokens: 0,
          totp: 0,
          recoveryCodes: 0,
          mails: 0,
          auditWithPersonalData: 0,
          failuresNamingAddress: 0,
        });
        // The history keeps its shape: the user's events are still there, by id, without personal data.
        const kept = await db().selectFrom('audit_events').select(['type', 'details', 'ip', 'user_agent']).where('user_id', '=', user.id).orderBy('created_at').execute();
        assert.ok(kept.some((event) => event.type === 'signin.success'), 'earlier events stay');
        const deletion = kept.find((event) => event.type === 'user.deleted');
        assert.ok(deletion !== undefined, 'user.deleted is recorded');
        assert.deepEqual(JSON.parse(deletion.details!), { by: 'self' });
        assert.equal(deletion.ip, null);
        assert.equal(deletion.user_agent, null);
        assert.ok(kept.some((event) => event.type === 'user.sessions_ended'), 'the sessions’ ending is recorded too');

        const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.address, password: PASSWORD } });
        assert.equal(signIn.statusCode, 401, 'the account is gone');

        // Nothing of the bystander's changed.
        assert.deepEqual(await holdings(bystander.id, bystander.address), bystanderBefore);
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(bystander.token) })).statusCode, 200);
      });

      it('by its owner: needs a recent sign-in, and the second factor of an account that has one', async () => {
        const user = await busyUser('stale');
        clock.advance(TEN_MINUTES + 1_000);
        const stale = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(user.token) });
        assert.equal(stale.statusCode, 403, stale.body);
        assert.equal(stale.json().error, 'REAUTH_REQUIRED');
        assert.equal((await holdings(user.id, user.address)).users, 1, 'nothing deleted');

        // A fresh sign-in of an account with an authenticator app, that has not used it in this session.
        const withFactor = await createSignedInUser(t, { email: email('factor'), password: PASSWORD });
        const secret = await enrolTotp(t.services as never, (await t.services.users.findUserById(withFactor.id))!, clock);
        const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: withFactor.email, password: PASSWORD } });
        const { mfaToken } = signedIn.json();
        assert.ok(typeof mfaToken === 'string', signedIn.body);
        // Its older session (from before the factor) never used it: refused.
        const noFactor = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(withFactor.token) });
        assert.equal(noFactor.statusCode, 403, noFactor.body);
        assert.equal(noFactor.json().error, 'REAUTH_REQUIRED');
        // Stepping up with a code lets it through.
        const stepUp = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/step-up', headers: bearer(withFactor.token), payload: { code: totpCode(secret, clock()) } });
        assert.equal(stepUp.statusCode, 200, stepUp.body);
        const deleted = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(stepUp.json().token) });
        assert.equal(deleted.statusCode, 200, deleted.body);
        assert.deepEqual(await holdings(withFactor.id, withFactor.email), {
          users: 0, roles: 0, sessions: 0, actionTokens: 0, totp: 0, recoveryCodes: 0, mails: 0, auditWithPersonalData: 0, failuresNamingAddress: 0,
        });
      });

      it('by an administrator: another user’s account; never their own, never by a non-admin, never the last ADMIN', async () => {
        const admin = await createSignedInUser(t, { email: email('admin'), password: PASSWORD, roles: ['ADMIN'] });
        const target = await busyUser('target');
        const plain = await createSignedInUser(t, { email: email('plain'), password: PASSWORD });

        const byPlain = await t.app.inject({ method: 'DELETE', url: `/api/admin/users/${target.id}`, headers: bearer(plain.token) });
        assert.equal(byPlain.statusCode, 403, byPlain.body);
        const own = await t.app.inject({ method: 'DELETE', url: `/api/admin/users/${admin.id}`, headers: bearer(admin.token) });
        assert.equal(own.statusCode, 409, own.body);
        assert.equal(own.json().error, 'SELF_DELETION_VIA_ADMIN');
        const unknown = await t.app.inject({ method: 'DELETE', url: '/api/admin/users/no-such-user', headers: bearer(admin.token) });
        assert.equal(unknown.statusCode, 404, unknown.body);

        const deleted = await t.app.inject({ method: 'DELETE', url: `/api/admin/users/${target.id}`, headers: bearer(admin.token) });
        assert.equal(deleted.statusCode, 200, deleted.body);
        assert.equal((await holdings(target.id, target.address)).users, 0);
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(target.token) })).statusCode, 401);
        const event = await db().selectFrom('audit_events').select(['actor_user_id', 'details']).where('type', '=', 'user.deleted').where('user_id', '=', target.id).executeTakeFirstOrThrow();
        assert.equal(event.actor_user_id, admin.id);
        assert.deepEqual(JSON.parse(event.details!), { by: 'admin' });
        const again = await t.app.inject({ method: 'DELETE', url: `/api/admin/users/${target.id}`, headers: bearer(admin.token) });
        assert.equal(again.statusCode, 404, 'already gone');

        // The only enabled ADMIN cannot delete their own account either (nobody would be left to administer).
        const onlyAdmins = await db().selectFrom('user_roles').innerJoin('users', 'users.id', 'user_roles.user_id').select('users.id').where('role', '=', 'ADMIN').where('disabled_at', 'is', null).execute();
        for (const other of onlyAdmins.filter((row) => row.id !== admin.id)) await t.services.users.updateUser(other.id, { disabled: true });
        const last = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(admin.token) });
        assert.equal(last.statusCode, 409, last.body);
        assert.equal(last.json().error, 'LAST_ADMIN');
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(admin.token) })).statusCode, 200, 'nothing ended');
      });

      it('with organizations: the only OWNER of one with others must hand it over first; then memberships go and a solo organization with them', async () => {
        const owner = await busyUser('org-owner');
        const colleague = await createSignedInUser(t, { email: email('org-colleague'), password: PASSWORD });
        const source = SYSTEM_SOURCE;
        const organizations = t.services.organizations;
        const shared = await organizations.create({ name: 'Shared Org' }, owner.id, source);
        const solo = await organizations.create({ name: 'Solo Org' }, owner.id, source);
        const theirs = await organizations.create({ name: 'Their Org' }, colleague.id, source);
        assert.ok(shared.ok && solo.ok && theirs.ok);
        assert.ok((await organizations.addMember(shared.organization.id, colleague.id, 'MEMBER', source)).ok);
        assert.ok((await organizations.addMember(theirs.organization.id, owner.id, 'ADMIN', source)).ok);

        const refused = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(owner.token) });
        assert.equal(refused.statusCode, 409, refused.body);
        assert.equal(refused.json().error, 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED');
        assert.equal((await holdings(owner.id, owner.address)).sessions, 2, 'nothing ended');
        const page = await t.app.inject({ method: 'GET', url: '/dashboard/account/delete', headers: bearer(owner.token) });
        assert.ok(page.body.includes('Shared Org') && !page.body.includes('Solo Org'), 'the page names what blocks it');

        assert.ok((await organizations.transferOwnership(shared.organization.id, { userId: owner.id }, colleague.id, source)).ok);
        const deleted = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(owner.token) });
        assert.equal(deleted.statusCode, 200, deleted.body);
        const memberships = await db().selectFrom('organization_members').select(['organization_id', 'user_id', 'role']).where('user_id', 'in', [owner.id, colleague.id]).orderBy('organization_id').execute();
        assert.deepEqual(
          memberships.map((row) => [row.organization_id, row.user_id, row.role]).sort(),
          [[shared.organization.id, colleague.id, 'OWNER'], [theirs.organization.id, colleague.id, 'OWNER']].sort(),
          'the owner’s memberships are gone; the colleague owns what they were handed',
        );
        assert.equal(await organizations.find(solo.organization.id), null, 'the organization only they belonged to is deleted');
        // The webhooks heard of it, in the same transaction: user.deleted and the memberships' removal.
        const types = await db().selectFrom('audit_events').select('type').where('user_id', '=', owner.id).where('created_at', '>=', 0).execute();
        assert.ok(types.some((row) => row.type === 'organization.member.removed'), JSON.stringify(types));
      });

      it('with organizations: the invitations pending for the address go with the account, others’ stay', async () => {
        const owner = await createSignedInUser(t, { email: email('inv-owner'), password: PASSWORD });
        const invitee = await createSignedInUser(t, { email: email('inv-invitee'), password: PASSWORD });
        const created = await t.services.organizations.create({ name: 'Inviting Org' }, owner.id, SYSTEM_SOURCE);
        assert.ok(created.ok);
        const base = `/api/organizations/${created.organization.id}/invitations`;
        const someoneElse = email('inv-someone-else');
        for (const address of [invitee.email, someoneElse]) {
          const invited = await t.app.inject({ method: 'POST', url: base, headers: bearer(owner.token), payload: { email: address } });
          assert.equal(invited.statusCode, 201, invited.body);
        }
        const deleted = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(invitee.token) });
        assert.equal(deleted.statusCode, 200, deleted.body);
        const pending = await db().selectFrom('organization_invitations').select('email').where('organization_id', '=', created.organization.id).execute();
        assert.deepEqual(pending.map((row) => row.email), [someoneElse], 'only the invitation to the deleted address is gone');
        const revoked = await db().selectFrom('audit_events').select(['reason', 'details', 'email']).where('type', '=', 'organization.invitation.revoked').where('reason', '=', 'ACCOUNT_DELETED').execute();
        assert.equal(revoked.length, 1);
        assert.ok(!JSON.stringify(revoked).includes(invitee.email), 'the event names the invitation, never the address');
      });

      it('with organizations: a member made OWNER while the deletion waited for the lock is judged as OWNER', async () => {
        // The deletion lists the user's memberships, then waits for each organization's lock; a
        // transfer holding that lock (the user made OWNER, the old OWNER made ADMIN) commits meanwhile.
        const owner = await createUser(t.services, { email: email('race-owner'), password: PASSWORD });
        const leaving = await createUser(t.services, { email: email('race-member'), password: PASSWORD });
        const created = await t.services.organizations.create({ name: 'Race Org' }, owner.id, SYSTEM_SOURCE);
        assert.ok(created.ok);
        const id = created.organization.id;
        assert.ok((await t.services.organizations.addMember(id, leaving.id, 'ADMIN', SYSTEM_SOURCE)).ok);
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let locked!: () => void;
        const isLocked = new Promise<void>((resolve) => (locked = resolve));
        const transfer = db().transaction().execute(async (trx) => {
          const lock = trx.selectFrom('organizations').selectAll().where('id', '=', id);
          await (backend.name === 'postgres' ? lock.forUpdate() : lock).execute();
          await trx.updateTable('organization_members').set({ role: 'OWNER' }).where('organization_id', '=', id).where('user_id', '=', leaving.id).execute();
          await trx.updateTable('organization_members').set({ role: 'ADMIN' }).where('organization_id', '=', id).where('user_id', '=', owner.id).execute();
          locked();
          await released;
        });
        await isLocked;
        const deletion = t.services.accountDeletion.deleteUser(leaving.id, SYSTEM_SOURCE);
        await new Promise((resolve) => setTimeout(resolve, 300));
        release();
        await transfer;
        const result = await deletion;
        assert.equal(result.ok, false, 'refused: they had become the only OWNER');
        assert.equal(!result.ok && result.reason, 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED');
        const owners = await db().selectFrom('organization_members').select('user_id').where('organization_id', '=', id).where('role', '=', 'OWNER').execute();
        assert.deepEqual(owners.map((row) => row.user_id), [leaving.id], 'the organization keeps its OWNER');
      });

      it('from the pages: the dashboard links to a confirmation page; the form deletes, clears the cookies and says so', async () => {
        const address = email('page');
        const user = await createUser(t.services, { email: address, password: PASSWORD });
        const { browser, origin } = await signedInBrowser(address);
        const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
        assert.match(dashboard.body, /href="\/dashboard\/account\/delete"/);
        const page = await t.app.inject({ method: 'GET', url: '/dashboard/account/delete', headers: { cookie: browser.jar.header() } });
        assert.equal(page.statusCode, 200);
        assert.ok(page.body.includes(address) && page.body.includes('name="confirm"'), page.body);

        const unconfirmed = await postForm(t.app, browser, '/dashboard/account/delete', {}, origin);
        assert.equal(unconfirmed.statusCode, 303);
        assert.equal(unconfirmed.headers.location, '/dashboard/account/delete?error=VALIDATION_ERROR');
        assert.equal((await holdings(user.id, address)).users, 1);

        const confirmed = await postForm(t.app, browser, '/dashboard/account/delete', { confirm: 'yes' }, origin);
        assert.equal(confirmed.statusCode, 303, confirmed.body);
        assert.equal(confirmed.headers.location, '/auth/account-deleted');
        assert.ok(confirmed.cookies.some((cookie) => cookie.value === '' || (cookie.expires !== undefined && cookie.expires.getTime() < Date.now())), 'the session cookies are cleared');
        assert.equal((await holdings(user.id, address)).users, 0);
        const done = await t.app.inject({ method: 'GET', url: '/auth/account-deleted' });
        assert.match(done.body, /Your account has been deleted/);
      });

      it('from the pages, in another language: the deletion page, its sections and the farewell page; an unknown ?error= is not echoed', async () => {
        const address = email('page-lang');
        await createUser(t.services, { email: address, password: PASSWORD });
        const { browser } = await signedInBrowser(address);
        const cookie = browser.jar.header();

        const german = await t.app.inject({ method: 'GET', url: '/dashboard/account/delete?lang=de&error=%3Cb%3ENOT_A_CODE', headers: { cookie } });
        assert.equal(german.statusCode, 200);
        assert.equal(german.headers['content-language'], 'de');
        assert.match(german.body, /<html lang="de"/);
        assert.match(german.body, /<title>Konto löschen · Gatehouse<\/title>/);
        assert.match(german.body, /<h1>Konto löschen<\/h1>/);
        assert.ok(german.body.includes(`Sie sind dabei, das Konto <strong>${address}</strong> zu löschen.`), german.body);
        assert.ok(german.body.includes('Das hat nicht geklappt. Es wurde nichts gelöscht; bitte versuchen Sie es erneut.'), 'the general message');
        assert.ok(!german.body.includes('NOT_A_CODE') && !german.body.includes('Fehlercode'), 'an unknown code is not shown back');
        assert.match(german.body, /<label for="confirm-deletion">Mir ist klar, dass mein Konto und alles darin endgültig gelöscht wird.<\/label>/);

        const known = await t.app.inject({ method: 'GET', url: '/dashboard/account/delete?error=VALIDATION_ERROR', headers: { cookie, 'accept-language': 'ja' } });
        assert.match(known.body, /<html lang="ja"/);
        assert.ok(known.body.includes('アカウントの削除を確認するには、チェックボックスをオンにしてください。'), known.body);
        assert.match(known.body, /エラーコード: <code>VALIDATION_ERROR<\/code>/);

        const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie, 'accept-language': 'fr' } });
        assert.match(dashboard.body, /<h2 id="delete-account-heading">Supprimer votre compte<\/h2>/);
        assert.match(dashboard.body, /href="\/dashboard\/account\/delete">Supprimer votre compte…<\/a>/);

        const farewell = await t.app.inject({ method: 'GET', url: '/auth/account-deleted', headers: { 'accept-language': 'pt-BR' } });
        assert.equal(farewell.headers['content-language'], 'pt-BR');
        assert.match(farewell.body, /<html lang="pt-BR"/);
        assert.match(farewell.body, /<h1>Sua conta foi excluída<\/h1>/);
      });

      it('the administrators’ section, in another language', async () => {
        const adminAddress = email('page-admin-lang');
        await createUser(t.services, { email: adminAddress, password: PASSWORD, roles: ['ADMIN'] });
        const target = await createUser(t.services, { email: email('page-target-lang'), password: PASSWORD });
        const { browser } = await signedInBrowser(adminAddress);
        const page = await t.app.inject({ method: 'GET', url: `/admin/users/${target.id}?lang=es`, headers: { cookie: browser.jar.header() } });
        assert.match(page.body, /<h2 id="delete-user-heading">Eliminar esta cuenta<\/h2>/);
        assert.ok(page.body.includes(`<label for="confirm-user-deletion">Eliminar ${target.email} definitivamente</label>`), page.body);
      });

      it('from the admin page of a user', async () => {
        const adminAddress = email('page-admin');
        await createUser(t.services, { email: adminAddress, password: PASSWORD, roles: ['ADMIN'] });
        const target = await createUser(t.services, { email: email('page-target'), password: PASSWORD });
        const { browser, origin } = await signedInBrowser(adminAddress);
        const page = await t.app.inject({ method: 'GET', url: `/admin/users/${target.id}`, headers: { cookie: browser.jar.header() } });
        assert.match(page.body, new RegExp(`action="/admin/users/${target.id}/delete"`));
        const deleted = await postForm(t.app, browser, `/admin/users/${target.id}/delete`, { confirm: 'yes' }, origin);
        assert.equal(deleted.statusCode, 303, deleted.body);
        assert.equal(deleted.headers.location, '/admin?notice=USER_DELETED');
        const list = await t.app.inject({ method: 'GET', url: '/admin?notice=USER_DELETED', headers: { cookie: browser.jar.header() } });
        assert.match(list.body, /The account is deleted/);
        assert.equal(await t.services.users.findUserById(target.id), null);
      });
    });
  }
}

describe('account deletion page texts', () => {
  it('has a message for every code the deletion page explains (its keys are built from the code)', () => {
    const english = readMessages(join(import.meta.dirname, 'messages')).en!;
    for (const code of [...DELETE_PAGE_CODES, 'default']) assert.ok(Object.hasOwn(english, `account-deletion.delete.error.${code}`), code);
  });
});
