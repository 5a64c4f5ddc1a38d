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
    const listed = (html: string) => rowsOf(html).map((row) => /data-label="Email" class="address">([^< ]+)/.exec(row)?.[1]);

    it('draws the overview with a text equivalent, on a nearly empty log and on one with thousands of events', async () => {
      const empty = await get('/admin/overview');
      assertHtmlPage(empty, 'overview, empty');
      assert.equal((empty.body.match(/<svg class="chart" id="chart-[a-z]+" viewBox="[^"]+" role="img" aria-labelledby="chart-[a-z]+-title"/g) ?? []).length, 3);
      assert.equal((empty.body.match(/<details class="chart-data">/g) ?? []).length, 3);
      assert.match(empty.body, /<dt>Sign-ins \(14 days\)<\/dt><dd>1<\/dd>/, 'the admin signing in');
      // Thousands of events in the charted days, written straight to the log.
      const storage = openStorage(t.config.database);
      try {
        const now = Date.now();
        const rows = Array.from({ length: 3000 }, (_, i) => ({
          id: `seeded-event-${i}`, type: i % 3 === 0 ? 'signin.failure' : 'signin.success', user_id: null, actor_user_id: null, email: null, ip: null, user_agent: null, reason: null, details: null,
          created_at: now - (i % 14) * 86_400_000,
        }));
        for (let i = 0; i < rows.length; i += 500) await storage.db.insertInto('audit_events').values(rows.slice(i, i + 500)).execute();
      } finally {
        await storage.close();
      }
      const seeded = await get('/admin/overview');
      assertHtmlPage(seeded, 'overview, seeded');
      assert.match(seeded.body, /<dt>Sign-ins \(14 days\)<\/dt><dd>2,001<\/dd>/);
      assert.match(seeded.body, /<dt>Failed sign-ins \(14 days\)<\/dt><dd>1,000<\/dd>/);
      const table = /<caption class="visually-hidden">Sign-ins and failed sign-ins per day, last 14 days<\/caption>[\s\S]*?<\/table>/.exec(seeded.body)![0];
      const cells = [...table.matchAll(/<tr><th scope="row">[^<]+<\/th><td>(\d+)<\/td><td>(\d+)<\/td><\/tr>/g)];
      assert.equal(cells.length, 14);
      assert.equal(cells.reduce((sum, cell) => sum + Number(cell[1]) + Number(cell[2]), 0), 3001);
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
      const mail = await mailTo(smtp, 'grace@example.com', 'Reset your Gatehouse password');
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
      // Keyset pages keep the filters.
      const many = [];
      for (let i = 0; i < 52; i++) many.push(await newUser('Paged Person', ['PAGED']));
      const first = await get('/admin/users?role=PAGED&sort=oldest');
      assert.equal(listed(first.body).length, 50);
      const next = unescapeHtml(/<a class="button button-secondary" href="([^"]+)" rel="next">/.exec(first.body)![1]!);
      assert.match(next, /^\/admin\/users\?role=PAGED&sort=oldest&cursor=/);
      assert.deepEqual(listed((await get(next)).body), many.slice(50).map((user) => user.email));
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
      const storage: Storage = openStorage(t.config.database);
      try {
        const now = Date.now();
        if (backend.name === 'sqlite') {
          await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${SEEDED_USERS})
            insert into users (id, email, name, password_hash, email_verified_at, disabled_at, created_at, updated_at, password_locked_at, name_confirmed_at, locale)
            select 'seed' || i, 'seed' || i || '@example.com', 'Seed ' || i, null, ${now}, case when i % 10 = 0 then ${now} else null end, ${now} - i * 1000, ${now}, null, null, null from n`.execute(storage.db);
          await sql`analyze`.execute(storage.db);
        } else {
          await sql`insert into users (id, email, name, password_hash, email_verified_at, disabled_at, created_at, updated_at, password_locked_at, name_confirmed_at, locale)
            select 'seed' || i, 'seed' || i || '@example.com', 'Seed ' || i, null, ${now}::bigint, case when i % 10 = 0 then ${now}::bigint else null end, ${now}::bigint - i::bigint * 1000, ${now}::bigint, null, null, null from generate_series(1, ${SEEDED_USERS}) as i`.execute(storage.db);
          await sql`analyze users`.execute(storage.db);
        }
        const before = { createdAt: now - 50_000 * 1000, id: 'seed50000' };
        for (const filter of [{ limit: 51 }, { limit: 51, before }, { limit: 51, disabled: true, before }, { limit: 51, oldestFirst: true, before }]) {
          const compiled = selectUsers(storage.db, filter).compile();
          const explain = backend.name === 'sqlite' ? `explain query plan ${compiled.sql}` : `explain ${compiled.sql}`;
          const result = await storage.db.executeQuery({ ...compiled, sql: explain });
          const plan = result.rows.map((row) => String((row as Record<string, unknown>).detail ?? (row as Record<string, unknown>)['QUERY PLAN'])).join('\n');
          assert.match(plan, /users_created_at_id_idx/, `${JSON.stringify(filter)}: uses the index\n${plan}`);
          assert.doesNotMatch(plan, /TEMP B-TREE|Sort\b/, `${JSON.stringify(filter)}: no sort of the table\n${plan}`);
        }
        // And the page itself: 50 rows, a link to the next page, whatever the table's size.
        const page = await get('/admin/users?status=disabled');
        assert.equal(listed(page.body).length, 50);
        assert.match(page.body, /rel="next"/);
      } finally {
        await storage.close();
      }
    });
  });
}
