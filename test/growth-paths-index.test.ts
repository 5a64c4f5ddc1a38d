/**
 * Every query of the growth paths uses an index (issue 38): sign-in, the session check (database
 * strategy), the admin users search by address (API and page, keyset pages), the admin
 * organizations search and the admin audit log filtered by address, type, outcome and dates. The statements are not copies of the SQL: they
 * are recorded at the driver (pg's `Client#query`, node:sqlite's statements) while the real routes
 * answer, so a changed query is checked as it is. Each is then EXPLAINed on a small table set:
 * PostgreSQL with `enable_seqscan = off` (if any index can serve it, the planner takes it, so a
 * `Seq Scan` means no index can), SQLite without statistics (its planner then assumes large tables)
 * and no `SCAN <table>` without an index. The timing at ten million rows is the growth benchmark's
 * (perf/growth.ts); this test keeps the plans from regressing silently.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DatabaseSync, StatementSync } from 'node:sqlite';
import pg from 'pg';
import type { InjectOptions } from 'fastify';
import { sql } from 'kysely';
import { backends, type TestDatabase } from './helpers/databases.ts';
import { createSignedInUser, createTestApp, createUser, type TestApp } from './helpers/app.ts';
import { CookieJar } from './helpers/cookie-jar.ts';
import { openStorage } from '../src/storage/database.ts';

const PASSWORD = 'correct horse battery staple';
const SEEDED = 2_000;
/** Tables whose size does not grow with the users, events or organizations: a scan of them is no regression. */
const BOUNDED_TABLES = new Set(['signing_keys', 'kysely_migration', 'kysely_migration_lock']);

