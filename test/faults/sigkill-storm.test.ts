/**
 * SIGKILL during a storm of sign-ins, password resets and sign-ups (issue 9, fault 4), on the
 * embedded SQLite file. Several rounds: storm, SIGKILL at a random moment with requests in flight,
 * restart on the same DATA_DIR / DATABASE_URL, then check the file and the service:
 * - `PRAGMA integrity_check` is ok and `PRAGMA foreign_key_check` finds nothing;
 * - nothing half-done. A password reset writes, in one transaction: the token consumed, the new
 *   hash, the address verified, every session ended, the `password-changed` mail and the
 *   `password.reset` event. So for every reset link: consumed ⇔ hash changed ⇔ mail ⇔ event ⇔
 *   sessions ended. A sign-up writes the user, its verification token, the `verify-email` mail and
 *   `user.created` together: no user without the other three, and none of them without a user;
 * - nothing acknowledged is lost: a sign-up answered 202 exists, a reset answered 200 took effect;
 * - the service agrees: a reset user signs in with the new password if and only if the reset
 *   committed, with the old one otherwise.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { GENEROUS_LIMITS } from '../helpers/app.ts';
import { serverScratch, startGatehouse, type ChildEnv, type RunningGatehouse } from '../helpers/process.ts';
import { call, countOutcomes, describeOutcome, runLoops, sleep, waitUntil, type Outcome } from '../helpers/traffic.ts';
import { sha256Base64url } from '../../src/lib/random.ts';

const ROUNDS = 3;
const RESET_USERS_PER_ROUND = 8;
const STORM_LOOPS = 12;
const ADMIN_EMAIL = 'storm-admin@example.test';
const ADMIN_PASSWORD = 'granite-meadow-compass-19';
const OLD_PASSWORD = 'copper-valley-whistle-55';
const DEV_OUTBOX_LOG = 'mail kept in the dev outbox (EMAIL_SERVER_HOST is not set)';

interface ResetUser {
  email: string;
  token: string;
  newPassword: string;
  hashBefore: string;
  /** Epoch ms after its session from before the storm was made: a committed reset ends it. */
  signedInBy: number;
  /** Statuses of the (two, racing) reset requests made with its token. */
  answers: number[];
}

type Row = Record<string, unknown>;

function inspect(dbPath: string, query: (db: DatabaseSync) => void): void {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    query(db);
  } finally {
    db.close();
  }
}

