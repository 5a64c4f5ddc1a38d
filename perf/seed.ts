/**
 * Fills a Gatehouse store for the benchmarks. The schema is the project's own: migrations run
 * first (src/storage/database.ts `migrateToLatest`), and the rows go into it.
 *
 * Two shapes (SEED_SHAPE):
 * - `plain` (default): SEED_COUNT users, each with one live session, all enabled and verified, no
 *   second factor: what the mfa and cli scenarios sign in with.
 * - `growth`: the growth scenario's store, a population with the spread a real one has:
 *   SEED_COUNT users (1 % disabled, 5 % unverified, 0.1 % with a role, 5 % with an authenticator
 *   app), one live session each, an organization per 10 users with the 10 as members (the first
 *   its owner), and 5 audit events per user (sign-ins, failures with the address tried, sign-outs,
 *   account changes, mostly about the user; their times spread over the last year, some failures
 *   on addresses no account has).
 * - `users`: the users of `plain` alone, no sessions: the hash-less bulk-insert bound the import
 *   scenario sets `gatehouse import` beside.
 *
 *   DATABASE_URL=sqlite:/tmp/x/gatehouse.db SEED_COUNT=1000000 node perf/seed.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch SEED_SHAPE=growth node perf/seed.ts
 *
 * PostgreSQL takes the rows by COPY FROM STDIN (pg-copy-streams), each table in one stream
 * generated as it is sent. The seeded tables' keys, unique constraints, foreign keys and indexes are
 * dropped first and made again afterwards from their own definitions (pg_get_constraintdef and
 * pg_indexes.indexdef, so exactly the migrations' ones): each index is built in one sorted pass
 * instead of millions of random inserts, each foreign key checked in one query instead of a
 * trigger per row. Then VACUUM (ANALYZE), what autovacuum would do soon after a bulk load. SQLite
 * takes the same rows in multi-row INSERTs of SEED_BATCH rows, many per transaction.
 *
 * Every user shares one precomputed argon2id hash (of "seed-password-0001"), since hashing millions
 * of passwords would take hours and prove nothing about storage. Ids look like the service's
 * (22 base64url characters of 128 bits) and are spread like random ones, so indexes grow the way
 * they do in production; they are derived from the row's number and a per-run salt, so every table
 * can be generated on its own and still point at the right user. Sessions are live (they expire in
 * 30 days, last seen within the idle timeout). Prints one JSON line with the counts and timing.
 *
 * SEED_ARGON2_MEMORY_KIB and SEED_ARGON2_ITERATIONS (default: the server's defaults) set the
 * parameters of that hash: a scenario whose server runs with other ARGON2_* settings passes its
 * own, or every first sign-in would rehash the password.
 */
import { hash, type Algorithm } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { DatabaseConfig } from '../src/config.ts';
import { openStorage, type Db } from '../src/storage/database.ts';
import { migrateToLatest } from '../src/modules.ts';

const ARGON2ID = 2 as Algorithm;
const DAY_MS = 86_400_000;
export const SEED_PASSWORD = 'seed-password-0001';

const FIRST_NAMES = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'margaret', 'ken', 'radia', 'linus', 'frances', 'dennis', 'katherine', 'tim', 'hedy', 'john'];
const LAST_NAMES = ['lovelace', 'hopper', 'turing', 'dijkstra', 'liskov', 'knuth', 'hamilton', 'thompson', 'perlman', 'torvalds', 'allen', 'ritchie', 'johnson', 'berners', 'lamarr', 'backus', 'mccarthy'];
const DOMAINS = ['example.com', 'mail.example', 'corp.example', 'example.org', 'uni.example.edu', 'seed.example', 'shop.example', 'example.net'];
const capitalised = (word: string) => word[0]!.toUpperCase() + word.slice(1);

/** The address of the `index`-th user (from 0): a first and last name, the number, a domain. */
export const seededEmail = (index: number) => `${FIRST_NAMES[index % 16]}.${LAST_NAMES[index % 17]}${index}@${DOMAINS[index % 8]}`;
const seededName = (index: number) => `${capitalised(FIRST_NAMES[index % 16]!)} ${capitalised(LAST_NAMES[index % 17]!)} ${index}`;

export type SeedShape = 'plain' | 'growth' | 'users';

