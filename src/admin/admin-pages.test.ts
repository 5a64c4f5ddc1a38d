/**
 * The `/admin` pages through `app.inject()`, on both session strategies: who may open them (ADMIN
 * only, by the prefix rules and by each route's own declaration), the user list with search
 * and pages, a user's page with its forms (roles, disable / enable, sessions) and what those forms
 * change, the audit log with its filters, CSRF on every form, and escaping of everything users and
 * their clients control. Pages read through the admin service only, so SQLite is enough here; the
 * browser flow is in test/flows/admin-browser.test.ts.
 */
import { describe, it, before, after } from 'node:test';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import formbody from '@fastify/formbody';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue, unescapeHtml } from '../../test/helpers/pages.ts';
import type { AdminService } from './admin.service.ts';
import type { Config } from '../config.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import { ADMIN_PAGE_SIZE, adminPageRoutes } from './admin-pages.routes.ts';
import { registerRouteAccess } from '../authorization/route-access.ts';
import { RECENT_SECOND_FACTOR } from '../authorization/access.ts';
import { createForbiddenPage } from '../web/forbidden-page.ts';
import { readMessages } from '../i18n/catalog.ts';
import { ADMIN_ERROR_CODES, ADMIN_NOTICE_CODES } from './admin-pages.messages.ts';
import { registerPageContext } from '../web/page-context.ts';
import { ENGLISH_PAGE } from '../web/render.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';
const ADMIN_AGENT = 'AdminConsole/3.1';

/** A browser: its cookies and its user agent. */
interface Visitor {
  jar: CookieJar;
  userAgent: string;
}

interface AuditRow {
  type: string;
  userId: string | null;
  actorUserId: string | null;
  ip: string | null;
  userAgent: string | null;
  reason: string | null;
  details: Record<string, unknown> | null;
}

/** The rows of a page's table body. */
const tableRows = (html: string) => [...html.matchAll(/<tbody[^>]*>([\s\S]*?)<\/tbody>/g)].flatMap(([, body]) => body!.match(/<tr[^>]*>[\s\S]*?<\/tr>/g) ?? []);
/** The href of the link with this text. */
function linkHref(html: string, text: string): string | null {
  const match = new RegExp(`<a [^>]*href="([^"]+)"[^>]*>${text}</a>`).exec(html);
  return match === null ? null : unescapeHtml(match[1]!);
}
/** The alerts a page shows: `notice` (role=status) and `error` (role=alert) codes; an error shown without its code counts as ''. */
function alertCodes(html: string): { errors: string[]; notices: string[] } {
  return {
    errors: [...html.matchAll(/role="alert">([\s\S]*?)<\/div>/g)].map((m) => unescapeHtml(/<code>([^<]*)<\/code>/.exec(m[1]!)?.[1] ?? '')),
    notices: [...html.matchAll(/role="status">\s*<p>([^<]*)<\/p>/g)].map((m) => m[1]!),
  };
}

/** A moment as the English pages write it: "Nov 27, 2026, 7:00 AM UTC" (Intl puts a narrow no-break space before AM). */
const ENGLISH_TIME = /<time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z">[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d\s[AP]M UTC<\/time>/;

it('has an English text for every code the pages know (the start checks the other languages against English)', () => {
  const english = readMessages(join(import.meta.dirname, 'messages')).en ?? {};
  const keys = [...[...ADMIN_NOTICE_CODES].map((code) => `admin.notice.${code}`), ...[...ADMIN_ERROR_CODES, 'default'].map((code) => `admin.error.${code}`)];
  assert.deepEqual(keys.filter((key) => !Object.hasOwn(english, key)), []);
});