describe('SIGKILL during a storm of sign-ins, resets and sign-ups (SQLite)', { timeout: 90_000 }, () => {
  it('leaves no half-done writes, loses nothing acknowledged, and restarts on an intact file', { timeout: 80_000 }, async (t) => {
    const { cleanup, dataDir, env: serverEnv } = serverScratch(t, 'fault-kill');
    const dbPath = join(dataDir, 'gatehouse.db');
    const env: ChildEnv = {
      ...serverEnv,
      DATABASE_URL: `sqlite:${dbPath}`,
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      // Cheap hashes: the storm is bound by transactions rather than argon2, so more of them are
      // open when the kill lands.
      ARGON2_MEMORY_KIB: '1024',
      ARGON2_ITERATIONS: '1',
      ...GENEROUS_LIMITS,
    };
    const start = () => startGatehouse({ env, cleanup, deadlineMs: 60_000 });

    const resetUsers: ResetUser[] = [];
    /** Sign-ups answered 202 before a kill: each must exist after it. */
    const acknowledgedSignups = new Set<string>();
    const roundFigures: Array<Record<string, unknown>> = [];
    let signupCounter = 0;
    let server: RunningGatehouse = await start();

    for (let round = 1; round <= ROUNDS; round++) {
      const { base } = server;
      // Accounts to reset in this round, each with one live reset link read from the dev outbox log.
      const fresh = Array.from({ length: RESET_USERS_PER_ROUND }, (_, i) => `reset-r${round}-${i}@example.test`);
      await Promise.all(
        fresh.map(async (email) => {
          const signup = await call(base, '/api/auth/signup', 'signup', { body: { email, password: OLD_PASSWORD, name: 'Reset Me' } });
          assert.equal(signup.status, 202, describeOutcome(signup));
          const forgot = await call(base, '/api/auth/forgot-password', 'forgot', { body: { email } });
          assert.equal(forgot.status, 202, describeOutcome(forgot));
        }),
      );
      const linkOf = (email: string) =>
        server.child
          .logs()
          .find((entry) => entry.msg === DEV_OUTBOX_LOG && entry.template === 'password-reset' && entry.to === email)
          ?.links as string[] | undefined;
      await waitUntil(async () => fresh.every((email) => linkOf(email) !== undefined), 10_000, 50, 'the reset links in the dev outbox log');
      const hashes = new Map<string, string>();
      inspect(dbPath, (db) => {
        for (const email of fresh) hashes.set(email, (db.prepare('SELECT password_hash FROM users WHERE email = ?').get(email) as Row).password_hash as string);
      });
      const roundUsers: ResetUser[] = fresh.map((email, i) => ({
        email,
        token: new URL(linkOf(email)![0]!).searchParams.get('token')!,
        newPassword: `harbour-signal-${round}-${i}-lantern`,
        hashBefore: hashes.get(email)!,
        signedInBy: 0,
        answers: [],
      }));
      resetUsers.push(...roundUsers);
      // Each reset user also has a session, which a committed reset must end.
      for (const user of roundUsers) {
        const signin = await call(base, '/api/auth', 'signin', { body: { email: user.email, password: OLD_PASSWORD } });
        assert.equal(signin.status, 200, describeOutcome(signin));
        user.signedInBy = Date.now();
      }

      // The storm.
      const outcomes: Outcome[] = [];
      const pendingResets = roundUsers.flatMap((user) => [user, user]); // two racing requests per link
      let killed = false;
      const stormStart = performance.now();
      const killAfterMs = 700 + Math.random() * 900;
      const storm = runLoops(STORM_LOOPS, () => killed, async (loop) => {
        const action = loop % 4;
        if (action === 0 || (action === 1 && pendingResets.length === 0)) {
          const email = `signup-${++signupCounter}@example.test`;
          const o = await call(base, '/api/auth/signup', 'signup', { body: { email, password: OLD_PASSWORD, name: 'Storm' } });
          outcomes.push(o);
          if (o.status === 202) acknowledgedSignups.add(email);
        } else if (action === 1) {
          const user = pendingResets.splice(Math.floor(Math.random() * pendingResets.length), 1)[0]!;
          const o = await call(base, '/api/auth/reset-password', 'reset', { body: { token: user.token, password: user.newPassword } });
          outcomes.push(o);
          user.answers.push(o.status);
        } else if (action === 2) {
          outcomes.push(await call(base, '/api/auth', 'signin', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } }));
        } else {
          outcomes.push(await call(base, '/api/auth/forgot-password', 'forgot', { body: { email: `signup-${Math.max(1, signupCounter)}@example.test` } }));
        }
      });
      await sleep(killAfterMs);
      server.child.process.kill('SIGKILL');
      const exit = await server.child.waitForExit(10_000);
      killed = true;
      await storm;
      assert.equal(exit.signal, 'SIGKILL');
      roundFigures.push({ round, killedAfterMs: Math.round(performance.now() - stormStart), outcomes: countOutcomes(outcomes) });
      for (const o of outcomes) assert.ok(o.status === 0 || o.status < 500, `before the kill: ${describeOutcome(o)}`);

      // Restart on the same file.
      const restartAt = performance.now();
      server = await start();
      const health = await call(server.base, '/api/health', 'health');
      assert.equal(health.status, 200, describeOutcome(health));
      roundFigures.at(-1)!.restartMs = Math.round(performance.now() - restartAt);

      checkFile(dbPath, resetUsers, acknowledgedSignups);
      // The service agrees with the file: the new password works iff the reset committed.
      inspect(dbPath, (db) => {
        for (const user of roundUsers) {
          const consumed = (db.prepare('SELECT consumed_at FROM action_tokens WHERE token_hash = ?').get(sha256Base64url(user.token)) as Row).consumed_at !== null;
          (user as ResetUser & { committed?: boolean }).committed = consumed;
        }
      });
      for (const user of roundUsers as Array<ResetUser & { committed?: boolean }>) {
        const withNew = await call(server.base, '/api/auth', 'signin', { body: { email: user.email, password: user.newPassword } });
        const withOld = await call(server.base, '/api/auth', 'signin', { body: { email: user.email, password: OLD_PASSWORD } });
        assert.deepEqual([withNew.status, withOld.status], user.committed ? [200, 401] : [401, 200], `${user.email} (reset committed: ${user.committed}, answers ${user.answers})`);
      }
    }

    // A clean stop, and the file is intact once nobody has it open.
    assert.deepEqual(await server.child.stop(10_000), { code: 0, signal: null });
    checkFile(dbPath, resetUsers, acknowledgedSignups);
    const committed = (resetUsers as Array<ResetUser & { committed?: boolean }>).filter((u) => u.committed).length;
    t.diagnostic(JSON.stringify({ rounds: roundFigures, resetLinks: resetUsers.length, resetsCommitted: committed, signupsAcknowledged: acknowledgedSignups.size }));
  });
});

