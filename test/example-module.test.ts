/**
 * The worked example of docs/architecture.md ("Adding a capability"): the notes module
 * (test/fixtures/notes-module/), added to the service as one more entry in the module list, and
 * checked end to end through each slot it uses: a route with a requirement (RECENT_SECOND_FACTOR)
 * and its OpenAPI tag, a link to its page from the dashboard's header, a mail template (over SMTP on loopback, in the request's language), a public
 * event (a signed webhook to a receiver), a counter (/metrics), its `gatehouse` command group,
 * per-user data (export, a block on deletion with its own code and page text, erasure), and a
 * Bearer credential resolver (its `nt_…` tokens). Lastly: nothing under src/ names the module's
 * routes, templates, events, codes or commands: it needed no edit outside its folder and the list.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { backends, type TestDatabase } from './helpers/databases.ts';
import { createSignedInUser, createTestApp, type TestApp } from './helpers/app.ts';
import { fakeClock } from './helpers/clock.ts';
import { enrolTotp, totpCode } from './helpers/totp.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { startReceiver, verifyWithLibrary } from '../src/webhooks/test-receiver.ts';
import { MODULES } from '../src/modules.ts';
import { collectCliGroups, collectMailTemplates, collectPublicEvents, type BuiltServices } from '../src/module.ts';
import { findModuleCliGroups, runCli } from '../src/cli/main.ts';
import { SYSTEM_SOURCE } from '../src/audit/audit.service.ts';
import { notesModule } from './fixtures/notes-module/notes.module.ts';

const PASSWORD = 'correct horse battery staple';
const AUTH_URL = 'http://auth.example.test';
const METRICS_TOKEN = 'notes-example-metrics-token-0123456789';
const FOLDER = join(import.meta.dirname, 'fixtures', 'notes-module');
const SRC = join(import.meta.dirname, '..', 'src');

// The one line: the module list, with the new capability at its end.
const modules = [...MODULES, notesModule];

function captured() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return { stream, text: () => text };
}

describe('the example module is a folder and one line in the module list', () => {
  it('its parts are found by the contract, from its own folder', async () => {
    assert.deepEqual(collectCliGroups(modules).map((group) => group.name), ['users', 'keys', 'clients', 'orgs', 'domains', 'api-keys', 'scim', 'webhooks', 'sso', 'import', 'notes', 'export']);
    assert.ok(!(await findModuleCliGroups()).some((group) => group.name === 'notes'), 'not in src/: only the list given brings it');
    assert.equal(relative(FOLDER, collectMailTemplates(modules).get('note-shared')!.dir), 'mail');
    assert.deepEqual(collectPublicEvents(modules).filter((event) => event.from === 'note.created').map((event) => event.type), ['note.created']);
  });

  it('nothing under src/ names its routes, templates, events, codes, counters, tokens or commands', () => {
    const names = ['/api/notes', '/notes', 'notes.links.', 'notes.page.', 'note-shared', 'note.created', 'NOTE_PINNED', 'notes_created_total', 'notesCreated', 'note-token', 'note_tokens', 'notes-module', 'notesModule', 'notes list', 'notes.mail.', 'notes.deletion.'];
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) => /\.(ts|js|eta|json|css)$/.test(file));
    assert.ok(files.length > 300, `read ${files.length} files`);
    const found: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(SRC, file), 'utf8');
      for (const name of names) if (text.includes(name)) found.push(`src/${file} names "${name}"`);
      if (/\bnt_[A-Za-z0-9]/.test(text) || /['"`]notes['"`]/.test(text)) found.push(`src/${file} names the module, its table or its token prefix`);
    }
    assert.deepEqual(found, []);
  });
});

for (const backend of await backends()) {
  describe(`the example module end to end (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const clock = fakeClock();
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let t: TestApp;
    let count = 0;
    const email = (label: string) => `${label}-${++count}@example.com`;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const addNote = (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url: '/api/notes', headers: { ...bearer(token), ...headers }, payload: body });
    const listNotes = (token: string) => t.app.inject({ method: 'GET', url: '/api/notes', headers: bearer(token) });

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      t = await createTestApp(database, {
        clock,
        modules,
        env: {
          AUTH_URL,
          EMAIL_SERVER_HOST: smtp.host,
          EMAIL_SERVER_PORT: String(smtp.port),
          EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
          MAIL_POLL_INTERVAL_MS: '200',
          WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
          WEBHOOK_POLL_INTERVAL_MS: '600000',
          METRICS_TOKEN,
        },
      });
      await t.app.ready();
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await database?.drop();
    });

    it('its route declares its access: a signed-in user; adding one needs a recent second factor of a user who has one', async () => {
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/notes' })).statusCode, 401);
      const user = await createSignedInUser(t, { email: email('writer'), password: PASSWORD });
      const added = await addNote(user.token, { text: 'first' });
      assert.equal(added.statusCode, 201, added.body);
      assert.deepEqual((await listNotes(user.token)).json().notes.map((note: { text: string }) => note.text), ['first']);

      // Once the user has an authenticator app, a session that has not used it may not add one.
      const secret = await enrolTotp(t.services as never, (await t.services.users.findUserById(user.id))!, clock);
      const refused = await addNote(user.token, { text: 'second' });
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().error, 'REAUTH_REQUIRED');
      const stepUp = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/step-up', headers: bearer(user.token), payload: { code: totpCode(secret, clock()) } });
      assert.equal(stepUp.statusCode, 200, stepUp.body);
      assert.equal((await addNote(stepUp.json().token, { text: 'second' })).statusCode, 201);
      assert.equal((await listNotes(user.token)).json().notes.length, 2, 'reading needs no step-up');

      // The OpenAPI document describes its routes under its tag, with the security its declaration gives.
      const document = (await t.app.inject({ method: 'GET', url: '/api/docs/openapi.json' })).json();
      assert.deepEqual(document.paths['/api/notes'].post.tags, ['notes']);
      assert.ok(document.paths['/api/notes'].get.security?.length > 0, JSON.stringify(document.paths['/api/notes'].get));
      assert.ok(document.tags.some((tag: { name: string; description: string }) => tag.name === 'notes' && tag.description.startsWith('Notes a user keeps')));
    });

    it('its page link: the dashboard\'s header links its page (which lists the notes), before "Sign out"', async () => {
      const user = await createSignedInUser(t, { email: email('reader'), password: PASSWORD });
      assert.equal((await addNote(user.token, { text: 'on the <page>' })).statusCode, 201);
      const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard?lang=de', headers: bearer(user.token) });
      assert.equal(dashboard.statusCode, 200, dashboard.body);
      assert.match(dashboard.body, /<a class="button button-secondary" href="\/notes">Notizen<\/a>\n {4}<a class="button button-secondary" href="\/auth\/signout">/);
      const page = await t.app.inject({ method: 'GET', url: '/notes?lang=de', headers: bearer(user.token) });
      assert.equal(page.statusCode, 200, page.body);
      assert.match(page.body, /<h1>Ihre Notizen<\/h1>/);
      assert.match(page.body, /<li>on the &lt;page&gt;<\/li>/);
      assert.notEqual((await t.app.inject({ method: 'GET', url: '/notes' })).statusCode, 200, 'for a signed-in user only');
    });

    it('its mail: a shared note mails the address a notice in the request’s language, from its own template and catalog', async () => {
      const user = await createSignedInUser(t, { email: email('sharer'), password: PASSWORD });
      const added = await addNote(user.token, { text: 'for a friend', shareWith: 'friend@example.net' }, { 'accept-language': 'de' });
      assert.equal(added.statusCode, 201, added.body);
      // Other mails (a security notice to an earlier test's user) may arrive first.
      const toFriend = () => smtp.messages.find((message) => message.rcptTo.includes('friend@example.net'));
      for (let seen = smtp.messages.length; toFriend() === undefined; seen++) await smtp.waitForMessages(seen + 1, 15_000);
      const mail = toFriend()!;
      assert.equal(mail.subject, `${user.email} hat eine Notiz mit Ihnen auf Gatehouse geteilt`);
      assert.match(mail.text, /^Hallo,$/m);
      assert.ok(mail.text.includes(`${AUTH_URL}/signin`), mail.text);
      assert.ok(mail.html.includes('Anmelden'));
      assert.ok(!mail.text.includes('for a friend'), 'never the note itself');
    });

    it('its public event: note.created reaches a webhook endpoint, signed, with ids and facts only; and its counter counts it', async (test) => {
      const receiver = await startReceiver((fn) => test.after(fn));
      const endpoint = await t.services.webhooks.create({ url: receiver.url, eventTypes: ['note.created'], description: 'notes' }, SYSTEM_SOURCE);
      assert.ok(endpoint.ok, JSON.stringify(endpoint));
      test.after(() => t.services.webhooks.delete(endpoint.endpoint.id, SYSTEM_SOURCE));
      const user = await createSignedInUser(t, { email: email('hooked'), password: PASSWORD });
      const added = await addNote(user.token, { text: 'secret plans', pinned: true });
      assert.equal(added.statusCode, 201, added.body);
      await t.services.webhooks.runOnce();
      await t.services.webhooks.runOnce();
      const event = verifyWithLibrary(await receiver.waitFor(1), endpoint.secret);
      assert.equal(event.type, 'note.created');
      assert.deepEqual(event.data, { userId: user.id, noteId: added.json().id, pinned: true });
      assert.ok(!receiver.received[0]!.body.includes('secret plans') && !receiver.received[0]!.body.includes(user.email));

      const metrics = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
      assert.equal(metrics.statusCode, 200);
      assert.match(metrics.body, /# HELP gatehouse_notes_created_total Notes added, pinned or not\./);
      assert.match(metrics.body, /^gatehouse_notes_created_total\{pinned="yes"\} [1-9]/m);
      assert.match(metrics.body, /^gatehouse_notes_created_total\{pinned="no"\} [1-9]/m);
    });

    it('its command group: in `gatehouse help`, and `gatehouse notes list` lists a user’s notes', async () => {
      const user = await createSignedInUser(t, { email: email('cli'), password: PASSWORD });
      await addNote(user.token, { text: 'from the shell', pinned: true });
      const groups = collectCliGroups(modules);
      const help = captured();
      assert.equal(await runCli(['help'], { stdin: new PassThrough(), stdout: help.stream, stderr: new PassThrough() }, { moduleGroups: groups }), 0);
      assert.match(help.text(), /gatehouse webhooks redeliver [^]*gatehouse notes list EMAIL \[--json\]\n[^]*gatehouse backup FILE/);

      // The group's commands, run as `gatehouse` runs them, on this app's services (the real
      // command builds the services of src/modules.ts's list, which does not hold this module).
      const group = groups.find((candidate) => candidate.name === 'notes')!;
      const run = await group.load();
      const context = { usage: group.usage, withServices: <T>(_io: unknown, fn: (services: BuiltServices) => Promise<T>) => fn(t.services) };
      const io = () => ({ stdin: new PassThrough(), stdout: captured(), stderr: captured() });
      const table = io();
      await run(['list', user.email], { ...table, stdout: table.stdout.stream, stderr: table.stderr.stream }, context);
      assert.match(table.stdout.text(), /^ID +PINNED +TEXT\n\S+ +yes +from the shell\n$/);
      const json = io();
      await run(['list', user.email, '--json'], { ...json, stdout: json.stdout.stream, stderr: json.stderr.stream }, context);
      assert.deepEqual(JSON.parse(json.stdout.text()).notes.map((note: { text: string; pinned: boolean }) => [note.text, note.pinned]), [['from the shell', true]]);
      await assert.rejects(run(['list', 'nobody@example.com'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() }, context), /no user has that e-mail address/);
      await assert.rejects(run(['list'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() }, context), (error: { exitCode?: number }) => error.exitCode === 2);
    });

    it('its credential resolver: an nt_ token it issued reads the notes; an unknown one, or a step-up it cannot give, is refused', async () => {
      const user = await createSignedInUser(t, { email: email('keyed'), password: PASSWORD });
      await addNote(user.token, { text: 'read by token' });
      const issued = await t.app.inject({ method: 'POST', url: '/api/notes/tokens', headers: bearer(user.token) });
      assert.equal(issued.statusCode, 201, issued.body);
      const token: string = issued.json().token;
      assert.match(token, /^nt_[A-Za-z0-9_-]{43}$/);
      const read = await listNotes(token);
      assert.equal(read.statusCode, 200, read.body);
      assert.deepEqual(read.json().notes.map((note: { text: string }) => note.text), ['read by token']);
      assert.equal((await listNotes('nt_unknown')).statusCode, 401);
      assert.equal((await t.services.storage.db.selectFrom('note_tokens').select('token_hash').where('user_id', '=', user.id).executeTakeFirstOrThrow()).token_hash.includes(token.slice(3)), false, 'stored as its hash');

      // A token is no second factor: once the user has one, it cannot add notes. The route's
      // requirement judges the token as its resolver describes it (it reads the token fresh, so
      // that answer is current: no session row is looked for).
      await enrolTotp(t.services as never, (await t.services.users.findUserById(user.id))!, clock);
      const refused = await addNote(token, { text: 'by token' });
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().error, 'REAUTH_REQUIRED');
      assert.deepEqual((await listNotes(token)).json().notes.map((note: { text: string }) => note.text), ['read by token'], 'nothing added');
    });

    it('its per-user data: in the export; a pinned note blocks deletion with its code and page text; deletion erases the rest', async () => {
      const keeper = await createSignedInUser(t, { email: email('keeper'), password: PASSWORD });
      await addNote(keeper.token, { text: 'keep me', pinned: true });
      const exported = await t.services.accountDeletion.exportUserData(keeper.id);
      assert.deepEqual((exported?.notes as { notes: Array<{ text: string; pinned: boolean }> }).notes.map((note) => [note.text, note.pinned]), [['keep me', true]]);
      const refused = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(keeper.token) });
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(refused.json().error, 'NOTE_PINNED');
      const page = await t.app.inject({ method: 'GET', url: '/dashboard/account/delete', headers: { ...bearer(keeper.token), 'accept-language': 'fr' } });
      assert.equal(page.statusCode, 200);
      assert.ok(page.body.includes('Une note épinglée retient ce compte : détachez-la d’abord :'), page.body);
      assert.ok(page.body.includes('<li>keep me</li>'), page.body);
      const cli = await t.services.accountDeletion.deleteUser(keeper.id, SYSTEM_SOURCE);
      assert.ok(!cli.ok && 'block' in cli && cli.block.summary === 'has 1 pinned note');

      const leaver = await createSignedInUser(t, { email: email('leaver'), password: PASSWORD });
      await addNote(leaver.token, { text: 'let me go' });
      const token: string = (await t.app.inject({ method: 'POST', url: '/api/notes/tokens', headers: bearer(leaver.token) })).json().token;
      const deleted = await t.app.inject({ method: 'DELETE', url: '/api/auth/account', headers: bearer(leaver.token) });
      assert.equal(deleted.statusCode, 200, deleted.body);
      const db = t.services.storage.db;
      assert.deepEqual(await db.selectFrom('notes').select('id').where('user_id', '=', leaver.id).execute(), []);
      assert.deepEqual(await db.selectFrom('note_tokens').select('id').where('user_id', '=', leaver.id).execute(), []);
      assert.equal((await listNotes(token)).statusCode, 401, 'its token went with the account');
      assert.equal((await db.selectFrom('notes').select('id').where('user_id', '=', keeper.id).execute()).length, 1, 'the other user’s notes stay');
    });
  });
}