export interface SeedReport {
  database: DatabaseConfig['kind'];
  shape: SeedShape;
  users: number;
  sessions: number;
  organizations: number;
  members: number;
  auditEvents: number;
  /** All rows, every table. */
  rows: number;
  seconds: number;
  /** Of which building the indexes again after the COPY (PostgreSQL) and VACUUM (ANALYZE). */
  indexSeconds: number;
  rowsPerSecond: number;
}

function parseDatabaseUrl(url: string): DatabaseConfig {
  if (url.startsWith('sqlite:')) return { kind: 'sqlite', path: url.slice('sqlite:'.length) };
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { kind: 'postgres', url };
  throw new Error(`DATABASE_URL must be sqlite:<path> or postgres://... (got "${url}")`);
}

/** `raw` (an environment variable's value) as a positive integer; `fallback` when unset. */
export function positiveInteger(raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer (got "${raw}")`);
  return value;
}

/** murmur3's 32-bit finaliser: a bijection, so distinct inputs give distinct outputs. */
function mix(value: number): number {
  let h = value >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * 128-bit ids of row `n` of a table (`tag`), unique per table (the first word is a bijection of n)
 * and spread like random ones; `salt` differs per run.
 */
function idMaker(salt: Buffer) {
  const s = [salt.readUInt32LE(0), salt.readUInt32LE(4), salt.readUInt32LE(8), salt.readUInt32LE(12)];
  const bytes = Buffer.alloc(16);
  return (tag: number, n: number): string => {
    const first = mix((n ^ s[0]! ^ Math.imul(tag, 0x9e3779b9)) >>> 0);
    bytes.writeUInt32LE(first, 0);
    bytes.writeUInt32LE(mix(first ^ s[1]!), 4);
    bytes.writeUInt32LE(mix(first ^ s[2]! ^ tag), 8);
    bytes.writeUInt32LE(mix(first ^ s[3]!), 12);
    return bytes.toString('base64url');
  };
}

const USER = 1;
const SESSION = 2;
const ORGANIZATION = 3;
const EVENT = 4;

/** A table's rows, generated on demand: its columns and a generator of value arrays in that order. */
interface TableSeed {
  table: string;
  columns: readonly string[];
  count: number;
  rows: () => Generator<unknown[]>;
}

/** Kinds of audit events and their share (out of 100) of the seeded log. */
const EVENT_MIX: ReadonlyArray<readonly [string, number]> = [
  ['signin.success', 55],
  ['signin.failure', 12],
  ['signout', 12],
  ['session.ended', 6],
  ['user.updated', 5],
  ['password.reset_requested', 3],
  ['password.reset', 2],
  ['mfa.totp_enabled', 2],
  ['user.created', 2],
  ['user.roles_changed', 1],
];
const EVENT_TYPES: string[] = EVENT_MIX.flatMap(([type, share]) => Array.from({ length: share }, () => type));
const USER_AGENTS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0',
];

/** The tables of a store of `count` users in `shape`, generated from `salt` and `now`. */
export function seedTables(shape: SeedShape, count: number, passwordHash: string, now: number, salt: Buffer): TableSeed[] {
  const id = idMaker(salt);
  const refreshSeed = salt.toString('base64url');
  const isGrowth = shape === 'growth';
  // Users joined over the last two years, in order; the spacing keeps created_at distinct.
  const joinedFrom = now - 730 * DAY_MS;
  const spacing = Math.max(1, Math.floor((730 * DAY_MS) / Math.max(count, 1)));
  const createdAt = (i: number) => joinedFrom + i * spacing;
  const users: TableSeed = {
    table: 'users',
    columns: ['id', 'email', 'name', 'password_hash', 'email_verified_at', 'disabled_at', 'created_at', 'updated_at', 'password_locked_at', 'name_confirmed_at', 'locale'],
    count,
    *rows() {
      for (let i = 0; i < count; i++) {
        const created = createdAt(i);
        const isUnverified = isGrowth && i % 20 === 7;
        const isDisabled = isGrowth && i % 100 === 13;
        yield [id(USER, i), seededEmail(i), seededName(i), passwordHash, isUnverified ? null : created, isDisabled ? now - (i % 300) * DAY_MS : null, created, created, null, created, isGrowth && i % 3 === 0 ? 'en' : null];
      }
    },
  };
  const sessions: TableSeed = {
    table: 'sessions',
    columns: ['id', 'user_id', 'refresh_seed', 'refresh_generation', 'refresh_rotated_at', 'created_at', 'expires_at', 'last_seen_at', 'revoked_at', 'ip', 'user_agent', 'amr', 'auth_time'],
    count,
    *rows() {
      for (let i = 0; i < count; i++) {
        // Within the 7-day idle timeout, spread over 6 days.
        const lastSeen = now - (mix(i) % (6 * DAY_MS));
        yield [id(SESSION, i), id(USER, i), refreshSeed, 0, null, now - 20 * DAY_MS, now + 30 * DAY_MS, lastSeen, null, '203.0.113.7', isGrowth ? USER_AGENTS[i % 3]! : 'seed/1.0', 'pwd', now - 20 * DAY_MS];
      }
    },
  };
  if (shape === 'users') return [users];
  if (!isGrowth) return [users, sessions];

  const organizationCount = Math.ceil(count / 10);
  const roles: TableSeed = {
    table: 'user_roles',
    columns: ['user_id', 'role', 'created_at'],
    count: Math.ceil(count / 1000),
    *rows() {
      for (let i = 500; i < count; i += 1000) yield [id(USER, i), i % 10_000 === 500 ? 'ADMIN' : 'SUPPORT', createdAt(i)];
    },
  };
  const factors: TableSeed = {
    table: 'mfa_totp',
    columns: ['user_id', 'secret_box', 'enabled_at', 'last_used_step', 'pending_box', 'pending_expires_at', 'updated_at'],
    count: Math.ceil(count / 20),
    // Sealed with no key the server has: these users are only listed and filtered, never signed in.
    *rows() {
      for (let i = 3; i < count; i += 20) yield [id(USER, i), 'seed-sealed-secret', createdAt(i), null, null, null, createdAt(i)];
    },
  };
  const organizations: TableSeed = {
    table: 'organizations',
    columns: ['id', 'slug', 'name', 'created_at', 'updated_at'],
    count: organizationCount,
    *rows() {
      for (let j = 0; j < organizationCount; j++) yield [id(ORGANIZATION, j), `${LAST_NAMES[j % 17]}-org-${j}`, `${capitalised(LAST_NAMES[j % 17]!)} Org ${j}`, createdAt(j * 10), createdAt(j * 10)];
    },
  };
  const members: TableSeed = {
    table: 'organization_members',
    columns: ['organization_id', 'user_id', 'role', 'created_at', 'updated_at'],
    count,
    *rows() {
      for (let i = 0; i < count; i++) yield [id(ORGANIZATION, Math.floor(i / 10)), id(USER, i), i % 10 === 0 ? 'OWNER' : i % 10 === 1 ? 'ADMIN' : 'MEMBER', createdAt(i), createdAt(i)];
    },
  };
  const eventCount = 5 * count;
  const auditEvents: TableSeed = {
    table: 'audit_events',
    columns: ['id', 'type', 'user_id', 'actor_user_id', 'email', 'ip', 'user_agent', 'reason', 'details', 'created_at'],
    count: eventCount,
    *rows() {
      const year = 365 * DAY_MS;
      for (let k = 0; k < eventCount; k++) {
        const user = Math.floor(k / 5);
        const dice = mix(k ^ 0x5bd1e995);
        const type = EVENT_TYPES[dice % 100]!;
        const at = now - (mix(dice) % year);
        const isFailure = type === 'signin.failure';
        // One failure in four tried an address no account has.
        const isStranger = isFailure && dice % 4 === 0;
        const userId = isStranger ? null : id(USER, user);
        const email = isFailure ? (isStranger ? `nobody${k}@${DOMAINS[k % 8]}` : seededEmail(user)) : null;
        const details = type === 'signin.success' ? '{"method":"password"}' : isFailure ? '{"method":"password"}' : null;
        yield [id(EVENT, k), type, userId, type === 'user.roles_changed' ? id(USER, 500) : null, email, `198.51.100.${dice % 250}`, USER_AGENTS[dice % 3]!, isFailure ? 'INVALID_CREDENTIALS' : null, details, at];
      }
    },
  };
  return [users, roles, factors, sessions, organizations, members, auditEvents];
}

/** One row as a line of COPY's text format: tabs between fields, \N for null, backslashes escaped. */
function copyLine(values: unknown[]): string {
  let line = '';
  for (let c = 0; c < values.length; c++) {
    const value = values[c];
    if (c > 0) line += '\t';
    if (value === null || value === undefined) line += '\\N';
    else if (typeof value === 'string') line += /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (ch) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[ch]!) : value;
    else line += String(value);
  }
  return `${line}\n`;
}

/** The table's rows as COPY text, in chunks of about 64 KiB. */
function copyText(seed: TableSeed): Readable {
  const rows = seed.rows();
  return Readable.from(
    (function* () {
      let chunk = '';
      for (const row of rows) {
        chunk += copyLine(row);
        if (chunk.length > 65_536) {
          yield chunk;
          chunk = '';
        }
      }
      if (chunk !== '') yield chunk;
    })(),
  );
}

async function seedPostgres(url: string, tables: TableSeed[], log: (line: string) => void): Promise<{ indexSeconds: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let indexSeconds = 0;
  /** Runs a step of the rebuild, counted in indexSeconds; one that takes long is named in the log. */
  const timed = async (name: string, run: () => Promise<unknown>) => {
    const started = performance.now();
    await run();
    const seconds = (performance.now() - started) / 1000;
    indexSeconds += seconds;
    if (seconds >= 5) log(`  ${name}: ${seconds.toFixed(1)} s`);
  };
  try {
    await client.query(`SET maintenance_work_mem = '512MB'`);
    const names = tables.map((seed) => seed.table);
    // Every key, unique constraint, foreign key and index on the seeded tables (and the foreign
    // keys of other tables that point at them), as the migrations made them: dropped before the
    // COPY, made again from their own definitions after it, each index in one sorted pass instead
    // of millions of random inserts, each foreign key checked in one query.
    const { rows: constraints } = await client.query<{ name: string; table: string; kind: string; definition: string }>(
      `SELECT c.conname AS name, c.conrelid::regclass::text AS table, c.contype AS kind, pg_get_constraintdef(c.oid) AS definition
         FROM pg_constraint c
        WHERE c.contype IN ('p', 'u', 'f')
          AND (c.conrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) AS t) OR c.confrelid = ANY (SELECT to_regclass(t) FROM unnest($1::text[]) AS t))`,
      [names],
    );
    const { rows: indexes } = await client.query<{ name: string; definition: string }>(
      `SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
        WHERE i.schemaname = current_schema() AND i.tablename = ANY ($1::text[])
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.conrelid = to_regclass(i.tablename))`,
      [names],
    );
    const foreignKeys = constraints.filter((constraint) => constraint.kind === 'f');
    const keys = constraints.filter((constraint) => constraint.kind !== 'f');
    // regclass::text is already quoted where it needs to be.
    const alter = (constraint: { table: string }) => `ALTER TABLE ${constraint.table} `;
    for (const constraint of [...foreignKeys, ...keys]) await client.query(`${alter(constraint)}DROP CONSTRAINT ${pg.escapeIdentifier(constraint.name)}`);
    for (const index of indexes) await client.query(`DROP INDEX ${pg.escapeIdentifier(index.name)}`);

    for (const seed of tables) {
      const started = performance.now();
      const columns = seed.columns.map((column) => pg.escapeIdentifier(column)).join(', ');
      await pipeline(copyText(seed), client.query(copyFrom(`COPY ${pg.escapeIdentifier(seed.table)} (${columns}) FROM STDIN`)));
      log(`${seed.table}: ${seed.count} rows copied in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    const started = performance.now();
    for (const key of keys) await timed(key.name, () => client.query(`${alter(key)}ADD CONSTRAINT ${pg.escapeIdentifier(key.name)} ${key.definition}`));
    for (const index of indexes) await timed(index.name, () => client.query(index.definition));
    log(`${keys.length} keys and ${indexes.length} indexes made again in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const checked = performance.now();
    for (const foreignKey of foreignKeys) await timed(foreignKey.name, () => client.query(`${alter(foreignKey)}ADD CONSTRAINT ${pg.escapeIdentifier(foreignKey.name)} ${foreignKey.definition}`));
    log(`${foreignKeys.length} foreign keys made again (and checked) in ${((performance.now() - checked) / 1000).toFixed(1)} s`);
    const vacuumed = performance.now();
    // What autovacuum would do soon after a bulk load (the planner needs the row counts, index-only
    // scans the visibility map); done now, it does not run during the measurement.
    await timed('VACUUM (ANALYZE)', () => client.query(`VACUUM (ANALYZE) ${tables.map((seed) => pg.escapeIdentifier(seed.table)).join(', ')}`));
    log(`VACUUM (ANALYZE) in ${((performance.now() - vacuumed) / 1000).toFixed(1)} s`);
  } finally {
    await client.end();
  }
  return { indexSeconds };
}

async function seedSqlite(db: Db, tables: TableSeed[], batchSize: number, log: (line: string) => void): Promise<void> {
  // One writer: many batches per transaction, so each commit is worth its WAL sync.
  const batchesPerTransaction = 20;
  for (const seed of tables) {
    const started = performance.now();
    const rows = seed.rows();
    let isDone = false;
    while (!isDone) {
      await db.transaction().execute(async (trx) => {
        for (let b = 0; b < batchesPerTransaction && !isDone; b++) {
          const batch: Record<string, unknown>[] = [];
          for (let next = rows.next(); ; next = rows.next()) {
            if (next.done === true) {
              isDone = true;
              break;
            }
            batch.push(Object.fromEntries(seed.columns.map((column, c) => [column, next.value[c]])));
            if (batch.length === batchSize) break;
          }
          // The table is one of ours, its columns the migrations' own: no row type to check against here.
          if (batch.length > 0) await trx.insertInto(seed.table as 'users').values(batch as never).execute();
        }
      });
    }
    log(`${seed.table}: ${seed.count} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  await sql`analyze`.execute(db);
}