/** The file's integrity and every "written together" invariant, read straight from SQLite. */
function checkFile(dbPath: string, resetUsers: readonly ResetUser[], acknowledgedSignups: ReadonlySet<string>): void {
  inspect(dbPath, (db) => {
    const all = (sql: string, ...params: Array<string | number>) => (db.prepare(sql).all(...params) as Row[]).map((row) => ({ ...row }));
    const one = (sql: string, ...params: Array<string | number>) => db.prepare(sql).get(...params) as Row | undefined;

    assert.deepEqual(all('PRAGMA integrity_check').map((row) => row.integrity_check), ['ok']);
    assert.deepEqual(all('PRAGMA foreign_key_check'), []);

    // Password resets: all of it or none of it.
    for (const user of resetUsers) {
      const token = one('SELECT consumed_at FROM action_tokens WHERE token_hash = ?', sha256Base64url(user.token));
      assert.ok(token !== undefined, `the reset token of ${user.email} exists`);
      const row = one('SELECT id, password_hash, email_verified_at FROM users WHERE email = ?', user.email)!;
      const consumed = token.consumed_at !== null;
      const facts = {
        consumed,
        hashChanged: row.password_hash !== user.hashBefore,
        verified: row.email_verified_at !== null,
        resetEvent: one("SELECT count(*) AS n FROM audit_events WHERE type = 'password.reset' AND user_id = ?", row.id as string)!.n === 1,
        noticeMail: one("SELECT count(*) AS n FROM mail_outbox WHERE template = 'password-changed' AND to_address = ?", user.email)!.n === 1,
        // Sessions from before the storm; the service's own sign-ins after a restart come later.
        sessionsEnded: one('SELECT count(*) AS n FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND created_at <= ?', row.id as string, user.signedInBy)!.n === 0,
      };
      const expected = Object.fromEntries(Object.keys(facts).map((key) => [key, consumed]));
      assert.deepEqual(facts, expected, `${user.email}: a reset is all or nothing (answers: ${user.answers})`);
      if (user.answers.includes(200)) assert.ok(consumed, `${user.email}: a reset answered 200 is durable`);
      assert.ok(user.answers.filter((status) => status === 200).length <= 1, `${user.email}: one link, at most one reset`);
    }

    // Sign-ups: the user, its verification token, its mail and its event, together.
    const signupUsers = all("SELECT id, email FROM users WHERE email LIKE 'signup-%' OR email LIKE 'reset-r%'");
    for (const user of signupUsers) {
      const facts = {
        token: one("SELECT count(*) AS n FROM action_tokens WHERE purpose = 'email_verification' AND user_id = ?", user.id as string)!.n,
        mail: one("SELECT count(*) AS n FROM mail_outbox WHERE template = 'verify-email' AND to_address = ?", user.email as string)!.n,
        event: one("SELECT count(*) AS n FROM audit_events WHERE type = 'user.created' AND user_id = ?", user.id as string)!.n,
      };
      assert.deepEqual(facts, { token: 1, mail: 1, event: 1 }, `${user.email as string}: created with all that goes with it`);
    }
    const emails = new Set(signupUsers.map((user) => user.email as string));
    for (const email of acknowledgedSignups) assert.ok(emails.has(email), `${email}: a sign-up answered 202 is durable`);
    // And nothing that belongs to a sign-up exists without its user.
    assert.deepEqual(all("SELECT to_address FROM mail_outbox WHERE template = 'verify-email' AND to_address NOT IN (SELECT email FROM users)"), []);
    assert.deepEqual(all("SELECT id FROM audit_events WHERE type = 'user.created' AND user_id NOT IN (SELECT id FROM users)"), []);
    assert.deepEqual(all("SELECT id FROM action_tokens WHERE user_id NOT IN (SELECT id FROM users)"), []);
    // Every queued mail can still be read (payload present until it is sent over SMTP).
    assert.deepEqual(all("SELECT id FROM mail_outbox WHERE status = 'pending' AND payload IS NULL"), []);
  });
}