for (const strategy of ['database', 'jwt'] as const) {
  describe(`admin pages, ${strategy} strategy`, () => {
    let database: TestDatabase;
    let t: TestApp;
    let origin: string;
    let count = 0;
    let ada: { id: string; email: string };
    let adminBrowser: Visitor;
    let plainBrowser: Visitor;
    let plain: { id: string; email: string };

    before(async () => {
      database = await createSqliteDatabase();
      t = await createTestApp(database, { env: { SESSION_STRATEGY: strategy } });
      origin = new URL(t.config.authUrl).origin;
      ada = await createUser(t.services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
      plain = await createUser(t.services, { email: 'paul@example.com', password: PASSWORD, name: 'Paul Plain' });
      adminBrowser = await signIn(ada.email, ADMIN_AGENT);
      plainBrowser = await signIn(plain.email, 'PlainBrowser/1.0');
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    /** Signs in with the session cookie, as the sign-in form does. */
    async function signIn(email: string, userAgent: string): Promise<Visitor> {
      const response = await t.app.inject({ method: 'POST', url: '/api/auth/signin', headers: { 'user-agent': userAgent }, payload: { email, password: PASSWORD } });
      assert.equal(response.statusCode, 200, response.body);
      return { jar: new CookieJar().store(response), userAgent };
    }

    async function signInWithJson(email: string, userAgent = 'ApiClient/1.0') {
      const response = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'user-agent': userAgent }, payload: { email, password: PASSWORD } });
      return { status: response.statusCode, body: response.json() as { token: string; refreshToken: string; error?: string } };
    }

    async function newUser(name = 'Some One', roles: string[] = []) {
      return createUser(t.services, { email: `user${++count}@example.com`, password: PASSWORD, name, roles });
    }

    async function get(url: string, visitor?: Visitor) {
      const response = await t.app.inject({ method: 'GET', url, headers: visitor ? { cookie: visitor.jar.header(), 'user-agent': visitor.userAgent } : {} });
      visitor?.jar.store(response);
      return response;
    }

    async function postForm(url: string, visitor: Visitor, fields: Record<string, string>, headers: Record<string, string> = {}) {
      const response = await t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': FORM, origin, cookie: visitor.jar.header(), 'user-agent': visitor.userAgent, ...headers },
        payload: new URLSearchParams(fields).toString(),
      });
      visitor.jar.store(response);
      return response;
    }

    /** This browser's CSRF token, from a page that always has a form. */
    const csrfTokenOf = async (visitor: Visitor) => hiddenValue((await get('/auth/signout', visitor)).body, 'csrfToken');

    /** Posts one of a user page's forms with the browser's token; returns where it was sent. */
    async function submit(userId: string, action: string, fields: Record<string, string> = {}, visitor = adminBrowser): Promise<string> {
      const response = await postForm(`/admin/users/${userId}/${action}`, visitor, { csrfToken: await csrfTokenOf(visitor), ...fields });
      assert.equal(response.statusCode, 303, response.body);
      assert.equal(response.headers['cache-control'], 'no-store');
      return String(response.headers.location);
    }

    const bearerStatus = async (token: string) =>
      (await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } })).statusCode;

    async function adminEvents(query: string): Promise<AuditRow[]> {
      return (await t.services.admin.listEvents({ limit: 200, ...Object.fromEntries(new URLSearchParams(query)) })).events;
    }

    /** Every admin page and form endpoint, for the access checks. */
    function everyRoute(userId: string, sessionId: string) {
      return {
        pages: [
          '/admin',
          '/admin?query=a',
          '/admin/users?role=ADMIN&status=disabled',
          '/admin/users/new',
          '/admin/overview',
          '/admin/events',
          `/admin/events?userId=${userId}`,
          '/admin/events?email=a%40example.com&outcome=failure',
          '/admin/events/export?format=csv',
          '/admin/events/export?format=json',
          `/admin/users/${userId}`,
          '/admin/users/nobody',
        ],
        forms: [
          [`/admin/users/${userId}/roles`, { roles: 'ADMIN' }],
          [`/admin/users/${userId}/disable`, {}],
          [`/admin/users/${userId}/enable`, {}],
          [`/admin/users/${userId}/sessions/end`, { sessionId }],
          [`/admin/users/${userId}/sessions/end-all`, {}],
          ['/admin/users/new', { email: 'new@example.com', name: 'New' }],
          ['/admin/users/bulk', { ids: userId, action: 'disable', confirm: 'yes' }],
        ] as Array<[string, Record<string, string>]>,
      };
    }

    describe('who may use them', () => {
      it('shows a non-admin the 403 page on every page and form, and changes nothing', async () => {
        const target = await newUser('Target Of Plain');
        const session = await signInWithJson(target.email);
        const { pages, forms } = everyRoute(target.id, session.body.refreshToken.split('.')[0]!);
        for (const url of pages) {
          const response = await get(url, plainBrowser);
          assertHtmlPage(response, url, 403);
          assert.match(response.body, /<code>FORBIDDEN<\/code>/, url);
        }
        for (const [url, fields] of forms) {
          for (const csrfToken of [await csrfTokenOf(plainBrowser), undefined]) {
            const response = await postForm(url, plainBrowser, { ...fields, ...(csrfToken && { csrfToken }) });
            assertHtmlPage(response, `POST ${url}`, 403);
            assert.match(response.body, /<code>FORBIDDEN<\/code>/, url);
          }
        }
        // In the visitor's language, though the route guard answers before the pages' own hooks run.
        const german = await t.app.inject({ method: 'GET', url: '/admin', headers: { cookie: plainBrowser.jar.header(), 'accept-language': 'de-DE,de;q=0.9' } });
        assertHtmlPage(german, 'German 403', 403);
        assert.match(german.body, /<html lang="de"/);
        assert.match(german.body, /<h1>Zugriff verweigert<\/h1>/);
        assert.equal(german.headers['content-language'], 'de');
        const japanese = await t.app.inject({ method: 'GET', url: '/admin?lang=ja', headers: { cookie: plainBrowser.jar.header() } });
        assert.match(japanese.body, /<html lang="ja"/);
        // The footer's language switcher, as on every page; a language chosen there is remembered.
        assert.match(japanese.body, /<a href="\/admin\?lang=de" hreflang="de" lang="de">Deutsch<\/a>/);
        assert.match(japanese.body, /<span aria-current="true" lang="ja">日本語<\/span>/);
        assert.equal(japanese.cookies.find((cookie) => cookie.name === 'gatehouse.lang')?.value, 'ja');
        const after = await t.services.admin.getUser(target.id);
        assert.deepEqual(after?.user.roles, []);
        assert.equal(after?.user.disabledAt, null);
        assert.equal(after?.sessions.length, 1);
        assert.equal(await bearerStatus(session.body.token), 200);
      });

      it('sends a visitor without a session to sign-in: back to the page, never to a form target', async () => {
        const target = await newUser();
        const { pages, forms } = everyRoute(target.id, 'some-session');
        for (const url of pages) {
          for (const cookie of [undefined, 'gatehouse.session=not-a-token; gatehouse.refresh=nor-this']) {
            const response = await t.app.inject({ method: 'GET', url, headers: cookie === undefined ? {} : { cookie } });
            assert.equal(response.statusCode, 303, url);
            assert.equal(response.headers.location, `/auth/signin?callbackUrl=${encodeURIComponent(url).replaceAll('%2F', '/')}`, url);
            assert.equal(response.headers['cache-control'], 'no-store');
          }
        }
        const anonymous: Visitor = { jar: new CookieJar(), userAgent: 'Anon/1' };
        const csrfToken = await csrfTokenOf(anonymous);
        for (const [url, fields] of forms) {
          const response = await postForm(url, anonymous, { ...fields, csrfToken });
          assert.equal(response.statusCode, 303, url);
          assert.equal(response.headers.location, '/auth/signin', url);
        }
        assert.equal((await t.services.admin.getUser(target.id))?.user.disabledAt, null);
      });

      it('refuses non-admins by its routes\' declarations too, before the service is touched, with no prefix rules in front', async () => {
        // The plugin alone behind the access hook, as a future mounting outside `/admin` would have it.
        const untouchable = new Proxy({}, { get: () => () => assert.fail('the admin service must not be called') }) as AdminService;
        for (const [who, auth, expected] of [
          ['a plain user', { userId: 'u', sessionId: 's', roles: ['EDITOR'], accessTokenExpiresAt: 0, via: 'cookie' }, 403],
          ['nobody', null, 303],
        ] as const) {
          const app = Fastify().withTypeProvider<ZodTypeProvider>();
          app.setValidatorCompiler(validatorCompiler);
          app.setSerializerCompiler(serializerCompiler);
          await app.register(formbody);
          registerPageContext(app, { issueCsrfToken: () => 'token', languageOf: () => ENGLISH_PAGE });
          registerRouteAccess(app, {
            authenticate: Object.assign(async () => auth as RequestAuth | null, { withCurrentRoles: async () => auth as RequestAuth | null }),
            policies: [],
            requirements: [{ name: RECENT_SECOND_FACTOR, check: async () => assert.fail('a refused caller is never asked for a second factor') }],
            sendForbiddenPage: createForbiddenPage(),
            rules: { protectedPrefixes: [], publicPrefixes: [], roleRequirements: [] },
          });
          await app.register(adminPageRoutes, {
            admin: untouchable,
            audit: untouchable as never,
            config: {} as Config,
            sections: [],
            places: { isConfigured: false, locator: async () => null },
            adminNav: [],
            users: untouchable as never,
            clock: Date.now,
            passwordReset: null,
            accountDeletion: null,
          });
          const { pages, forms } = everyRoute('someone', 'some-session');
          for (const url of pages) {
            const response = await app.inject({ method: 'GET', url });
            assert.equal(response.statusCode, expected, `${who}: ${url}`);
          }
          for (const [url, fields] of forms) {
            // Malformed fields too: who may not ask learns nothing about the shape.
            for (const payload of [new URLSearchParams(fields).toString(), 'roles=' + 'x'.repeat(10_000)]) {
              const response = await app.inject({ method: 'POST', url, headers: { 'content-type': FORM }, payload });
              assert.equal(response.statusCode, expected, `${who}: POST ${url}`);
              if (expected === 403) assert.match(response.body, /<code>FORBIDDEN<\/code>/);
              else assert.equal(response.headers.location, '/auth/signin');
            }
          }
          await app.close();
        }
      });

      it('links the dashboard to /admin for admins only', async () => {
        const forAdmin = await get('/dashboard', adminBrowser);
        assertHtmlPage(forAdmin, 'admin dashboard');
        assert.match(forAdmin.body, /<a class="button button-secondary" href="\/admin">Admin<\/a>/);
        const forPlain = await get('/dashboard', plainBrowser);
        assertHtmlPage(forPlain, 'plain dashboard');
        assert.doesNotMatch(forPlain.body, /href="\/admin"/);
      });
    });

    describe('users', () => {
      it('lists users with name, e-mail, roles, state and creation time, linking to each', async () => {
        const listed = await newUser('Listed Person', ['EDITOR', 'AUDITOR']);
        await t.services.admin.updateUser(listed.id, { disabled: true }, { actorUserId: ada.id, ip: null, userAgent: null });
        const page = await get('/admin', adminBrowser);
        assertHtmlPage(page, '/admin');
        const row = tableRows(page.body).find((r) => r.includes('Listed Person'));
        assert.ok(row, 'the user is listed');
        assert.match(row, new RegExp(`<a href="/admin/users/${listed.id}">Listed Person</a>`));
        assert.match(row, new RegExp(`<td role="cell" data-label="Email" class="address">${listed.email.replace('.', '\\.')}</td>`));
        assert.match(row, /<td role="cell" data-label="Roles">AUDITOR, EDITOR<\/td>/);
        assert.match(row, />Disabled</);
        assert.match(row, ENGLISH_TIME);
        const adaRow = tableRows(page.body).find((r) => r.includes('Ada Admin'));
        assert.match(adaRow!, /<td role="cell" data-label="Roles">ADMIN<\/td>/);
        assert.match(adaRow!, />Active</);
        assert.match(page.body, /<form class="filters" method="get" action="\/admin" role="search">/);
        assert.match(page.body, /<input id="query" name="query" type="search" value=""/);
      });

      it('searches by name or e-mail, and keeps the search in the box', async () => {
        await newUser('Quentin Searchable');
        await newUser('Someone Else');
        const page = await get('/admin?query=QUENTIN', adminBrowser);
        assertHtmlPage(page, 'search');
        const rows = tableRows(page.body);
        assert.equal(rows.length, 1);
        assert.match(rows[0]!, /Quentin Searchable/);
        assert.match(page.body, /<input id="query" name="query" type="search" value="QUENTIN"/);
        assert.match(linkHref(page.body, 'Show everyone') ?? '', /^\/admin$/);

        const byEmail = tableRows((await get(`/admin?query=${encodeURIComponent('ada@EXAMPLE')}`, adminBrowser)).body);
        assert.equal(byEmail.length, 1);
        assert.match(byEmail[0]!, /Ada Admin/);

        // The result line says which search was asked, without its syntax; the box keeps it as typed.
        const anywhere = await get(`/admin?query=${encodeURIComponent('*searchable')}`, adminBrowser);
        assert.match(tableRows(anywhere.body)[0] ?? '', /Quentin Searchable/);
        assert.match(anywhere.body, /Users whose name or email contains “searchable”\./);
        assert.match(anywhere.body, /<input id="query" name="query" type="search" value="\*searchable"/);
        const exactly = await get(`/admin?query=${encodeURIComponent('"quentin searchable"')}`, adminBrowser);
        assert.equal(tableRows(exactly.body).length, 1);
        assert.match(exactly.body, /Users whose name or email is “quentin searchable”\./);
        assert.match(page.body, /Users whose name or email starts with “QUENTIN”\./);
        assert.match(page.body, /<p class="hint" id="query-hint">Matches the start of the email or of a word of the name\. <code>\*text<\/code> finds it anywhere/);

        const none = await get('/admin?query=nobody-has-this', adminBrowser);
        assertHtmlPage(none, 'no match');
        assert.equal(tableRows(none.body).length, 0);
        assert.match(none.body, /No user matches\./);
        // Repeated or empty parameters render the page rather than a validation error.
        for (const url of ['/admin?query=', '/admin?query=a&query=b', `/admin?query=${'x'.repeat(5000)}`]) assertHtmlPage(await get(url, adminBrowser), url);
      });

      it('pages through the list with the keyset cursor, each user once', async () => {
        const total = ADMIN_PAGE_SIZE + 5;
        for (let i = 0; i < total; i++) {
          const result = await t.services.users.createUser({ email: `pager${i}@example.com`, name: `Pager ${i}`, passwordHash: null });
          assert.ok(result.ok);
        }
        const first = await get('/admin?query=pager', adminBrowser);
        assertHtmlPage(first, 'first page');
        assert.equal(tableRows(first.body).length, ADMIN_PAGE_SIZE);
        assert.equal(linkHref(first.body, 'First page'), null, 'already on the first page');
        const next = linkHref(first.body, 'Next page');
        assert.ok(next, 'a next-page link');
        assert.match(next, /^\/admin\?query=pager&cursor=[A-Za-z0-9_-]+$/, 'keeps the search');

        const second = await get(next, adminBrowser);
        assertHtmlPage(second, 'second page');
        assert.equal(tableRows(second.body).length, 5);
        assert.equal(linkHref(second.body, 'Next page'), null, 'the last page');
        assert.equal(linkHref(second.body, 'First page'), '/admin?query=pager');
        const names = [...first.body.matchAll(/>(Pager \d+)</g), ...second.body.matchAll(/>(Pager \d+)</g)].map((m) => m[1]);
        assert.equal(new Set(names).size, total, 'every user exactly once');

        const bogus = await get('/admin?query=pager&cursor=not-a-cursor', adminBrowser);
        assertHtmlPage(bogus, 'bad cursor');
        assert.deepEqual(alertCodes(bogus.body).errors, ['INVALID_CURSOR']);
        assert.equal(tableRows(bogus.body).length, ADMIN_PAGE_SIZE, 'the first page');
      });

      it('shows a user: details, the role form, access and sessions, each form with the CSRF token', async () => {
        const user = await newUser('Detail Person', ['EDITOR']);
        await signInWithJson(user.email, 'DetailDevice/7.0');
        const page = await get(`/admin/users/${user.id}`, adminBrowser);
        assertHtmlPage(page, 'user page', 200);
        assert.match(page.body, /<h1>Detail Person<\/h1>/);
        assert.match(page.body, new RegExp(`<dt>Email</dt><dd>${user.email.replace('.', '\\.')} <span class="muted">\\(verified\\)</span></dd>`));
        assert.match(page.body, /<dt>Roles<\/dt><dd>EDITOR<\/dd>/);
        assert.match(page.body, /<input id="roles" name="roles" type="text" value="EDITOR"/);
        assert.match(page.body, />Disable account<\/button>/);
        assert.match(page.body, /DetailDevice\/7\.0/);
        assert.match(page.body, />End<\/button>/);
        assert.match(page.body, />End all sessions<\/button>/);
        assert.equal(linkHref(page.body, 'This user’s events in the audit log'), `/admin/events?email=${encodeURIComponent(user.email)}`);
        const forms = [...page.body.matchAll(/<form[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/g)];
        assert.equal(forms.length, 7, 'roles, disable, end one, end all, the account-deletion module’s delete, the impersonation module’s act-as and the api-keys module’s new key');
        assert.match(page.body, />Delete account<\/button>/);
        for (const [form] of forms) {
          assert.match(form, new RegExp(`action="/admin/users/${user.id}/`));
          assert.ok(hiddenValue(form, 'csrfToken').length > 20, 'each form carries the token');
        }

        const missing = await get('/admin/users/no-such-user', adminBrowser);
        assert.equal(missing.statusCode, 303);
        assert.equal(missing.headers.location, '/admin?error=USER_NOT_FOUND');
        const notice = await get('/admin?error=USER_NOT_FOUND', adminBrowser);
        assert.deepEqual(alertCodes(notice.body).errors, ['USER_NOT_FOUND']);
        // Beyond the router's parameter length: refused as malformed, as the API refuses it.
        const overlong = await get(`/admin/users/${'x'.repeat(500)}`, adminBrowser);
        assert.deepEqual([overlong.statusCode, overlong.json().error], [400, 'BAD_REQUEST']);
      });
    });

    describe('forms', () => {
      it('edits roles: saved where the admin API and the store see them, audited with the admin, IP and user agent', async () => {
        const user = await newUser('Role Person', ['EDITOR']);
        const location = await submit(user.id, 'roles', { roles: ' REVIEWER,EDITOR  AUDITOR_2, REVIEWER ' });
        assert.equal(location, `/admin/users/${user.id}?notice=ROLES_SAVED`);
        const page = await get(location, adminBrowser);
        assertHtmlPage(page, 'after roles');
        assert.equal(alertCodes(page.body).notices.length, 1);
        assert.match(page.body, /<dt>Roles<\/dt><dd>AUDITOR_2, EDITOR, REVIEWER<\/dd>/);

        assert.deepEqual((await t.services.users.findUserById(user.id))?.roles, ['AUDITOR_2', 'EDITOR', 'REVIEWER']);
        const csrfToken = await csrfTokenOf(adminBrowser);
        const api = await t.app.inject({ method: 'GET', url: `/api/admin/users/${user.id}`, headers: { cookie: adminBrowser.jar.header(), 'x-csrf-token': csrfToken } });
        assert.equal(api.statusCode, 200, api.body);
        assert.deepEqual(api.json().user.roles, ['AUDITOR_2', 'EDITOR', 'REVIEWER']);

        const [event] = (await adminEvents(`userId=${user.id}&type=user.roles_changed`));
        assert.deepEqual(
          { actor: event?.actorUserId, ip: event?.ip, userAgent: event?.userAgent, details: event?.details },
          { actor: ada.id, ip: '127.0.0.1', userAgent: ADMIN_AGENT, details: { before: ['EDITOR'], after: ['AUDITOR_2', 'EDITOR', 'REVIEWER'] } },
        );

        // An empty field removes every role.
        assert.equal(await submit(user.id, 'roles', { roles: '' }), `/admin/users/${user.id}?notice=ROLES_SAVED`);
        assert.deepEqual((await t.services.users.findUserById(user.id))?.roles, []);
      });

      it('refuses invalid roles with a message, changing nothing', async () => {
        const user = await newUser('Strict Roles', ['EDITOR']);
        for (const [roles, code] of [
          ['editor', 'INVALID_ROLE'],
          ['EDITOR, 1ST', 'INVALID_ROLE'],
          ['EDITOR <script>', 'INVALID_ROLE'],
          [`A${'B'.repeat(64)}`, 'INVALID_ROLE'],
          [Array.from({ length: 51 }, (_, i) => `ROLE_${i}`).join(' '), 'TOO_MANY_ROLES'],
        ] as const) {
          const location = await submit(user.id, 'roles', { roles });
          assert.equal(location, `/admin/users/${user.id}?error=${code}`, roles);
          const page = await get(location, adminBrowser);
          assertHtmlPage(page, code);
          assert.deepEqual(alertCodes(page.body).errors, [code]);
        }
        assert.deepEqual((await t.services.users.findUserById(user.id))?.roles, ['EDITOR']);
        assert.deepEqual(await adminEvents(`userId=${user.id}&type=user.roles_changed`), []);
        // A field too long to be roles at all: the generic validation error, on the list.
        const response = await postForm(`/admin/users/${user.id}/roles`, adminBrowser, { csrfToken: await csrfTokenOf(adminBrowser), roles: 'A '.repeat(5000) });
        assert.equal(response.statusCode, 303);
        assert.equal(response.headers.location, '/admin?error=VALIDATION_ERROR');
      });

      it('disables a user, ending their sessions at once, and enabling lets them sign in again', async () => {
        const user = await newUser('Soon Disabled');
        const sessions = [await signInWithJson(user.email, 'VictimA/1'), await signInWithJson(user.email, 'VictimB/1')];
        for (const s of sessions) assert.equal(await bearerStatus(s.body.token), 200);

        const location = await submit(user.id, 'disable');
        assert.equal(location, `/admin/users/${user.id}?notice=USER_DISABLED`);
        for (const s of sessions) assert.equal(await bearerStatus(s.body.token), 401, 'every session ended');
        const refreshed = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: sessions[0]!.body.refreshToken } });
        assert.equal(refreshed.statusCode, 401);
        const refused = await signInWithJson(user.email);
        assert.equal(refused.status, 403);
        assert.equal(refused.body.error, 'ACCOUNT_DISABLED');

        const page = await get(location, adminBrowser);
        assertHtmlPage(page, 'disabled user');
        assert.match(page.body, /Disabled<\/span> since <time/);
        assert.match(page.body, />Enable account<\/button>/);
        assert.match(page.body, /No active sessions\./);
        const listed = tableRows((await get('/admin?query=Soon%20Disabled', adminBrowser)).body);
        assert.match(listed[0]!, />Disabled</);

        assert.equal(await submit(user.id, 'enable'), `/admin/users/${user.id}?notice=USER_ENABLED`);
        assert.equal((await signInWithJson(user.email)).status, 200, 'signs in again');

        const types = (await adminEvents(`userId=${user.id}`)).map((e) => e.type);
        for (const type of ['user.disabled', 'user.sessions_ended', 'user.enabled']) assert.ok(types.includes(type), type);
        for (const event of (await adminEvents(`userId=${user.id}`)).filter((e) => e.type.startsWith('user.'))) {
          assert.deepEqual([event.actorUserId, event.ip, event.userAgent], [ada.id, '127.0.0.1', ADMIN_AGENT], event.type);
        }
      });

      it('refuses to lock the admin out: disabling themself or dropping their own ADMIN shows the error', async () => {
        const page = await get(`/admin/users/${ada.id}`, adminBrowser);
        assertHtmlPage(page, 'own page');
        assert.doesNotMatch(page.body, />Disable account</, 'no disable button on your own page');
        assert.match(page.body, /Your current session/);

        for (const [action, fields] of [['disable', {}], ['roles', { roles: 'EDITOR' }], ['roles', { roles: '' }]] as const) {
          const location = await submit(ada.id, action, fields);
          assert.equal(location, `/admin/users/${ada.id}?error=SELF_LOCKOUT`, action);
          const shown = await get(location, adminBrowser);
          assertHtmlPage(shown, 'self lockout');
          assert.deepEqual(alertCodes(shown.body).errors, ['SELF_LOCKOUT']);
        }
        const self = await t.services.users.findUserById(ada.id);
        assert.deepEqual(self?.roles, ['ADMIN']);
        assert.equal(self?.disabledAt, null);
        // Adding a role beside ADMIN is fine.
        assert.equal(await submit(ada.id, 'roles', { roles: 'ADMIN EDITOR' }), `/admin/users/${ada.id}?notice=ROLES_SAVED`);
        assert.equal(await submit(ada.id, 'roles', { roles: 'ADMIN' }), `/admin/users/${ada.id}?notice=ROLES_SAVED`);
      });

      it('ends one session of a user, then all of them', async () => {
        const user = await newUser('Many Sessions');
        const sessions = [await signInWithJson(user.email, 'One/1'), await signInWithJson(user.email, 'Two/1'), await signInWithJson(user.email, 'Three/1')];
        const firstId = sessions[0]!.body.refreshToken.split('.')[0]!;
        const page = await get(`/admin/users/${user.id}`, adminBrowser);
        assert.match(page.body, new RegExp(`name="sessionId" value="${firstId}"`));

        assert.equal(await submit(user.id, 'sessions/end', { sessionId: firstId }), `/admin/users/${user.id}?notice=SESSION_ENDED`);
        assert.equal(await bearerStatus(sessions[0]!.body.token), 401);
        assert.equal(await bearerStatus(sessions[1]!.body.token), 200);
        const [ended] = await adminEvents(`userId=${user.id}&type=session.ended`);
        assert.deepEqual([ended?.actorUserId, ended?.userAgent, ended?.details], [ada.id, ADMIN_AGENT, { sessionId: firstId }]);

        // Already ended, unknown, someone else's, or missing: the same message, nothing ended.
        const adminSessionId = (await t.services.sessions.listSessions(ada.id))[0]!.id;
        for (const sessionId of [firstId, 'no-such-session', adminSessionId, '']) {
          assert.equal(await submit(user.id, 'sessions/end', { sessionId }), `/admin/users/${user.id}?error=SESSION_NOT_FOUND`, sessionId);
        }
        assert.equal((await t.services.sessions.listSessions(ada.id)).length > 0, true);

        assert.equal(await submit(user.id, 'sessions/end-all'), `/admin/users/${user.id}?notice=SESSIONS_ENDED`);
        for (const s of sessions) assert.equal(await bearerStatus(s.body.token), 401);
        assert.deepEqual(await t.services.sessions.listSessions(user.id), []);
        const [all] = await adminEvents(`userId=${user.id}&type=user.sessions_ended`);
        assert.deepEqual([all?.actorUserId, all?.ip, all?.details], [ada.id, '127.0.0.1', { count: 2 }]);
        assert.equal((await get(`/admin/users/${user.id}`, adminBrowser)).statusCode, 200, 'the admin is still signed in');

        assert.equal(await submit('no-such-user', 'sessions/end-all'), '/admin?error=USER_NOT_FOUND');
        assert.equal(await submit('no-such-user', 'disable'), '/admin?error=USER_NOT_FOUND');
        assert.equal(await submit('no-such-user', 'roles', { roles: 'EDITOR' }), '/admin?error=USER_NOT_FOUND');
      });

      it('signs the admin out when they end their own current session, or all of their sessions', async () => {
        const other = await newUser('Second Admin', ['ADMIN']);
        for (const action of ['sessions/end', 'sessions/end-all']) {
          const browser = await signIn(other.email, 'SecondAdmin/1');
          const [current] = await t.services.sessions.listSessions(other.id);
          const response = await postForm(`/admin/users/${other.id}/${action}`, browser, { csrfToken: await csrfTokenOf(browser), sessionId: current!.id });
          assert.equal(response.statusCode, 303, action);
          assert.equal(response.headers.location, '/', action);
          assert.equal(browser.jar.has('gatehouse.session'), false, `${action}: cookies cleared`);
          assert.deepEqual(await t.services.sessions.listSessions(other.id), [], action);
          assert.equal((await get('/admin', browser)).statusCode, 303, `${action}: signed out`);
        }
      });

      it('refuses every form without the CSRF token or from another origin, changing nothing', async () => {
        const user = await newUser('Csrf Target', ['EDITOR']);
        const session = await signInWithJson(user.email);
        const { forms } = everyRoute(user.id, session.body.refreshToken.split('.')[0]!);
        const csrfToken = await csrfTokenOf(adminBrowser);
        for (const [url, fields] of forms) {
          for (const [label, extra, headers] of [
            ['no token', {}, {}],
            ['a forged token', { csrfToken: 'forged' }, {}],
            ['another origin', { csrfToken }, { origin: 'https://evil.example' }],
            ['a cross-site fetch', { csrfToken }, { origin: 'null', 'sec-fetch-site': 'cross-site' }],
          ] as const) {
            const response = await postForm(url, adminBrowser, { ...fields, ...extra }, headers);
            assert.equal(response.statusCode, 403, `${url}, ${label}`);
            assert.equal(response.json().error, 'CSRF_FAILED', `${url}, ${label}`);
          }
        }
        const after = await t.services.admin.getUser(user.id);
        assert.deepEqual(after?.user.roles, ['EDITOR']);
        assert.equal(after?.user.disabledAt, null);
        assert.equal(after?.sessions.length, 1);
      });
    });

    describe('audit log', () => {
      it('lists events with their source, filters by user and type, and pages', async () => {
        const user = await newUser('Logged Person');
        await signInWithJson(user.email, 'LoggedDevice/1');
        await submit(user.id, 'roles', { roles: 'EDITOR' });
        await submit(user.id, 'disable');

        const all = await get('/admin/events', adminBrowser);
        assertHtmlPage(all, '/admin/events');
        assert.ok(tableRows(all.body).length > 3);
        assert.match(all.body, /<select id="type" name="type">/);
        assert.match(all.body, /<option value="user\.disabled">Account disabled<\/option>/);
        // A type another module declares, in that module's words.
        assert.match(all.body, /<option value="webhook\.endpoint_created">Webhook endpoint created<\/option>/);
        // In German (the header, so this browser keeps reading English).
        const german = await t.app.inject({ method: 'GET', url: '/admin/events', headers: { cookie: adminBrowser.jar.header(), 'user-agent': adminBrowser.userAgent, 'accept-language': 'de' } });
        assert.match(german.body, /<option value="mfa\.totp_enabled">Authenticator-App eingeschaltet<\/option>/);

        const mine = await get(`/admin/events?userId=${user.id}`, adminBrowser);
        assertHtmlPage(mine, 'by user');
        const rows = tableRows(mine.body);
        const rowOf = (type: string) => rows.find((row) => row.includes(`<code>${type}</code>`));
        // Events of one millisecond may come in any order; the order itself is the service's to test.
        assert.deepEqual(
          rows.map((row) => /<code>([a-z._]+)<\/code>/.exec(row)![1]).sort(),
          ['signin.success', 'user.disabled', 'user.roles_changed', 'user.sessions_ended'],
        );
        assert.ok(rows.every((row) => row.includes(`href="/admin/users/${user.id}"`)));
        const disabled = rowOf('user.disabled')!;
        // Who did it by address, the device in words, what happened in words, the details folded.
        assert.match(disabled, new RegExp(`<a href="/admin/users/${ada.id}">${ada.email}</a>`), 'who did it');
        assert.match(disabled, /<td role="cell" data-label="What happened">Account disabled<\/td>/);
        assert.match(disabled, /<span class="client-ip">127\.0\.0\.1<\/span> <span class="client-device" title="AdminConsole\/3\.1">AdminConsole<\/span>/);
        assert.match(rowOf('user.roles_changed')!, /<details class="event-details"><summary>Details<\/summary>.*<dt>before<\/dt><dd><\/dd><dt>after<\/dt><dd>EDITOR<\/dd>/);
        assert.match(rowOf('signin.success')!, /<dd class="client-agent">LoggedDevice\/1<\/dd>/);
        assert.match(rowOf('user.sessions_ended')!, /ACCOUNT_DISABLED/);
        assert.equal(linkHref(mine.body, 'Clear'), '/admin/events');

        const typed = await get(`/admin/events?userId=${user.id}&type=user.disabled`, adminBrowser);
        assert.equal(tableRows(typed.body).length, 1);
        assert.match(typed.body, /<option value="user\.disabled" selected>/);
        const onlyType = tableRows((await get('/admin/events?type=user.roles_changed', adminBrowser)).body);
        assert.ok(onlyType.length >= 1 && onlyType.every((row) => row.includes('<code>user.roles_changed</code>')));

        // The form's "Any type" sends an empty type: no filter.
        assert.equal(tableRows((await get(`/admin/events?userId=${user.id}&type=`, adminBrowser)).body).length, 4);
        const unknown = await get(`/admin/events?userId=${user.id}&type=no.such.type`, adminBrowser);
        assertHtmlPage(unknown, 'unknown type');
        assert.deepEqual(alertCodes(unknown.body).errors, ['UNKNOWN_EVENT_TYPE']);
        assert.equal(tableRows(unknown.body).length, 4, 'every type of that user');
        const nobody = await get('/admin/events?userId=nobody', adminBrowser);
        assert.match(nobody.body, /No event matches these filters\./);
      });

      it('pages through the log keeping the filters', async () => {
        const subject = 'paged-subject';
        const total = ADMIN_PAGE_SIZE + 3;
        for (let i = 0; i < total; i++) await t.services.audit.record({ type: 'signout', userId: subject, details: { n: i } });
        await t.services.audit.record({ type: 'signin.success', userId: subject });
        const first = await get(`/admin/events?userId=${subject}&type=signout`, adminBrowser);
        assert.equal(tableRows(first.body).length, ADMIN_PAGE_SIZE);
        const next = linkHref(first.body, 'Older events');
        assert.match(next ?? '', new RegExp(`^/admin/events\\?userId=${subject}&type=signout&cursor=[A-Za-z0-9_-]+$`));
        const second = await get(next!, adminBrowser);
        assertHtmlPage(second, 'older events');
        assert.equal(tableRows(second.body).length, 3);
        assert.equal(linkHref(second.body, 'Older events'), null);
        assert.equal(linkHref(second.body, 'Newest events'), `/admin/events?userId=${subject}&type=signout`);
        const seen = [...first.body.matchAll(/<dt>n<\/dt><dd>(\d+)<\/dd>/g), ...second.body.matchAll(/<dt>n<\/dt><dd>(\d+)<\/dd>/g)].map((m) => Number(m[1]));
        assert.equal(seen.length, total);
        assert.equal(new Set(seen).size, total, 'each event once');
        const times = [...first.body.matchAll(/<time datetime="([^"]+)"/g), ...second.body.matchAll(/<time datetime="([^"]+)"/g)].map((m) => m[1]!);
        assert.deepEqual(times, [...times].sort().reverse(), 'newest first');

        const bogus = await get(`/admin/events?userId=${subject}&cursor=%3Cx%3E`, adminBrowser);
        assertHtmlPage(bogus, 'bad cursor');
        assert.deepEqual(alertCodes(bogus.body).errors, ['INVALID_CURSOR']);
      });
    });

    describe('in another language', () => {
      /** A page in the language the URL or header asks for, without keeping the language cookie (the other tests read English). */
      async function getIn(url: string, headers: Record<string, string> = {}) {
        return t.app.inject({ method: 'GET', url, headers: { cookie: adminBrowser.jar.header(), 'user-agent': adminBrowser.userAgent, ...headers } });
      }

      it('renders the user list, a user and the audit log in German, French and Japanese, dates included', async () => {
        const user = await newUser('Sprachen Person', ['EDITOR']);
        await t.services.admin.updateUser(user.id, { disabled: true }, { actorUserId: ada.id, ip: null, userAgent: null });

        const list = await getIn('/admin?query=Sprachen&lang=de');
        assertHtmlPage(list, 'German list');
        assert.match(list.body, /<html lang="de"/);
        assert.match(list.body, /<title>Benutzer · /);
        assert.match(list.body, /<h1>Benutzer<\/h1>/);
        assert.match(list.body, /<nav class="admin-nav" aria-label="Verwaltung">/);
        assert.match(list.body, /<a href="\/admin\/events">Audit-Log<\/a>/);
        assert.match(list.body, /<label for="query">Benutzer nach Name oder E-Mail-Adresse suchen<\/label>/);
        assert.match(list.body, /Benutzer, deren Name oder E-Mail-Adresse mit „Sprachen“ beginnt\. <a href="\/admin">Alle anzeigen<\/a>/);
        const [row] = tableRows(list.body);
        assert.match(row!, /<td role="cell" data-label="E-Mail-Adresse" class="address">/);
        assert.match(row!, /<span class="status status-disabled">Deaktiviert<\/span>/);
        // "27. Nov. 2026, 07:00 UTC": German order and 24-hour time, not the English form.
        assert.match(row!, /<time datetime="[^"]+">\d{1,2}\. \S+ \d{4}, \d\d:\d\d UTC<\/time>/);

        const page = await getIn(`/admin/users/${user.id}?notice=USER_DISABLED`, { 'accept-language': 'fr-CH, fr;q=0.9' });
        assertHtmlPage(page, 'French user page');
        assert.match(page.body, /<html lang="fr"/);
        assert.match(page.body, /<h2 id="account-heading">Compte<\/h2>/);
        assert.match(page.body, /role="status">\s*<p>Le compte est désactivé et toutes ses sessions ont été fermées\.<\/p>/);
        assert.match(page.body, /<span class="status status-disabled">Désactivé<\/span> depuis le <time datetime="[^"]+">\d{1,2} \S+ \d{4}, \d\d:\d\d UTC<\/time>/);
        assert.match(page.body, />Réactiver le compte<\/button>/);

        const events = await getIn(`/admin/events?userId=${user.id}&lang=ja`);
        assertHtmlPage(events, 'Japanese audit log');
        assert.match(events.body, /<html lang="ja"/);
        assert.match(events.body, /<h1>監査ログ<\/h1>/);
        assert.match(events.body, /<th scope="col" role="columnheader">実行者<\/th>/);
        assert.match(events.body, /<option value="">すべてのタイプ<\/option>/);
        assert.match(events.body, /<time datetime="[^"]+">\d{4}年\d{1,2}月\d{1,2}日 \d{1,2}:\d\d UTC<\/time>/);
        assert.match(events.body, /<code>user\.disabled<\/code>/, 'event types stay identifiers');
      });

      it('explains a known error code in the language, shows it for support, and never echoes an unknown one', async () => {
        const known = await getIn('/admin?error=USER_NOT_FOUND&lang=es');
        assertHtmlPage(known, 'Spanish known error');
        assert.match(known.body, /<html lang="es"/);
        assert.match(known.body, /role="alert">\s*<p>Ese usuario no existe\.<\/p>\s*<p class="code">Código de error: <code>USER_NOT_FOUND<\/code><\/p>/);

        for (const [url, lang, general] of [
          ['/admin?error=NO_SUCH_CODE_42', 'de', 'Das hat nicht funktioniert. Bitte versuchen Sie es erneut.'],
          ['/admin/events?error=NO_SUCH_CODE_42&notice=NO_SUCH_CODE_42', 'pt-BR', 'Não deu certo. Tente de novo.'],
          [`/admin/users/${ada.id}?error=NO_SUCH_CODE_42`, 'ja', 'うまくいきませんでした。もう一度お試しください。'],
        ] as const) {
          const response = await getIn(`${url}&lang=${lang}`);
          assertHtmlPage(response, url);
          assert.match(response.body, new RegExp(`<html lang="${lang}"`), url);
          assert.ok(!response.body.includes('NO_SUCH_CODE_42'), `${url}: the unknown code is not echoed`);
          assert.deepEqual(alertCodes(response.body), { errors: [''], notices: [] }, url);
          assert.ok(response.body.includes(`<p>${general}</p>`), `${url}: the general message in ${lang}`);
        }
      });
    });

    it('escapes hostile names, user agents, searches and codes on every admin page', async () => {
      const hostileName = '<img src=x onerror=alert(1)>"\'';
      const hostileAgent = '<script>alert("ua")</script>';
      const mallory = await newUser(hostileName, ['EDITOR']);
      assert.equal((await signInWithJson(mallory.email, hostileAgent)).status, 200);
      const hostileQuery = '"><script>alert(2)</script>';
      const pages = [
        await get(`/admin?query=${encodeURIComponent('<img')}`, adminBrowser),
        await get(`/admin?query=${encodeURIComponent(hostileQuery)}`, adminBrowser),
        await get(`/admin/users/${mallory.id}?notice=${encodeURIComponent('<b>n</b>')}&error=${encodeURIComponent('<b>e</b>')}`, adminBrowser),
        await get(`/admin/events?userId=${encodeURIComponent(`${mallory.id}`)}`, adminBrowser),
        await get(`/admin/events?userId=${encodeURIComponent('"><script>x</script>')}&type=${encodeURIComponent('<i>t</i>')}`, adminBrowser),
      ];
      for (const [index, page] of pages.entries()) {
        assertHtmlPage(page, `hostile page ${index}`);
        assert.doesNotMatch(page.body, /<img|<b>|<i>|<script/i, `page ${index}: nothing hostile unescaped`);
      }
      assert.match(pages[0]!.body, /&lt;img src=x onerror=alert\(1\)&gt;&quot;&#39;<\/a>/);
      assert.match(pages[1]!.body, /value="&quot;&gt;&lt;script&gt;alert\(2\)&lt;\/script&gt;"/);
      assert.match(pages[2]!.body, /<h1>&lt;img src=x onerror=alert\(1\)&gt;&quot;&#39;<\/h1>/);
      assert.match(pages[2]!.body, /&lt;script&gt;alert\(&quot;ua&quot;\)&lt;\/script&gt;/);
      // An unknown code is never shown back: the general message, without a code.
      assert.doesNotMatch(pages[2]!.body, /&lt;b&gt;[en]&lt;/);
      assert.deepEqual(alertCodes(pages[2]!.body).errors, ['']);
      assert.match(pages[2]!.body, /role="alert">\s*<p>That did not work\. Please try again\.<\/p>\s*<\/div>/);
      assert.equal(alertCodes(pages[2]!.body).notices.length, 0, 'an unknown notice shows nothing');
      assert.match(pages[3]!.body, /<dd class="client-agent">&lt;script&gt;alert\(&quot;ua&quot;\)&lt;\/script&gt;<\/dd>/);
      assert.match(pages[4]!.body, /<code>UNKNOWN_EVENT_TYPE<\/code>/);
    });
  });
}