/** The argon2id parameters of the shared hash: the server's defaults unless a scenario runs others. */
export interface SeedHashParameters {
  memoryKib: number;
  iterations: number;
}

const DEFAULT_HASH_PARAMETERS: SeedHashParameters = { memoryKib: 19_456, iterations: 2 };

export async function seed(
  config: DatabaseConfig,
  count: number,
  options: { shape?: SeedShape; batchSize?: number; log?: (line: string) => void; hashParameters?: SeedHashParameters } = {},
): Promise<SeedReport> {
  const { shape = 'plain', batchSize = 1_000, log = () => {}, hashParameters = DEFAULT_HASH_PARAMETERS } = options;
  const started = performance.now();
  const storage = openStorage(config, { poolSize: 2 });
  let tables: TableSeed[];
  let indexSeconds = 0;
  try {
    await migrateToLatest(storage.db);
    const passwordHash = await hash(SEED_PASSWORD, { algorithm: ARGON2ID, memoryCost: hashParameters.memoryKib, timeCost: hashParameters.iterations, parallelism: 1 });
    tables = seedTables(shape, count, passwordHash, Date.now(), randomBytes(16));
    if (config.kind === 'sqlite') await seedSqlite(storage.db, tables, batchSize, log);
  } finally {
    await storage.close();
  }
  if (config.kind === 'postgres') ({ indexSeconds } = await seedPostgres(config.url, tables, log));
  const seconds = (performance.now() - started) / 1000;
  const countOf = (table: string) => tables.find((seed) => seed.table === table)?.count ?? 0;
  const rows = tables.reduce((sum, seed) => sum + seed.count, 0);
  return {
    database: config.kind,
    shape,
    users: count,
    sessions: countOf('sessions'),
    organizations: countOf('organizations'),
    members: countOf('organization_members'),
    auditEvents: countOf('audit_events'),
    rows,
    seconds: Math.round(seconds * 10) / 10,
    indexSeconds: Math.round(indexSeconds * 10) / 10,
    rowsPerSecond: Math.round(rows / seconds),
  };
}

