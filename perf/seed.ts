/**
 * Fills a Gatehouse store with SEED_COUNT users and as many live sessions (one each), for the
 * growth benchmark. The schema is the project's own: migrations run first (src/storage/database.ts
 * `migrateToLatest`), and rows go in through the same Kysely types, in multi-row INSERTs of
 * SEED_BATCH rows. Every user shares one precomputed argon2id hash (of "seed-password-0001"),
 * since hashing a million passwords would take hours and prove nothing about storage.
 *
 *   DATABASE_URL=sqlite:/tmp/x/gatehouse.db SEED_COUNT=1000000 node perf/seed.ts
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch node perf/seed.ts
 *
 * Ids are random like the service's (128-bit base64url), so indexes grow the way they do in
 * production. Sessions are live: they expire in 30 days and were last seen within the idle
 * timeout, so housekeeping leaves them alone. Prints one JSON line with the counts and timing.
 *
 * SEED_ARGON2_MEMORY_KIB and SEED_ARGON2_ITERATIONS (default: the server's defaults) set the
 * parameters of that hash: a scenario whose server runs with other ARGON2_* settings passes its
 * own, or every first sign-in would rehash the password.
 */
import { hash, type Algorithm } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { DatabaseConfig } from '../src/config.ts';
import { openStorage, type Db } from '../src/storage/database.ts';
import { migrateToLatest } from '../src/modules.ts';
import type { SessionRow, UserRow } from '../src/storage/schema.ts';

const ARGON2ID = 2 as Algorithm;
const DAY_MS = 86_400_000;
export const SEED_PASSWORD = 'seed-password-0001';
/** The address of the `index`-th user (from 0). */
export const seededEmail = (index: number) => `seed-${index}@seed.example`;

export interface SeedReport {
  database: DatabaseConfig['kind'];
  users: number;
  sessions: number;
  seconds: number;
  rowsPerSecond: number;
}

function parseDatabaseUrl(url: string): DatabaseConfig {
  if (url.startsWith('sqlite:')) return { kind: 'sqlite', path: url.slice('sqlite:'.length) };
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { kind: 'postgres', url };
  throw new Error(`DATABASE_URL must be sqlite:<path> or postgres://... (got "${url}")`);
}

function positiveInteger(raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer (got "${raw}")`);
  return value;
}

const id = () => randomBytes(16).toString('base64url');

/** The argon2id parameters of the shared hash: the server's defaults unless a scenario runs others. */
export interface SeedHashParameters {
  memoryKib: number;
  iterations: number;
}

const DEFAULT_HASH_PARAMETERS: SeedHashParameters = { memoryKib: 19_456, iterations: 2 };

export async function seed(
  config: DatabaseConfig,
  count: number,
  batchSize: number,
  log: (line: string) => void = () => {},
  hashParameters: SeedHashParameters = DEFAULT_HASH_PARAMETERS,
): Promise<SeedReport> {
  const storage = openStorage(config, { poolSize: 4 });
  const started = performance.now();
  try {
    await migrateToLatest(storage.db);
    const passwordHash = await hash(SEED_PASSWORD, { algorithm: ARGON2ID, memoryCost: hashParameters.memoryKib, timeCost: hashParameters.iterations, parallelism: 1 });
    const refreshSeed = randomBytes(32).toString('base64url');
    const now = Date.now();

    const makeBatch = (from: number, size: number) => {
      const users: UserRow[] = [];
      const sessions: SessionRow[] = [];
      for (let i = from; i < from + size; i++) {
        const userId = id();
        const createdAt = now - 400 * DAY_MS + i;
        users.push({
          id: userId,
          email: seededEmail(i),
          name: `Seed User ${i}`,
          password_hash: passwordHash,
          email_verified_at: createdAt,
          name_confirmed_at: createdAt,
          locale: null,
          disabled_at: null,
          created_at: createdAt,
          updated_at: createdAt,
          password_locked_at: null,
        });
        sessions.push({
          id: id(),
          user_id: userId,
          refresh_seed: refreshSeed,
          refresh_generation: 0,
          refresh_rotated_at: null,
          created_at: now - 20 * DAY_MS,
          expires_at: now + 30 * DAY_MS,
          // Within the 7-day idle timeout, spread over 6 days.
          last_seen_at: now - Math.floor(Math.random() * 6 * DAY_MS),
          revoked_at: null,
          ip: '203.0.113.7',
          user_agent: 'seed/1.0',
          amr: 'pwd',
          auth_time: now - 20 * DAY_MS,
        });
      }
      return { users, sessions };
    };

    const insertBatch = async (db: Db, from: number) => {
      const { users, sessions } = makeBatch(from, Math.min(batchSize, count - from));
      await db.insertInto('users').values(users).execute();
      await db.insertInto('sessions').values(sessions).execute();
    };

    let done = 0;
    let lastLog = performance.now();
    const progress = () => {
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        log(`seeded ${done} of ${count} users and sessions (${Math.round((2 * done) / ((performance.now() - started) / 1000))} rows/s)`);
      }
    };
    if (config.kind === 'sqlite') {
      // One writer: many batches per transaction, so each commit is worth its WAL sync.
      const batchesPerTransaction = 20;
      while (done < count) {
        await storage.db.transaction().execute(async (trx) => {
          for (let b = 0; b < batchesPerTransaction && done < count; b++) {
            await insertBatch(trx, done);
            done += Math.min(batchSize, count - done);
          }
        });
        progress();
      }
    } else {
      // Two INSERTs in flight keep PostgreSQL busy while this process builds the next batch.
      const inFlight = 2;
      let next = 0;
      const lane = async () => {
        while (next < count) {
          const from = next;
          next += batchSize;
          await insertBatch(storage.db, from);
          done += Math.min(batchSize, count - from);
          progress();
        }
      };
      await Promise.all(Array.from({ length: inFlight }, lane));
      // What autovacuum would do soon after a bulk load (the planner needs the new row counts, and
      // index-only scans the visibility map); done now, it does not run during the measurement.
      await sql`VACUUM (ANALYZE) users, sessions`.execute(storage.db);
    }
    const seconds = (performance.now() - started) / 1000;
    return { database: config.kind, users: count, sessions: count, seconds: Math.round(seconds * 10) / 10, rowsPerSecond: Math.round((2 * count) / seconds) };
  } finally {
    await storage.close();
  }
}

if (import.meta.main) {
  const url = process.env.DATABASE_URL;
  if (url === undefined || url === '') throw new Error('DATABASE_URL is required (sqlite:<path> or postgres://...)');
  const count = positiveInteger(process.env.SEED_COUNT, 'SEED_COUNT', 1_000_000);
  const batchSize = positiveInteger(process.env.SEED_BATCH, 'SEED_BATCH', 1_000);
  // SQLite allows 32,766 bound values per statement; PostgreSQL 65,535. Sessions have 11 columns.
  if (batchSize * 11 > 32_766) throw new Error('SEED_BATCH must be at most 2978');
  const hashParameters = {
    memoryKib: positiveInteger(process.env.SEED_ARGON2_MEMORY_KIB, 'SEED_ARGON2_MEMORY_KIB', DEFAULT_HASH_PARAMETERS.memoryKib),
    iterations: positiveInteger(process.env.SEED_ARGON2_ITERATIONS, 'SEED_ARGON2_ITERATIONS', DEFAULT_HASH_PARAMETERS.iterations),
  };
  const report = await seed(parseDatabaseUrl(url), count, batchSize, (line) => process.stderr.write(`${line}\n`), hashParameters);
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
