/**
 * The per-user data slot (module.ts, `userData`): account deletion walks every module's handler
 * and names none; a module added to the list gets its erasure run inside the deletion's
 * transaction (before the modules it builds on, before the user's row goes), can block the
 * deletion with its own code (judged first, or under its locks while erasing: then everything is
 * rolled back), and has its data in the export, which holds no secret or hash.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, createUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { enrolTotp } from '../../test/helpers/totp.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { defineErrorCodes, type ErrorCode } from '../errors.ts';
import { LOCALES } from '../i18n/locales.ts';
import { defineModule, type DeletionBlock, type GatehouseModule } from '../module.ts';
import { MODULES } from '../modules.ts';
import type { Db } from '../storage/database.ts';

const PASSWORD = 'correct horse battery staple';

const KEEPER_ERRORS = defineErrorCodes('records-keeper', { RECORDS_ON_HOLD: { status: 409, message: 'The records of this account are on hold.' } });
const ON_HOLD = 'RECORDS_ON_HOLD' as ErrorCode;

/** What the test modules saw. */
interface Seen {
  judged: Array<{ userId: string; inTransaction: boolean }>;
  erased: Array<{ module: string; userId: string; inTransaction: boolean; userRowThere: boolean; liveSessions: number; by: string | null }>;
}

const onHold = (name: string): DeletionBlock => ({ code: ON_HOLD, message: 'records-keeper.deletion.onHold', items: [{ name, detail: 'case 7', href: '/records/7' }], summary: `has records on hold (${name})` });

/** A module holding something of users: it writes a row in the deletion's transaction, and blocks the users it is told to. */
function recordsKeeper(seen: Seen, holds: { judged: Set<string>; whileErasing: Set<string> }, name = 'records-keeper'): GatehouseModule {
  const text = 'Records are on hold: {count, plural, one {close the case first:} other {close the cases first:}}';
  return defineModule({
    name,
    ...(name === 'records-keeper' && { errors: KEEPER_ERRORS, messages: Object.fromEntries(LOCALES.map((locale) => [locale, { 'records-keeper.deletion.onHold': text }])) }),
    userData: () => ({
      async blocksDeletion(userId: string, db?: Db) {
        seen.judged.push({ userId, inTransaction: db?.isTransaction ?? false });
        return holds.judged.has(userId) ? onHold(`${name} judged`) : null;
      },
      async erase({ user, db, source }) {
        const userRowThere = (await db.selectFrom('users').select('id').where('id', '=', user.id).executeTakeFirst()) !== undefined;
        const liveSessions = (await db.selectFrom('sessions').select('id').where('user_id', '=', user.id).where('revoked_at', 'is', null).execute()).length;
        seen.erased.push({ module: name, userId: user.id, inTransaction: db.isTransaction, userRowThere, liveSessions, by: source.actorUserId });
        // What a module's erasure writes: it commits or rolls back with the deletion.
        await db.insertInto('rate_limits').values({ key: `${name}:erased:${user.id}`, points: 1, expire: null }).execute();
        return holds.whileErasing.has(user.id) ? onHold(`${name} erasing`) : null;
      },
      export: async (userId) => ({ note: `kept for ${userId}` }),
    }),
  });
}

