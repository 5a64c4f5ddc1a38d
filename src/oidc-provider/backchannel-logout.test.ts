/**
 * Back-channel logout as Gatehouse sends it (backchannel-logout.ts), on SQLite and PostgreSQL: a
 * Gatehouse session's end turns its links into deliveries in the same transaction; the worker
 * posts a logout token signed with Gatehouse's keys (`typ: logout+jwt`, `aud` the app, `sub`,
 * `sid`, the back-channel event, a `jti`, no `nonce`) under the outbound rules; an app's 5xx is
 * retried, its 400 is not; a loopback app is refused unless OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS;
 * "sign out everywhere else" spares the kept session's apps. The sign-in that links is Chromium's,
 * in packages/protect/test/sign-in.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { listeningApp, registerClient, type ListeningApp } from '../../test/helpers/oidc-rp.ts';
import { createSignedInUser } from '../../test/helpers/app.ts';
import type { TestDatabase } from '../../test/helpers/databases.ts';

const PASSWORD = 'correct horse battery staple 1815';

/** An app's back-channel endpoint: what it was sent, and the status it answers with next. */
async function startReceiver(): Promise<{ server: Server; url: string; received: string[]; answer: { status: number } }> {
  const received: string[] = [];
  const answer = { status: 200 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      received.push(body);
      res.statusCode = answer.status;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/auth/backchannel-logout`, received, answer };
}

for (const backend of await backends()) {
  describe(`back-channel logout sent by Gatehouse on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: ListeningApp;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let clientId: string;
    let count = 0;

    before(async () => {
      database = await backend.create();
      t = await listeningApp(database, { OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true' });
      receiver = await startReceiver();
      ({ clientId } = await registerClient(t, { name: 'App', redirectUris: ['http://127.0.0.1:1/cb'], backchannelLogoutUri: receiver.url }));
    });
    after(async () => {
      await new Promise((resolve) => receiver?.server.close(resolve));
      await t?.close();
      await database?.drop();
    });

    const backchannel = () => t.services.oidcProvider.backchannel;
    const deliveries = () => t.services.storage.db.selectFrom('oidc_logout_deliveries').selectAll().orderBy('created_at').orderBy('sid').execute();
    async function signedInWithLink(sid: string) {
      const user = await createSignedInUser(t, { email: `person-${++count}@example.com`, password: PASSWORD });
      const session = (await t.services.sessions.listSessions(user.id))[0]!;
      await backchannel().link({ sessionId: session.id, clientId, accountId: user.id, sid, grantId: `grant-${sid}` });
      return { user, sessionId: session.id };
    }

    it('posts a logout token signed by Gatehouse when the session that signed in to the app signs out, and ends that sign-in’s grant', async () => {
      const { user, sessionId } = await signedInWithLink('sid-signout');
      // A refresh token of the app's grant from that sign-in, and one of another grant.
      const oidcRow = (grantId: string, id: string) => ({ model: 'RefreshToken', id, payload: '{}', grant_id: grantId, user_code: null, uid: null, account_id: user.id, expires_at: Date.now() + 3_600_000, consumed_at: null });
      await t.services.storage.db.insertInto('oidc_payloads').values([oidcRow('grant-sid-signout', 'rt-linked'), oidcRow('grant-elsewhere', 'rt-other')] as never).execute();
      receiver.received.length = 0;
      assert.equal(await t.services.sessions.signOut(user.id, sessionId), true);
      await backchannel().worker.runOnce();
      assert.equal(receiver.received.length, 1);
      const token = new URLSearchParams(receiver.received[0]).get('logout_token')!;
      const { payload, protectedHeader } = await jwtVerify(token, createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`)), { issuer: t.url, audience: clientId, typ: 'logout+jwt' });
      assert.equal(protectedHeader.alg, 'EdDSA');
      assert.equal(payload.sub, user.id);
      assert.equal(payload.sid, 'sid-signout');
      assert.deepEqual(payload.events, { 'http://schemas.openid.net/event/backchannel-logout': {} });
      assert.equal(typeof payload.jti, 'string');
      assert.equal(typeof payload.iat, 'number');
      assert.ok(!('nonce' in payload));
      assert.equal((await t.services.storage.db.selectFrom('oidc_logout_links').selectAll().where('session_id', '=', sessionId).execute()).length, 0, 'the link is used up');
      const left = await t.services.storage.db.selectFrom('oidc_payloads').select('id').where('id', 'in', ['rt-linked', 'rt-other']).execute();
      assert.deepEqual(left.map((row) => row.id), ['rt-other'], 'the grant of that sign-in ended, no other');
    });

    it('does not send a late logout token once the person signed in to the app again with the same sid', async () => {
      const { user, sessionId } = await signedInWithLink('sid-again');
      receiver.answer.status = 503;
      await t.services.sessions.signOut(user.id, sessionId);
      await backchannel().worker.runOnce();
      receiver.answer.status = 200;
      // Signed in again in that browser: the provider kept the sid; a newer link names it.
      const again = await createSignedInUser(t, { email: `again-${++count}@example.com`, password: PASSWORD });
      const session = (await t.services.sessions.listSessions(again.id))[0]!;
      await backchannel().link({ sessionId: session.id, clientId, accountId: user.id, sid: 'sid-again', grantId: null });
      const pending = (await deliveries()).find((row) => row.sid === 'sid-again')!;
      await t.services.storage.db.updateTable('oidc_logout_deliveries').set({ next_attempt_at: 0 }).where('id', '=', pending.id).execute();
      receiver.received.length = 0;
      await backchannel().worker.runOnce();
      assert.equal(receiver.received.length, 0, 'nothing sent');
      const row = (await deliveries()).find((item) => item.id === pending.id)!;
      assert.deepEqual([row.status, row.last_error], ['failed', 'SUPERSEDED']);
    });

    it('retries an app that fails, and gives up on one that refuses the token', async () => {
      const failing = await signedInWithLink('sid-failing');
      receiver.answer.status = 503;
      await t.services.sessions.signOut(failing.user.id, failing.sessionId);
      await backchannel().worker.runOnce();
      let row = (await deliveries()).at(-1)!;
      assert.equal(row.status, 'pending', 'a 503 is tried again');
      assert.equal(row.last_error, 'HTTP_STATUS');
      assert.ok(row.next_attempt_at > Date.now());

      const refusing = await signedInWithLink('sid-refused');
      receiver.answer.status = 400;
      await t.services.sessions.signOut(refusing.user.id, refusing.sessionId);
      await backchannel().worker.runOnce();
      row = (await deliveries()).at(-1)!;
      assert.equal(row.status, 'failed', 'a 400 is the app refusing it: not again');
      receiver.answer.status = 200;
    });

    it('spares the apps of the session kept by "sign out everywhere else", and tells those of every other', async () => {
      const user = await createSignedInUser(t, { email: `many-${++count}@example.com`, password: PASSWORD });
      await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } });
      const [kept, other] = await t.services.sessions.listSessions(user.id);
      await backchannel().link({ sessionId: kept!.id, clientId, accountId: user.id, sid: 'sid-kept', grantId: null });
      await backchannel().link({ sessionId: other!.id, clientId, accountId: user.id, sid: 'sid-other', grantId: null });
      const before = (await deliveries()).length;
      await t.services.sessions.endAllSessions(user.id, { exceptSessionId: kept!.id });
      const added = (await deliveries()).slice(before);
      assert.deepEqual(added.map((row) => row.sid), ['sid-other']);
      await backchannel().worker.runOnce();
    });
  });
}

describe('back-channel logout to an app on a loopback address, without OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS', () => {
  it('is not delivered: the outbound rules refuse the address', async () => {
    const [sqlite] = await backends();
    const database = await sqlite!.create();
    const t = await listeningApp(database);
    const receiver = await startReceiver();
    try {
      const { clientId } = await registerClient(t, { name: 'Local app', redirectUris: ['http://127.0.0.1:1/cb'], backchannelLogoutUri: receiver.url });
      const user = await createSignedInUser(t, { email: 'local@example.com', password: PASSWORD });
      const session = (await t.services.sessions.listSessions(user.id))[0]!;
      await t.services.oidcProvider.backchannel.link({ sessionId: session.id, clientId, accountId: user.id, sid: 'sid-local', grantId: null });
      await t.services.sessions.signOut(user.id, session.id);
      await t.services.oidcProvider.backchannel.worker.runOnce();
      assert.equal(receiver.received.length, 0);
      const [row] = await t.services.storage.db.selectFrom('oidc_logout_deliveries').selectAll().execute();
      assert.notEqual(row!.status, 'delivered');
      assert.match(row!.last_error ?? '', /NOT_ALLOWED|PRIVATE|ADDRESS/);
    } finally {
      await new Promise((resolve) => receiver.server.close(resolve));
      await t.close();
      await database.drop();
    }
  });
});
