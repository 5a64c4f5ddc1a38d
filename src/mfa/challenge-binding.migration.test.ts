/**
 * The migration 20261129-mfa-challenge-binding, on SQLite and PostgreSQL: sign-ins waiting for a
 * second factor when it runs (made by the code before it, with `provider` / `password_fingerprint`)
 * carry over as a kind and a binding, and still finish, or fail as they would have; `down` goes back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { decodeJwt } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, testEnv } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { openStorage } from '../storage/database.ts';
import { applyMigrations } from '../storage/migrations.ts';
import { loadConfig, migrateToLatest } from '../modules.ts';
import { collectMigrations } from '../module.ts';
import { MODULES } from '../modules.ts';
import { createServices } from '../services.ts';
import { buildApp } from '../app.ts';
import { randomSecret, sha256Base64url } from '../lib/random.ts';
import * as challengeBinding from './migrations/20261129-mfa-challenge-binding.ts';

const PASSWORD = 'correct horse battery staple';
const MIGRATION = '20261129-mfa-challenge-binding';
const SOURCE = { actorUserId: null, ip: null, userAgent: null };

for (const backend of await backends()) {
  describe(`${MIGRATION} (${backend.name})`, { skip: backend.skip }, () => {
    it('carries pending challenges over: a password\'s and a provider\'s still finish, a changed password\'s does not', async () => {
      const database = await backend.create();
      const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-migration-'));
      const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database) });
      const storage = openStorage(config.database);
      const { db } = storage;
      const clock = fakeClock();
      try {
        // The schema as it was: every migration but this one.
        const before = Object.fromEntries(Object.entries(collectMigrations(MODULES)).filter(([name]) => name !== MIGRATION));
        await applyMigrations(db, before);
        const services = await createServices({ config, storage, clock });
        const app = await buildApp(services);
        try {
          const created = await createUser(services, { email: 'pending@example.com', password: PASSWORD });
          const user = (await services.users.findUserById(created.id))!;
          const setup = await services.mfa.beginTotpSetup(user);
          assert.ok(setup.ok);
          const enabled = await services.mfa.enableTotp(user, totpCode(setup.secret, clock()), { ...SOURCE, actorUserId: user.id });
          assert.ok(enabled.ok);
          clock.advance(TOTP_STEP_MS);
          const hash = (await services.users.findCredentialsById(user.id))!.passwordHash!;

          // Challenges as the code before the migration wrote them.
          const tokens = { password: randomSecret(), provider: randomSecret(), stale: randomSecret() };
          const now = clock();
          const insert = (token: string, factor: string, provider: string | null, fingerprint: string | null) =>
            sql`insert into mfa_challenges (id, user_id, factor, provider, password_fingerprint, failed_attempts, created_at, expires_at)
                values (${sha256Base64url(token)}, ${user.id}, ${factor}, ${provider}, ${fingerprint}, 0, ${now}, ${now + 300_000})`.execute(db);
          await insert(tokens.password, 'password', null, sha256Base64url(hash));
          await insert(tokens.provider, 'provider', 'github', null);
          await insert(tokens.stale, 'password', null, sha256Base64url('a hash the account had before'));

          const applied = await migrateToLatest(db);
          assert.deepEqual(applied.results?.map((result) => result.migrationName), [MIGRATION]);
          const rows = await db.selectFrom('mfa_challenges').select(['id', 'factor', 'binding']).execute();
          const carried = rows
            .map(({ id, factor, binding }) => ({ token: Object.entries(tokens).find(([, token]) => sha256Base64url(token) === id)?.[0], factor, binding }))
            .sort((a, b) => String(a.token).localeCompare(String(b.token)));
          assert.deepEqual(carried, [
            { token: 'password', factor: 'password', binding: sha256Base64url(hash) },
            { token: 'provider', factor: 'oauth', binding: 'github' },
            { token: 'stale', factor: 'password', binding: sha256Base64url('a hash the account had before') },
          ]);

          const verify = (mfaToken: string, answer: { code?: string; recoveryCode?: string }) => app.inject({ method: 'POST', url: '/api/auth/mfa/verify', payload: { mfaToken, ...answer } });
          const byPassword = await verify(tokens.password, { code: totpCode(setup.secret, clock()) });
          assert.equal(byPassword.statusCode, 200, byPassword.body);
          assert.deepEqual(decodeJwt(byPassword.json().token).amr, ['pwd', 'otp', 'mfa']);
          const byProvider = await verify(tokens.provider, { recoveryCode: enabled.recoveryCodes[0]! });
          assert.equal(byProvider.statusCode, 200, byProvider.body);
          assert.deepEqual(decodeJwt(byProvider.json().token).amr, ['fed', 'otp', 'mfa']);
          const stale = await verify(tokens.stale, { recoveryCode: enabled.recoveryCodes[1]! });
          assert.equal(stale.statusCode, 401, stale.body);
          assert.equal(stale.json().error, 'INVALID_TOKEN');

          // And back: a password's and a provider's challenge in the old columns; another kind's cannot be, and goes.
          const pending = await app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } });
          assert.equal(pending.statusCode, 403, pending.body);
          await sql`insert into mfa_challenges (id, user_id, factor, binding, failed_attempts, created_at, expires_at) values ('p2', ${user.id}, 'oauth', 'google', 0, ${now}, ${now + 300_000})`.execute(db);
          await sql`insert into mfa_challenges (id, user_id, factor, binding, failed_attempts, created_at, expires_at) values ('p3', ${user.id}, 'device-link', 'k', 0, ${now}, ${now + 300_000})`.execute(db);
          await challengeBinding.down(db as unknown as Kysely<unknown>);
          const old = await sql<{ id: string; factor: string; provider: string | null; password_fingerprint: string | null }>`select id, factor, provider, password_fingerprint from mfa_challenges order by factor`.execute(db);
          assert.deepEqual(
            old.rows.map((row) => ({ ...row, id: row.id === 'p2' ? 'p2' : 'signed-in' })),
            [
              { id: 'signed-in', factor: 'password', provider: null, password_fingerprint: sha256Base64url(hash) },
              { id: 'p2', factor: 'provider', provider: 'google', password_fingerprint: null },
            ],
          );
        } finally {
          await app.close();
        }
      } finally {
        await storage.close();
        await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