for (const backend of await backends()) {
  describe(`per-user data: deletion and export walk every module (${backend.name})`, { skip: backend.skip }, () => {
    const seen: Seen = { judged: [], erased: [] };
    const holds = { judged: new Set<string>(), whileErasing: new Set<string>() };
    const writerHolds = { judged: new Set<string>(), whileErasing: new Set<string>() };
    const clock = fakeClock();
    // Two modules added to the list: the keeper last, so it erases first (reverse list order); the writer before it.
    const t = useTestApp(backend, { clock, modules: [...MODULES, recordsKeeper(seen, writerHolds, 'records-writer'), recordsKeeper(seen, holds)] });
    const db = () => t.services.storage.db;
    let count = 0;
    const email = (label: string) => `${label}-${++count}@example.com`;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const erasedRows = async (userId: string) => (await db().selectFrom('rate_limits').select('key').where('key', 'like', `%:erased:${userId}`).orderBy('key').execute()).map((row) => row.key);

    it('the modules listed today declare what they hold of a user', () => {
      assert.deepEqual(
        MODULES.filter((module) => module.userData !== undefined).map((module) => module.name),
        ['audit', 'users', 'mail', 'tokens', 'sessions', 'credentials', 'oauth', 'passkeys', 'mfa', 'trusted-devices', 'oidc-provider', 'organizations', 'scim', 'api-keys', 'sso'],
      );
    });

    it('a deletion judges every module first, then runs each one’s erasure inside its transaction, before the modules it builds on and before the user’s row goes', async () => {
      const user = await createSignedInUser(t, { email: email('walked'), password: PASSWORD });
      seen.judged.length = 0;
      seen.erased.length = 0;
      const deleted = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(user.token) });
      assert.equal(deleted.statusCode, 200, deleted.body);

      assert.deepEqual(seen.judged, [
        { userId: user.id, inTransaction: true },
        { userId: user.id, inTransaction: true },
      ]);
      assert.deepEqual(
        seen.erased.map(({ module, inTransaction, userRowThere }) => ({ module, inTransaction, userRowThere })),
        [
          { module: 'records-keeper', inTransaction: true, userRowThere: true },
          { module: 'records-writer', inTransaction: true, userRowThere: true },
        ],
        'the last listed erases first; both while the user’s row is there',
      );
      assert.ok(seen.erased.every((entry) => entry.liveSessions === 1), 'the sessions module (listed above) had not ended the session yet');
      assert.deepEqual(await erasedRows(user.id), [`records-keeper:erased:${user.id}`, `records-writer:erased:${user.id}`], 'committed with the deletion');
      assert.equal(await t.services.users.findUserById(user.id), null);
      const event = await db().selectFrom('audit_events').select('type').where('type', '=', 'user.deleted').where('user_id', '=', user.id).executeTakeFirst();
      assert.ok(event !== undefined, 'user.deleted recorded, as before');
    });

    it('a module blocks the deletion with its own code: nothing is erased, and the page says what to do first', async () => {
      const user = await createSignedInUser(t, { email: email('held'), password: PASSWORD });
      holds.judged.add(user.id);
      seen.erased.length = 0;
      const refused = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(user.token) });
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(refused.json().error, 'RECORDS_ON_HOLD');
      assert.deepEqual(seen.erased, [], 'no module erased anything');
      assert.deepEqual(await erasedRows(user.id), []);
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(user.token) })).statusCode, 200, 'the session lives on');

      const result = await t.services.accountDeletion.deleteUser(user.id, SYSTEM_SOURCE);
      assert.ok(!result.ok && 'block' in result);
      assert.equal(result.block.code, ON_HOLD);
      assert.equal(result.block.summary, 'has records on hold (records-keeper judged)');

      const page = await t.app.inject({ method: 'GET', url: '/dashboard/account/delete', headers: bearer(user.token) });
      assert.equal(page.statusCode, 200);
      assert.ok(page.body.includes('Records are on hold: close the case first:'), page.body);
      assert.ok(page.body.includes('<li><a href="/records/7">records-keeper judged</a> (case 7)</li>'), page.body);
      assert.ok(!page.body.includes('name="confirm"'), 'no form while something blocks it');
      assert.deepEqual((await t.services.accountDeletion.blockers(user.id)).map((block) => block.code), ['RECORDS_ON_HOLD']);
      holds.judged.delete(user.id);
    });

    it('a module that refuses while erasing (under its own locks) rolls back what the others erased', async () => {
      const user = await createSignedInUser(t, { email: email('late-hold'), password: PASSWORD });
      holds.whileErasing.add(user.id);
      seen.erased.length = 0;
      const result = await t.services.accountDeletion.deleteUser(user.id, SYSTEM_SOURCE);
      assert.equal(!result.ok && result.reason, 'RECORDS_ON_HOLD');
      assert.deepEqual(seen.erased.map((entry) => entry.module), ['records-keeper'], 'the walk stops at the refusal');
      assert.deepEqual(await erasedRows(user.id), [], 'its own write is rolled back');
      holds.whileErasing.delete(user.id);

      // The writer (listed before the keeper) erases after it: its refusal undoes the keeper's row too.
      writerHolds.whileErasing.add(user.id);
      seen.erased.length = 0;
      const again = await t.services.accountDeletion.deleteUser(user.id, SYSTEM_SOURCE);
      assert.ok(!again.ok && 'block' in again);
      assert.equal(again.block.summary, 'has records on hold (records-writer erasing)');
      assert.deepEqual(seen.erased.map((entry) => entry.module), ['records-keeper', 'records-writer']);
      assert.deepEqual(await erasedRows(user.id), [], 'the keeper’s write is rolled back with the writer’s');
      assert.ok((await t.services.users.findUserById(user.id)) !== null);
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(user.token) })).statusCode, 200, 'no session ended');
      writerHolds.whileErasing.delete(user.id);

      // Once nothing holds it, it goes; an administrator's deletion records who erased it.
      const admin = await createUser(t.services, { email: email('late-hold-admin'), password: PASSWORD, roles: ['ADMIN'] });
      seen.erased.length = 0;
      const deleted = await t.services.accountDeletion.deleteUser(user.id, { actorUserId: admin.id, ip: null, userAgent: null });
      assert.deepEqual(deleted, { ok: true });
      assert.deepEqual(seen.erased.map((entry) => entry.by), [admin.id, admin.id], 'each erasure is given the deletion’s source');
    });

    it('the export has every module’s part (the added one’s too) and no secret or hash; none for an unknown user', async () => {
      const address = email('export');
      const user = await createSignedInUser(t, { email: address, password: PASSWORD });
      const secret = await enrolTotp(t.services as never, (await t.services.users.findUserById(user.id))!, clock);
      const forgot = await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email: address } });
      assert.equal(forgot.statusCode, 202, forgot.body);
      const organization = await t.services.organizations.create({ name: 'Exported Org' }, user.id, SYSTEM_SOURCE);
      assert.ok(organization.ok);

      const exported = await t.services.accountDeletion.exportUserData(user.id);
      assert.ok(exported !== null);
      assert.deepEqual(Object.keys(exported), ['audit', 'users', 'tokens', 'sessions', 'credentials', 'oauth', 'passkeys', 'mfa', 'trusted-devices', 'oidc-provider', 'organizations', 'records-writer', 'records-keeper'], 'in list order; mail exports nothing');
      const data = exported as Record<string, Record<string, unknown>>;
      assert.equal((data.users!.account as { email: string }).email, address);
      assert.equal((data.sessions!.sessions as unknown[]).length, 1);
      assert.deepEqual(data.credentials, { password: { isSet: true, lockedAt: null } });
      assert.deepEqual((data.tokens!.actionTokens as Array<{ purpose: string }>).map((token) => token.purpose), ['password_reset']);
      assert.equal(data.mfa!.totp, true);
      assert.equal(typeof data.mfa!.recoveryCodesLeft, 'number');
      assert.deepEqual((data.organizations!.memberships as Array<{ name: string; role: string }>).map(({ name, role }) => ({ name, role })), [{ name: 'Exported Org', role: 'OWNER' }]);
      assert.deepEqual(data.oauth, { linkedAccounts: [] });
      assert.deepEqual(data.passkeys, { passkeys: [] });
      assert.deepEqual(data['oidc-provider'], { connectedApps: [] });
      assert.deepEqual(data['trusted-devices'], { trustedDevices: [] });
      assert.ok((data.audit!.events as Array<{ type: string }>).some((event) => event.type === 'signin.success'));
      assert.deepEqual(data['records-keeper'], { note: `kept for ${user.id}` });

      // Nothing stored as a secret or a hash appears in it.
      const json = JSON.stringify(exported);
      const row = await db().selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
      const secrets = [
        row.password_hash!,
        secret,
        ...(await db().selectFrom('sessions').select('refresh_seed').where('user_id', '=', user.id).execute()).map((session) => session.refresh_seed),
        ...(await db().selectFrom('action_tokens').select('token_hash').where('user_id', '=', user.id).execute()).map((token) => token.token_hash),
        ...(await db().selectFrom('mfa_recovery_codes').select('code_hash').where('user_id', '=', user.id).execute()).map((code) => code.code_hash),
        ...(await db().selectFrom('mfa_totp').select('secret_box').where('user_id', '=', user.id).execute()).flatMap((totp) => (totp.secret_box === null ? [] : [totp.secret_box])),
        user.token,
      ];
      assert.ok(secrets.length >= 5);
      for (const value of secrets) assert.ok(!json.includes(value), `the export holds a secret: ${value.slice(0, 12)}…`);
      assert.ok(!/hash|secret|token_|box/i.test(Object.keys(flatten(exported)).join(' ')), Object.keys(flatten(exported)).join(' '));

      assert.equal(await t.services.accountDeletion.exportUserData('no-such-user'), null);
    });
  });
}

/** Every key of a JSON value, however deep (`a.b.0.c`). */
function flatten(value: unknown, prefix = ''): Record<string, unknown> {
  if (value === null || typeof value !== 'object') return { [prefix]: value };
  return Object.assign({}, ...Object.entries(value).map(([key, inner]) => flatten(inner, prefix === '' ? key : `${prefix}.${key}`)));
}