/** The filters that hold for few rows: the statement that reads them and the index condition its plan must show. */
const SELECTIVE: ReadonlyArray<{ path: string; reads: RegExp; postgres: RegExp; sqlite: RegExp | null }> = [
  {
    path: 'users search (API)',
    reads: /from "users" where "email" like/,
    // The default search is a start, and text with an @ an address: found by walking the B-tree in byte order.
    postgres: /Bitmap Index Scan on users_email_prefix_idx[^\n]*\n\s+Index Cond: \(\(\(email\)::text ~>=~ 'seed1234@example\.com'::text\) AND/,
    sqlite: null,
  },
  {
    path: 'users search (API, anywhere)',
    reads: /from "users" where \(lower\("name"\) like/,
    // Anywhere: a whole address is looked up by its local part's own trigram index (the domain's trigrams are in every row).
    postgres: /Bitmap Index Scan on users_email_local_trgm_idx[^\n]*\n\s+Index Cond: \(split_part\(\(email\)::text, '@'::text, 1\) ~~ '%seed1234'/,
    sqlite: null,
  },
  {
    path: 'organizations search (API)',
    reads: /from "organizations" where \("slug" like/,
    // A slug's start by the B-tree in byte order, a word's start by the name's trigram index.
    postgres: /Bitmap Index Scan on organizations_slug_prefix_idx[\s\S]*Bitmap Index Scan on organizations_name_trgm_idx/,
    sqlite: null,
  },
  {
    path: 'organizations search (API, anywhere)',
    reads: /from "organizations" where \("slug" like/,
    postgres: /Bitmap Index Scan on organizations_slug_trgm_idx[\s\S]*Bitmap Index Scan on organizations_name_trgm_idx/,
    sqlite: null,
  },
  {
    path: 'organizations search (API, exactly)',
    reads: /from "organizations" where \("slug" = /,
    postgres: /Index Cond: \(\(slug\)::text = 'seed org 1230'::text\)[\s\S]*Bitmap Index Scan on organizations_name_trgm_idx/,
    sqlite: null,
  },
  {
    path: 'audit filter (email=seed1234%40example.com)',
    reads: /from "audit_events" where \("user_id" = \S+ or "email" = /,
    postgres: /Index Cond: \(\(user_id\)::text = [\s\S]*Index Cond: \(\(email\)::text = /,
    sqlite: /SEARCH audit_events USING INDEX \w+ \(user_id=\?\)[\s\S]*SEARCH audit_events USING INDEX \w+ \(email=\?\)/,
  },
  {
    path: 'audit filter (email=nobody%40example.com&outcome=failure)',
    reads: /from "audit_events" where "email" = /,
    postgres: /Index Cond: \(\(email\)::text = /,
    sqlite: /SEARCH audit_events USING INDEX \w+ \(email=\?\)/,
  },
];

interface Recorded {
  path: string;
  /** The driver that ran it: on PostgreSQL, some stores (the rate limits) may still be node:sqlite in memory. */
  driver: 'sqlite' | 'postgres';
  sql: string;
  parameters: readonly unknown[];
}

/** Statements sent to the database while `run` goes, from this process, recorded at the driver. */
function recorder() {
  const statements: Recorded[] = [];
  let path: string | null = null;
  const record = (driver: Recorded['driver'], text: unknown, parameters: unknown) => {
    if (path === null || typeof text !== 'string') return;
    if (!/^\s*(select|insert|update|delete|with)\b/i.test(text)) return;
    statements.push({ path, driver, sql: text, parameters: Array.isArray(parameters) ? parameters : [] });
  };
  const pgQuery = pg.Client.prototype.query;
  // pg: query(text, values, callback) or query({ text, values }).
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first, second] = args;
    if (typeof first === 'string') record('postgres', first, second);
    else if (first !== null && typeof first === 'object' && 'text' in first) record('postgres', (first as { text: unknown }).text, (first as { values?: unknown }).values);
    return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  const sqliteMethods = ['all', 'get', 'run', 'iterate'] as const;
  const originals = sqliteMethods.map((name) => StatementSync.prototype[name]);
  sqliteMethods.forEach((name, index) => {
    const original = originals[index] as (...a: unknown[]) => unknown;
    (StatementSync.prototype as unknown as Record<string, unknown>)[name] = function (this: StatementSync, ...args: unknown[]) {
      record('sqlite', this.sourceSQL, args);
      return original.apply(this, args);
    };
  });
  return {
    statements,
    async during<T>(name: string, run: () => Promise<T>): Promise<T> {
      path = name;
      try {
        return await run();
      } finally {
        path = null;
      }
    },
    restore() {
      pg.Client.prototype.query = pgQuery;
      sqliteMethods.forEach((name, index) => {
        (StatementSync.prototype as unknown as Record<string, unknown>)[name] = originals[index];
      });
    },
  };
}

/**
 * The tables of `plan` read whole, without an index. On SQLite a subquery in FROM is a co-routine
 * (or a materialized result) that is then scanned: the rows it yields, not a table (a module's
 * claims read with the session, `(select json_object(…) from (…) as obj)`, is one such).
 */
function scannedTables(plan: string, backend: 'sqlite' | 'postgres'): string[] {
  const pattern = backend === 'postgres' ? /Seq Scan on (\w+)/g : /\bSCAN (\w+)(?! USING)(?=\s|$)/gm;
  const subqueries = new Set(backend === 'postgres' ? [] : [...plan.matchAll(/\b(?:CO-ROUTINE|MATERIALIZE) (\w+)/g)].map((match) => match[1]!));
  return [...plan.matchAll(pattern)].map((match) => match[1]!).filter((name) => !subqueries.has(name));
}

const recording = recorder();
after(() => recording.restore());

for (const backend of await backends()) {
  describe(`growth paths use indexes (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    let database: TestDatabase;
    let t: TestApp;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database, { env: { SESSION_STRATEGY: 'database' } });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    it('sign-in, the session check, the users and organizations searches and the audit filter: every statement is served by indexes', async () => {
      const admin = await createSignedInUser(t, { email: 'ada@example.com', password: PASSWORD, roles: ['ADMIN'] });
      const grace = await createUser(t.services, { email: 'grace.hopper@example.com', password: PASSWORD, name: 'Grace Hopper' });
      const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth/signin', headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0' }, payload: { email: admin.email, password: PASSWORD } });
      assert.equal(signedIn.statusCode, 200, signedIn.body);
      const jar = new CookieJar().store(signedIn);

      // A small table set of every shape the paths read: users (some disabled, some with a role),
      // sessions, organizations with members, a second factor, and an audit log of sign-ins,
      // failures (with the address tried) and sign-outs.
      const storage = openStorage(t.config.database);
      try {
        const now = Date.now();
        const numbers = backend.name === 'sqlite' ? sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${SEEDED}) select i from n` : sql`select i from generate_series(1, ${SEEDED}) as i`;
        const big = backend.name === 'sqlite' ? sql`` : sql`::bigint`;
        await sql`insert into users (id, email, name, password_hash, email_verified_at, disabled_at, created_at, updated_at, password_locked_at, name_confirmed_at, locale)
          select 'seed' || i, 'seed' || i || '@example.com', 'Seed ' || i, null, ${now}${big}, case when i % 10 = 0 then ${now}${big} else null end, ${now}${big} - i * 1000, ${now}${big}, null, null, null from (${numbers}) as n`.execute(storage.db);
        await sql`insert into user_roles (user_id, role, created_at) select 'seed' || i, 'SUPPORT', ${now}${big} from (${numbers}) as n where i % 100 = 0`.execute(storage.db);
        await sql`insert into sessions (id, user_id, refresh_seed, refresh_generation, refresh_rotated_at, created_at, expires_at, last_seen_at, revoked_at, ip, user_agent, amr, auth_time)
          select 'seed-session' || i, 'seed' || i, 'seed', 0, null, ${now}${big}, ${now}${big} + 86400000, ${now}${big}, null, '203.0.113.7', 'seed/1.0', 'pwd', ${now}${big} from (${numbers}) as n`.execute(storage.db);
        await sql`insert into organizations (id, slug, name, created_at, updated_at) select 'seed-org' || i, 'seed-org-' || i, 'Seed Org ' || i, ${now}${big}, ${now}${big} from (${numbers}) as n where i % 10 = 0`.execute(storage.db);
        await sql`insert into organization_members (organization_id, user_id, role, created_at, updated_at)
          select 'seed-org' || (((i + 9) / 10) * 10), 'seed' || i, case when i % 10 = 1 then 'OWNER' else 'MEMBER' end, ${now}${big}, ${now}${big} from (${numbers}) as n`.execute(storage.db);
        await sql`insert into mfa_totp (user_id, secret_box, enabled_at, last_used_step, pending_box, pending_expires_at, updated_at) select 'seed' || i, 'sealed', ${now}${big}, null, null, null, ${now}${big} from (${numbers}) as n where i % 20 = 3`.execute(storage.db);
        for (const [type, email] of [['signin.success', sql`null`], ['signin.failure', sql`'seed' || i || '@example.com'`], ['signout', sql`null`]] as const) {
          await sql`insert into audit_events (id, type, user_id, actor_user_id, email, ip, user_agent, reason, details, created_at)
            select ${type} || '-' || i, ${type}, 'seed' || i, null, ${email}, '198.51.100.1', 'seed/1.0', null, null, ${now}${big} - i * 60000 from (${numbers}) as n`.execute(storage.db);
        }
        if (backend.name === 'postgres') await sql`analyze`.execute(storage.db);
      } finally {
        await storage.close();
      }

      const inject = async (path: string, request: InjectOptions, expected = 200) => {
        const response = await recording.during(path, () => t.app.inject(request));
        assert.equal(response.statusCode, expected, `${path}: ${response.body.slice(0, 500)}`);
        return response;
      };
      const page = (url: string) => ({ method: 'GET' as const, url, headers: { cookie: jar.header() } });
      const api = (url: string) => ({ method: 'GET' as const, url, headers: { authorization: `Bearer ${admin.token}` } });

      // Sign-in, right and wrong (the failure's throttle and audit writes too), and the session check.
      const signIn = await inject('sign-in', { method: 'POST', url: '/api/auth', payload: { email: grace.email, password: PASSWORD } });
      await inject('sign-in (wrong password)', { method: 'POST', url: '/api/auth', payload: { email: grace.email, password: 'not the password at all' } }, 401);
      await inject('session check', { method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${signIn.json().token as string}` } });
      // The users search by address, in the API and the page, and its next page.
      const found = await inject('users search (API)', api(`/api/admin/users?query=${encodeURIComponent('seed1234@example.com')}`));
      assert.equal((found.json() as { users: Array<{ email: string }> }).users[0]?.email, 'seed1234@example.com', 'the search finds the address');
      const first = await inject('users search (API, a page of many)', api('/api/admin/users?query=seed1&limit=20'));
      const next = (first.json() as { nextCursor: string | null }).nextCursor;
      assert.notEqual(next, null);
      await inject('users search (API, next page)', api(`/api/admin/users?query=seed1&limit=20&cursor=${encodeURIComponent(next!)}`));
      // Anywhere (a leading star), by the trigram indexes: a whole address, and a part of many.
      const anywhere = await inject('users search (API, anywhere)', api(`/api/admin/users?query=${encodeURIComponent('*seed1234@example.com')}`));
      assert.deepEqual((anywhere.json() as { users: Array<{ email: string }> }).users.map((user) => user.email), ['seed1234@example.com']);
      await inject('users search (API, anywhere, a page of many)', api('/api/admin/users?query=*example.com&limit=20'));
      await inject('users search (page)', page(`/admin/users?query=${encodeURIComponent('seed1234@example.com')}`));
      await inject('users search (page, by name)', page('/admin/users?query=Seed%2012'));
      // The organizations search (a million organizations at ten million users): a slug's or a word's start, anywhere, exactly.
      const orgs = await inject('organizations search (API)', api('/api/admin/organizations?query=seed-org-1230'));
      assert.deepEqual((orgs.json() as { organizations: Array<{ slug: string }> }).organizations.map((o) => o.slug), ['seed-org-1230']);
      await inject('organizations search (API, anywhere)', api(`/api/admin/organizations?query=${encodeURIComponent('*org-123')}`));
      await inject('organizations search (API, exactly)', api(`/api/admin/organizations?query=${encodeURIComponent('"Seed Org 1230"')}`));
      await inject('organizations search (page)', page('/admin/organizations?query=seed'));
      await inject('organizations list (page)', page('/admin/organizations'));
      // The audit log by address, type, outcome and dates, alone and together.
      const day = new Date().toISOString().slice(0, 10);
      const week = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10);
      for (const query of [
        'email=seed1234%40example.com',
        `email=nobody%40example.com&outcome=failure`,
        'type=signin.failure',
        'outcome=failure',
        'outcome=success',
        `from=${week}&to=${day}`,
        `email=seed1234%40example.com&type=signin.success&from=${week}&to=${day}`,
        `type=signout&outcome=success&from=${week}`,
      ]) {
        const log = await inject(`audit filter (${query})`, page(`/admin/events?${query}`));
        assert.match(log.body, /<table|<ol|<ul/);
      }
      await inject('audit filter (API, by user and type)', api(`/api/admin/events?userId=seed1234&type=signin.failure`));

      const paths = new Set(recording.statements.map((statement) => statement.path));
      for (const path of ['sign-in', 'session check', 'users search (API)', 'users search (page)', 'audit filter (email=seed1234%40example.com)']) {
        assert.ok(paths.has(path), `${path}: its statements were recorded (${[...paths].join(', ')})`);
      }

      const failures: string[] = [];
      const explain = await explainer(backend.name, database);
      try {
        const seen = new Set<string>();
        for (const statement of recording.statements.filter((recorded) => recorded.driver === backend.name)) {
          if (seen.has(statement.sql)) continue;
          seen.add(statement.sql);
          const plan = await explain(statement);
          if (process.env.SHOW_PLANS) console.log(`${statement.path}\n${statement.sql}\n${plan}\n`);
          const scanned = scannedTables(plan, backend.name).filter((table) => !BOUNDED_TABLES.has(table));
          if (scanned.length > 0) failures.push(`${statement.path}: ${scanned.join(', ')} read without an index\n  ${statement.sql}\n  ${plan.replaceAll('\n', '\n  ')}`);
        }
        assert.ok(seen.size >= 10, `the paths ran at least ten distinct statements (${seen.size})`);
      } finally {
        await explain.close();
      }
      assert.deepEqual(failures, [], failures.join('\n\n'));

      // A filter that holds for a few rows among millions must be found by an index condition, not by
      // walking an index in order through every row: the search for one address and the log of one
      // address. On PostgreSQL plain index scans are priced out too, so the plan shows which index
      // could find the rows (a walk would need no condition); SQLite has no index for a substring,
      // so there its search is only held to the rule above.
      const explainFew = await explainer(backend.name, database, ['set enable_seqscan = off', 'set enable_indexscan = off']);
      try {
        for (const { path, reads, postgres, sqlite } of SELECTIVE) {
          const statement = recording.statements.find((recorded) => recorded.driver === backend.name && recorded.path === path && reads.test(recorded.sql));
          assert.ok(statement !== undefined, `${path}: a statement ${reads} was recorded`);
          const plan = await explainFew(statement);
          const expected = backend.name === 'postgres' ? postgres : sqlite;
          if (expected !== null) assert.match(plan, expected, `${path}: found by an index condition\n${statement.sql}\n${plan}`);
        }
      } finally {
        await explainFew.close();
      }
    });
  });
}

/** EXPLAINs a recorded statement with its own parameters, on a connection of its own. */
async function explainer(backend: 'sqlite' | 'postgres', database: TestDatabase, settings: readonly string[] = ['set enable_seqscan = off']): Promise<((statement: Recorded) => Promise<string>) & { close(): Promise<void> }> {
  if (backend === 'sqlite') {
    const db = new DatabaseSync(database.config.kind === 'sqlite' ? database.config.path : '', { readOnly: true });
    return Object.assign(
      async (statement: Recorded) => {
        const rows = db.prepare(`explain query plan ${statement.sql}`).all(...(statement.parameters as never[])) as Array<{ detail: string }>;
        return rows.map((row) => row.detail).join('\n');
      },
      { close: async () => db.close() },
    );
  }
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  // With sequential scans priced out, a Seq Scan left in a plan is one no index could replace.
  for (const setting of settings) await client.query(setting);
  return Object.assign(
    async (statement: Recorded) => {
      const result = await client.query<{ 'QUERY PLAN': string }>(`explain ${statement.sql}`, statement.parameters as unknown[]).catch((error: Error) => {
        throw new Error(`${statement.path}: cannot explain ${statement.sql}: ${error.message}`);
      });
      return result.rows.map((row) => row['QUERY PLAN']).join('\n');
    },
    { close: () => client.end() },
  );
}