if (import.meta.main) {
  const url = process.env.DATABASE_URL;
  if (url === undefined || url === '') throw new Error('DATABASE_URL is required (sqlite:<path> or postgres://...)');
  const count = positiveInteger(process.env.SEED_COUNT, 'SEED_COUNT', 1_000_000);
  const batchSize = positiveInteger(process.env.SEED_BATCH, 'SEED_BATCH', 1_000);
  // SQLite allows 32,766 bound values per statement; sessions have 13 columns.
  if (batchSize * 13 > 32_766) throw new Error('SEED_BATCH must be at most 2520');
  const shape = process.env.SEED_SHAPE ?? 'plain';
  if (shape !== 'plain' && shape !== 'growth' && shape !== 'users') throw new Error(`SEED_SHAPE must be plain, growth or users (got "${shape}")`);
  const hashParameters = {
    memoryKib: positiveInteger(process.env.SEED_ARGON2_MEMORY_KIB, 'SEED_ARGON2_MEMORY_KIB', DEFAULT_HASH_PARAMETERS.memoryKib),
    iterations: positiveInteger(process.env.SEED_ARGON2_ITERATIONS, 'SEED_ARGON2_ITERATIONS', DEFAULT_HASH_PARAMETERS.iterations),
  };
  const report = await seed(parseDatabaseUrl(url), count, { shape, batchSize, log: (line) => process.stderr.write(`${line}\n`), hashParameters });
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
