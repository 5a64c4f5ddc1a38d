/**
 * The admin console, through `app.inject()` on SQLite and PostgreSQL with a real SMTP server on
 * loopback: Add user with an invitation mail, the users list's filters and order on keyset pages,
 * the bulk actions behind a confirmation that names the count, the audit log's filters by address,
 * outcome and dates and its CSV / JSON export; and the users query on a 100 000-user table, read by
 * its plan (an index gives the order: no sort of the table), not by a timer.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { startSmtpServer, smtpEnv, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { mailTo } from '../../test/helpers/mail-links.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue, unescapeHtml } from '../../test/helpers/pages.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { selectUsers } from '../users/user.store.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';
const SEEDED_USERS = 100_000;

for (const backend of await backends()) {
  describe(`admin console (${backend.name})`, { skip: backend.skip, timeout: 300_000 }, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let t: TestApp;
    let origin: string;
    let jar: CookieJar;
    let ada: { id: string; email: string };
    let count = 0;

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      t = await createTestApp(database, { env: smtpEnv(smtp) });
      origin = new URL(t.config.authUrl).origin;
      ada = await createUser(t.services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
      const response = await t.app.inject({ method: 'POST', url: '/api/auth/signin', headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36' }, payload: { email: ada.email, password: PASSWORD } });
      assert.equal(response.statusCode, 200, response.body);
      jar = new CookieJar().store(response);
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await database?.drop();
    });

    const newUser = (name = 'Some One', roles: string[] = []) => createUser(t.services, { email: `person${++count}@example.com`, password: PASSWORD, name, roles });

    async function get(url: string) {
      const response = await t.app.inject({ method: 'GET', url, headers: { cookie: jar.header() } });
      jar.store(response);
      return response;
    }
    const csrfToken = async () => hiddenValue((await get('/auth/signout')).body, 'csrfToken');
    async function post(url: string, fields: Array<[string, string]>) {
      const body = new URLSearchParams([...fields, ['csrfToken', await csrfToken()]]).toString();
      const response = await t.app.inject({ method: 'POST', url, headers: { 'content-type': FORM, origin, cookie: jar.header() }, payload: body });
      jar.store(response);
      return response;
    }
    const rowsOf = (html: string) => [...html.matchAll(/<tbody[^>]*>([\s\S]*?)<\/tbody>/g)].flatMap(([, body]) => body!.match(/<tr[^>]*>[\s\S]*?<\/tr>/g) ?? []);
    /** The rows of the table captioned `caption`, as cell texts (the row's label first). */
    const tableOf = (html: string, caption: string) => {
      const table = new RegExp(`<caption class="visually-hidden">${caption.replace(/[()]/g, '\\$&')}</caption>[\\s\\S]*?</table>`).exec(html)?.[0] ?? '';
      return [...table.matchAll(/<tr><th scope="row">([^<]+)<\/th>(.*?)<\/tr>/g)].map((match) => [unescapeHtml(match[1]!), ...[...match[2]!.matchAll(/<td>([^<]*)<\/td>/g)].map((cell) => cell[1]!)]);
    };
    const listed = (html: string) => rowsOf(html).map((row) => /data-label="Email" class="address">([^< ]+)/.exec(row)?.[1]);

    it('draws the overview with a text equivalent, on a nearly empty log and on one with thousands of events', async () => {
      const empty = await get('/admin/overview');
      assertHtmlPage(empty, 'overview, empty');
      const drawn = (html: string) => [...html.matchAll(/<svg class="chart" id="(chart-[a-z]+)" viewBox="[^"]+" role="img" aria-labelledby="chart-[a-z]+-title"/g)].map((match) => match[1]);
      // Metrics are off in this app: the refusals are not counted, and the page says so instead of drawing zeros.
      assert.deepEqual(drawn(empty.body), ['chart-signins', 'chart-methods', 'chart-active', 'chart-created', 'chart-locked', 'chart-backlogs']);
      assert.equal((empty.body.match(/<details class="chart-data">/g) ?? []).length, 6, 'every drawn chart has its table');
      assert.match(empty.body, /<dt>Sign-ins \(14 days\)<\/dt><dd>1<\/dd>/, 'the admin signing in');
      assert.match(empty.body, /<dt>Active users \(30 days\)<\/dt><dd>1<\/dd>/);
      assert.match(empty.body, /<dt>Second factor<\/dt><dd>0% \(0 of 1 enabled accounts\)<\/dd>/);
      assert.match(empty.body, /<dt>Mails waiting<\/dt><dd>\d+<\/dd>/);
      assert.match(empty.body, /Not counted: metrics are off/);
      assert.deepEqual(tableOf(empty.body, 'Deliveries waiting or failed, by queue').map((row) => row[0]), ['Mail', 'Webhooks']);
      // Thousands of events in the charted days, written straight to the log: sign-ins by five
      // methods (one through a provider), of 20 people, and failures.
      const storage = openStorage(t.config.database);
      const methods = [{ method: 'password' }, { method: 'passkey' }, { method: 'oauth', provider: 'github' }, { method: 'email' }, { method: 'sso' }];
      const people = Array.from({ length: 20 }, (_, i) => `seeded-person-${i}`);
      try {
        const now = Date.now();
        const rows = Array.from({ length: 3000 }, (_, i) => ({
          id: `seeded-event-${i}`, type: i % 3 === 0 ? 'signin.failure' : 'signin.success', user_id: i % 3 === 0 ? null : people[i % 20]!, actor_user_id: null, email: null, ip: null, user_agent: null, reason: null,
          details: JSON.stringify(methods[i % 5]),
          created_at: now - (i % 14) * 86_400_000,
        }));
        for (let i = 0; i < rows.length; i += 500) await storage.db.insertInto('audit_events').values(rows.slice(i, i + 500)).execute();
        // One of two enabled accounts with an authenticator app (a setup waiting for its code does not count).
        const withApp = await newUser('Has App');
        const pending = await newUser('Pending App');
        await storage.db.insertInto('mfa_totp').values([
          { user_id: withApp.id, secret_box: 'sealed', enabled_at: now, last_used_step: null, pending_box: null, pending_expires_at: null, updated_at: now },
          { user_id: pending.id, secret_box: null, enabled_at: null, last_used_step: null, pending_box: 'sealed', pending_expires_at: now + 60_000, updated_at: now },
        ]).execute();
      } finally {
        await storage.close();
      }
      const seeded = await get('/admin/overview');
      assertHtmlPage(seeded, 'overview, seeded');
      assert.match(seeded.body, /<dt>Sign-ins \(14 days\)<\/dt><dd>2,001<\/dd>/);
      assert.match(seeded.body, /<dt>Failed sign-ins \(14 days\)<\/dt><dd>1,000<\/dd>/);
      assert.match(seeded.body, /<dt>Active users \(30 days\)<\/dt><dd>21<\/dd>/, 'the 20 seeded people and the admin');
      assert.match(seeded.body, /<dt>Second factor<\/dt><dd>33% \(1 of 3 enabled accounts\)<\/dd>/);
      const signIns = tableOf(seeded.body, 'Sign-ins and failed sign-ins per day, last 14 days');
      assert.equal(signIns.length, 14);
      assert.equal(signIns.reduce((sum, row) => sum + Number(row[1]) + Number(row[2]), 0), 3001);
      // By method: a column per method (the provider by its display name, as the sign-in page has it, though GitHub is not configured here), summing to every sign-in.
      const byMethod = /<caption class="visually-hidden">Sign-ins per day by method, last 14 days<\/caption>\s*<thead><tr>(.*?)<\/tr><\/thead>/.exec(seeded.body)![1]!;
      assert.deepEqual([...byMethod.matchAll(/<th scope="col">([^<]+)<\/th>/g)].map((match) => match[1]), ['Day', 'Password', 'Passkey', 'GitHub', 'E-mail link or code', 'Single sign-on (SSO)']);
      const methodRows = tableOf(seeded.body, 'Sign-ins per day by method, last 14 days');
      assert.equal(methodRows.flatMap((row) => row.slice(1)).reduce((sum, cell) => sum + Number(cell), 0), 2001);
      const activeRows = tableOf(seeded.body, 'Active users per day (distinct people signing in), last 14 days');
      assert.ok(activeRows.every((row) => Number(row[1]) <= 21));
      assert.ok(activeRows.some((row) => Number(row[1]) === 10 || Number(row[1]) === 11), 'each day has ten of the twenty people (and today the admin)');
      assert.match(seeded.body, /<rect class="chart-c"/, 'stacked series take their own colours');
    });

    it('adds a user with an invitation mail instead of a password, audited', async () => {
      const form = await get('/admin/users/new');
      assertHtmlPage(form, 'add user');
      assert.doesNotMatch(form.body, /type="password"/, 'mail is delivered: no password field');
      assert.match(form.body, /Add user and send invitation/);
      const added = await post('/admin/users/new', [['email', 'Grace@Example.com'], ['name', 'Grace Hopper'], ['roles', 'EDITOR, AUDITOR']]);
      assert.equal(added.statusCode, 303, added.body);
      const location = String(added.headers.location);
      assert.match(location, /^\/admin\/users\/[\w-]+\?notice=USER_INVITED$/);
      const grace = await t.services.users.findUserByEmail('grace@example.com');
      assert.deepEqual(grace?.roles, ['AUDITOR', 'EDITOR']);
      assert.notEqual(grace?.emailVerifiedAt, null);
      const mail = await mailTo(smtp, 'grace@example.com', 'You have been invited to Gatehouse');
      assert.match(mail.text, /You have been invited to Gatehouse/);
      assert.doesNotMatch(mail.text, /reset the password|Someone asked/, 'an invitation, not a reset');
      assert.match(mail.text, /reset-password\?token=/);
      const page = await get(location);
      assertHtmlPage(page, 'new user page');
      assert.match(page.body, /an invitation to choose a password is on its way/);
      assert.match(page.body, /Recent activity/);
      assert.match(page.body, /Account created/);
      const { events } = await t.services.audit.listEvents({ userId: grace!.id, limit: 10 });
      assert.deepEqual(events.map((event) => event.type).sort(), ['password.reset_requested', 'user.created']);
      assert.equal(events.find((event) => event.type === 'user.created')?.actorUserId, ada.id);

      const again = await post('/admin/users/new', [['email', 'grace@example.com'], ['name', 'Grace Again']]);
      assert.equal(again.statusCode, 422);
      assert.match(again.body, /That address already has an account\./);
      assert.match(again.body, /value="Grace Again"/, 'the form keeps what was typed');
      const bad = await post('/admin/users/new', [['email', 'not an address'], ['name', 'X']]);
      assert.equal(bad.statusCode, 422);
      assert.match(bad.body, /aria-invalid="true"/);
    });

    it('filters, orders and pages the users list, keeping the filters in its links', async () => {
      const editors = [await newUser('Filter Editor', ['FILTERED']), await newUser('Filter Editor', ['FILTERED']), await newUser('Filter Editor', ['FILTERED'])];
      const disabled = await newUser('Filter Disabled', ['FILTERED']);
      await t.services.admin.updateUser(disabled.id, { disabled: true }, { ...SYSTEM_SOURCE, actorUserId: ada.id });
      assert.deepEqual(listed((await get('/admin/users?role=FILTERED&status=disabled')).body), [disabled.email]);
      assert.deepEqual(listed((await get('/admin/users?role=filtered&status=active')).body), editors.map((user) => user.email).reverse());
      assert.deepEqual(listed((await get('/admin/users?role=FILTERED&status=active&sort=oldest')).body), editors.map((user) => user.email));
      const unverified = await listed((await get('/admin/users?verified=unverified')).body);
      assert.ok(!unverified.includes(editors[0]!.email), 'users made by the service are verified');
      // Other modules' filters: second factor, organization, last sign-in.
      const [withApp, member, recent] = [await newUser('Factor Person', ['OTHERS']), await newUser('Org Person', ['OTHERS']), await newUser('Recent Person', ['OTHERS'])];
      const storage = openStorage(t.config.database);
      try {
        await storage.db.insertInto('mfa_totp').values({ user_id: withApp.id, secret_box: 'sealed', enabled_at: Date.now(), last_used_step: null, pending_box: null, pending_expires_at: null, updated_at: Date.now() }).execute();
      } finally {
        await storage.close();
      }
      const organization = await t.services.organizations.create({ name: 'Filter Org', slug: 'filter-org' }, member.id, SYSTEM_SOURCE);
      assert.ok(organization.ok);
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: recent.email, password: PASSWORD } });
      assert.equal(signIn.statusCode, 200, signIn.body);
      const form = await get('/admin/users?role=OTHERS');
      assert.match(form.body, /<select id="factor" name="factor">/);
      assert.match(form.body, /<option value="filter-org">Filter Org<\/option>/);
      assert.match(form.body, /<option value="not30">Not in 30 days<\/option>/);
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&factor=with')).body), [withApp.email]);
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&factor=without')).body), [recent.email, member.email]);
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&org=filter-org')).body), [member.email]);
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&signin=within7')).body), [recent.email]);
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&signin=not7')).body), [member.email, withApp.email]);
      const combined = await get('/admin/users?role=OTHERS&factor=without&signin=not90&org=filter-org');
      assert.deepEqual(listed(combined.body), [member.email]);
      assert.match(combined.body, /<option value="not90" selected>/, 'the form shows the filters back');
      const unknown = await get('/admin/users?role=OTHERS&org=no-such-org');
      assert.deepEqual(listed(unknown.body).length, 3, 'an unknown organization filters nothing');
      assert.match(unknown.body, /There is no organization with that slug or ID/, 'and the page says so');
      // An organization older than the newest 200 (those the box suggests) is still filtered by, by slug or ID.
      for (let i = 0; i < 200; i += 1) assert.ok((await t.services.organizations.create({ name: `Later ${i}`, slug: `later-${i}` }, withApp.id, SYSTEM_SOURCE)).ok);
      const older = await get('/admin/users?role=OTHERS&org=filter-org');
      assert.deepEqual(listed(older.body), [member.email]);
      assert.match(older.body, /<input id="org" name="org" type="text" list="org-choices" value="filter-org"/, 'the box shows it back');
      assert.match(older.body, /<option value="filter-org">Filter Org<\/option>/, 'and suggests it with the newest');
      assert.doesNotMatch(older.body, /There is no organization/);
      assert.deepEqual(listed((await get(`/admin/users?role=OTHERS&org=${organization.organization.id}`)).body), [member.email], 'by ID');
      assert.doesNotMatch((await get('/admin/users?role=OTHERS')).body, /<option value="filter-org">/, 'not among the suggestions otherwise');
      // A passkey is a second factor too.
      const passkeyStorage = openStorage(t.config.database);
      try {
        await passkeyStorage.db
          .insertInto('passkeys')
          .values({ id: 'filter-passkey', user_id: member.id, credential_id: 'filter-credential', public_key: 'key', counter: 0, transports: null, device_type: 'singleDevice', backed_up: 0, aaguid: '00000000-0000-0000-0000-000000000000', name: 'Passkey', created_at: Date.now(), last_used_at: null })
          .execute();
      } finally {
        await passkeyStorage.close();
      }
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&factor=with')).body), [member.email, withApp.email]);
      assert.deepEqual(listed((await get('/admin/users?role=OTHERS&factor=without')).body), [recent.email]);
      // Keyset pages keep the filters.
      const many = [];
      for (let i = 0; i < 52; i++) many.push(await newUser('Paged Person', ['PAGED']));
      const first = await get('/admin/users?role=PAGED&sort=oldest');
      assert.equal(listed(first.body).length, 50);
      const next = unescapeHtml(/<a class="button button-secondary" href="([^"]+)" rel="next">/.exec(first.body)![1]!);
      assert.match(next, /^\/admin\/users\?role=PAGED&sort=oldest&cursor=/);
      const filteredFirst = await get('/admin/users?role=PAGED&factor=without&signin=not30&sort=oldest');
      assert.equal(listed(filteredFirst.body).length, 50);
      const filteredNext = unescapeHtml(/<a class="button button-secondary" href="([^"]+)" rel="next">/.exec(filteredFirst.body)![1]!);
      assert.match(filteredNext, /^\/admin\/users\?role=PAGED&factor=without&signin=not30&sort=oldest&cursor=/);
      assert.deepEqual(listed((await get(filteredNext)).body), many.slice(50).map((user) => user.email));
      assert.deepEqual(listed((await get(next)).body), many.slice(50).map((user) => user.email));
    });

    it('finds users by the start of their address, by any part of it after a star, across the at sign too, wildcards taken literally', async () => {
      const make = (email: string) => createUser(t.services, { email, password: PASSWORD, name: 'Search Person' });
      const [smith, shorter, underscore, otherDomain] = [await make('anna.smith12@example.com'), await make('nna@example.com'), await make('x_y.search@example.net'), await make('anna.smith12@example.org')];
      await make('xzy.search@example.net');
      const found = async (text: string) => (listed((await get(`/admin/users?query=${encodeURIComponent(text)}`)).body) as string[]).sort();
      assert.deepEqual(await found('anna.smith12@example.com'), [smith.email], 'a whole address');
      assert.deepEqual(await found('anna.smith12@example.'), [smith.email, otherDomain.email].sort(), 'a start across the at sign');
      assert.deepEqual(await found('"anna.smith12@example.org"'), [otherDomain.email], 'exactly');
      assert.deepEqual(await found('smith12@example.'), [], 'the middle of an address is not its start');
      assert.deepEqual(await found('*smith12@example.'), [smith.email, otherDomain.email].sort(), 'the end of the local part and the start of the domain');
      assert.deepEqual(await found('*ith12@example.org'), [otherDomain.email]);
      assert.deepEqual(await found('*12@example.net'), [], 'a local part that does not end so');
      assert.deepEqual(await found('*na@example.com'), [shorter.email], 'a local part too short for its index');
      assert.deepEqual(await found('*nna@example.com'), [shorter.email]);
      assert.deepEqual(await found('*x_y.search@'), [underscore.email], 'the underscore is a character, not a wildcard');
      assert.deepEqual(await found('x_y'), [underscore.email], 'at the start too');
      assert.deepEqual(await found('ANNA.Smith12@Example.COM'), [smith.email], 'in any case');
    });

    it('disables, signs out and deletes in bulk after a confirmation naming the count, never the acting admin', async () => {
      const a = await newUser('Bulk A');
      const b = await newUser('Bulk B');
      const confirm = await post('/admin/users/bulk', [['ids', a.id], ['ids', b.id], ['ids', ada.id], ['action', 'disable']]);
      assertHtmlPage(confirm, 'bulk confirmation');
      assert.match(confirm.body, /<h1>Disable 3 users\?<\/h1>/);
      assert.equal((await t.services.users.findUserById(a.id))?.disabledAt, null, 'nothing changes before the confirmation');
      const done = await post('/admin/users/bulk', [['ids', a.id], ['ids', b.id], ['ids', ada.id], ['action', 'disable'], ['confirm', 'yes']]);
      assert.equal(done.statusCode, 303);
      assert.equal(done.headers.location, '/admin?notice=BULK_DISABLED&count=2&error=BULK_PARTLY_DONE');
      const list = await get(String(done.headers.location));
      assert.match(list.body, /2 accounts are disabled/);
      assert.notEqual((await t.services.users.findUserById(a.id))?.disabledAt, null);
      assert.equal((await t.services.users.findUserById(ada.id))?.disabledAt, null);

      const signedOut = await post('/admin/users/bulk', [['ids', a.id], ['action', 'signOut'], ['confirm', 'yes']]);
      assert.equal(signedOut.headers.location, '/admin?notice=BULK_SIGNED_OUT&count=1');
      const deleted = await post('/admin/users/bulk', [['ids', a.id], ['ids', b.id], ['action', 'delete'], ['confirm', 'yes']]);
      assert.equal(deleted.headers.location, '/admin?notice=BULK_DELETED&count=2');
      assert.equal(await t.services.users.findUserById(b.id), null);
      const nothing = await post('/admin/users/bulk', [['action', 'delete']]);
      assert.equal(nothing.headers.location, '/admin?error=NOTHING_SELECTED');
    });

    it('filters the audit log by address, outcome and dates, and exports the filtered view as CSV and JSON', async () => {
      const target = await newUser('Audit Target');
      for (const password of ['wrong one', 'wrong two']) {
        const response = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'user-agent': 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15' }, payload: { email: target.email, password } });
        assert.equal(response.statusCode, 401);
      }
      const failures = await get(`/admin/events?email=${encodeURIComponent(target.email)}&outcome=failure`);
      assertHtmlPage(failures, 'failures');
      const rows = rowsOf(failures.body);
      assert.equal(rows.length, 2);
      for (const row of rows) {
        assert.match(row, /Sign-in failed/);
        assert.match(row, /Safari on macOS/);
        assert.ok(row.includes(target.email));
      }
      const successes = rowsOf((await get(`/admin/events?email=${encodeURIComponent(target.email)}&outcome=success`)).body);
      assert.ok(successes.every((row) => !row.includes('Sign-in failed')));
      const today = new Date().toISOString().slice(0, 10);
      assert.equal(rowsOf((await get(`/admin/events?email=${encodeURIComponent(target.email)}&outcome=failure&from=${today}&to=${today}`)).body).length, 2);
      assert.equal(rowsOf((await get(`/admin/events?email=${encodeURIComponent(target.email)}&outcome=failure&to=2001-01-01`)).body).length, 0);
      const badDate = await get(`/admin/events?from=yesterday`);
      assert.match(badDate.body, /<code>INVALID_DATE<\/code>/);

      const csv = await get(`/admin/events/export?format=csv&email=${encodeURIComponent(target.email)}&outcome=failure`);
      assert.equal(csv.statusCode, 200);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      assert.match(String(csv.headers['content-disposition']), /^attachment; filename="gatehouse-audit-\d{4}-\d\d-\d\d\.csv"$/);
      const lines = csv.body.trim().split('\r\n');
      assert.equal(lines[0], 'time,type,what,outcome,user,actor,ip,device,reason,details');
      assert.equal(lines.length, 3);
      assert.ok(lines.slice(1).every((line) => line.includes(',signin.failure,Sign-in failed,failure,') && line.includes('Safari on macOS')));
      assert.doesNotMatch(csv.body, /wrong one|wrong two/, 'no password tried is ever exported');
      const json = await get(`/admin/events/export?format=json&email=${encodeURIComponent(target.email)}&outcome=failure`);
      const parsed = JSON.parse(json.body) as { events: Array<{ type: string; user: string }>; cap: number };
      assert.equal(parsed.events.length, 2);
      assert.ok(parsed.events.every((event) => event.type === 'signin.failure' && event.user === target.email));
    });

    it('pages users over 100 000 rows by the (created_at, id) index: the plan reads in index order, without sorting the table', async () => {
      // A bulk load: no per-statement time bound (keeping the users' search indexes makes it take seconds).
      const storage: Storage = openStorage(t.config.database.kind === 'postgres' ? { kind: 'postgres', url: t.config.database.url } : t.config.database);
      try {
        const now = Date.now();
        if (backend.name === 'sqlite') {
          await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${SEEDED_USERS})
            insert into users (id, email, name, password_hash, email_verified_at, disabled_at, created_at, updated_at, password_locked_at, name_confirmed_at, locale)
            select 'seed' || i, 'seed' || i || '@example.com', 'Seed ' || i, null, ${now}, case when i % 10 = 0 then ${now} else null end, ${now} - i * 1000, ${now}, null, null, null from n`.execute(storage.db);
          // And a log of sign-ins of a fifth of them: the plans of the last-sign-in filter are read on a log of some size.
          await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${SEEDED_USERS / 5})
            insert into audit_events (id, type, user_id, actor_user_id, email, ip, user_agent, reason, details, created_at)
            select 'seed-event' || i, 'signin.success', 'seed' || (i * 5), null, null, null, null, null, '{"method":"password"}', ${now} - i * 60000 from n`.execute(storage.db);
          await sql`analyze`.execute(storage.db);
        } else {
          await sql`insert into users (id, email, name, password_hash, email_verified_at, disabled_at, created_at, updated_at, password_locked_at, name_confirmed_at, locale)
            select 'seed' || i, 'seed' || i || '@example.com', 'Seed ' || i, null, ${now}::bigint, case when i % 10 = 0 then ${now}::bigint else null end, ${now}::bigint - i::bigint * 1000, ${now}::bigint, null, null, null from generate_series(1, ${SEEDED_USERS}) as i`.execute(storage.db);
          await sql`insert into audit_events (id, type, user_id, actor_user_id, email, ip, user_agent, reason, details, created_at)
            select 'seed-event' || i, 'signin.success', 'seed' || (i * 5), null, null, null, null, null, '{"method":"password"}', ${now}::bigint - i::bigint * 60000 from generate_series(1, ${SEEDED_USERS / 5}) as i`.execute(storage.db);
          await sql`analyze users`.execute(storage.db);
          await sql`analyze audit_events`.execute(storage.db);
        }
        const before = { createdAt: now - 50_000 * 1000, id: 'seed50000' };
        // Other modules' conditions (second factor, organization, last sign-in) are lookups per user
        // row while the index gives the order. A condition that holds for few users (has a factor,
        // is a member, signed in lately) may instead be driven from those few rows, each user found
        // by its key and only they sorted: bounded by that set, never a scan or sort of the users.
        const withFactor = t.services.mfa.secondFactorCondition(true).condition;
        const withoutFactor = t.services.mfa.secondFactorCondition(false).condition;
        const member = t.services.organizations.memberCondition('some-organization');
        const signedIn = t.services.audit.hasEventSince('signin.success', now - 30 * 86_400_000, true);
        const notSignedIn = t.services.audit.hasEventSince('signin.success', now - 30 * 86_400_000, false);
        const filters: Array<{ query: Parameters<typeof selectUsers>[1]; mayDriveFromOthers?: boolean }> = [
          { query: { limit: 51 } },
          { query: { limit: 51, before } },
          { query: { limit: 51, disabled: true, before } },
          { query: { limit: 51, oldestFirst: true, before } },
          { query: { limit: 51, conditions: [withoutFactor] } },
          { query: { limit: 51, conditions: [notSignedIn], oldestFirst: true, before } },
          { query: { limit: 51, disabled: false, conditions: [withoutFactor, notSignedIn], before } },
          { query: { limit: 51, conditions: [withFactor], before }, mayDriveFromOthers: true },
          { query: { limit: 51, conditions: [member], before }, mayDriveFromOthers: true },
          { query: { limit: 51, conditions: [signedIn] }, mayDriveFromOthers: true },
        ];
        for (const { query: filter, mayDriveFromOthers } of filters) {
          const compiled = selectUsers(storage.db, filter).compile();
          const explain = backend.name === 'sqlite' ? `explain query plan ${compiled.sql}` : `explain ${compiled.sql}`;
          const result = await storage.db.executeQuery({ ...compiled, sql: explain });
          const plan = result.rows.map((row) => String((row as Record<string, unknown>).detail ?? (row as Record<string, unknown>)['QUERY PLAN'])).join('\n');
          const named = JSON.stringify({ ...filter, conditions: filter.conditions?.length });
          assert.doesNotMatch(plan, /Seq Scan on users\b|SCAN users\b(?! USING)/, `${named}: never a scan of the users table\n${plan}`);
          const isIndexOrder = /users_created_at_id_idx/.test(plan) && !/TEMP B-TREE|Sort\b/.test(plan);
          const isDrivenByOthers = mayDriveFromOthers === true && /users_pkey|USING INDEX sqlite_autoindex_users_1|USING PRIMARY KEY/.test(plan);
          assert.ok(isIndexOrder || isDrivenByOthers, `${named}: the index gives the order, no sort of the table\n${plan}`);
          // Read in index order, every other table is reached by an index (a lookup per user row), never
          // scanned whole; except that a condition holding for few users (any of several factor kinds,
          // say) may read those few rows once, into a hashed set, as it may drive the query from them.
          const readsTheFewOnce = mayDriveFromOthers === true && /hashed SubPlan/.test(plan);
          if (isIndexOrder && !readsTheFewOnce) assert.doesNotMatch(plan, /SCAN (mfa_totp|organization_members|audit_events)\b(?! USING)|Seq Scan on (mfa_totp|organization_members|audit_events)/, `${named}: lookups, not scans\n${plan}`);
        }
        // And the page itself: 50 rows, a link to the next page, whatever the table's size.
        const page = await get('/admin/users?status=disabled');
        assert.equal(page.statusCode, 200, page.body.slice(0, 2000));
        assert.equal(listed(page.body).length, 50);
        assert.match(page.body, /rel="next"/);
        const quiet = await get('/admin/users?status=active&factor=without&signin=not30');
        assert.equal(listed(quiet.body).length, 50);
        assert.match(quiet.body, /rel="next"/);
      } finally {
        await storage.close();
      }
    });
  });
}
