/**
 * Gatehouse as an OpenID Provider in a real browser (Debian's Chromium through playwright-core),
 * against the real server listening on loopback (AUTH_URL = its 127.0.0.1 address, SQLite), with a
 * relying party of its own on another origin (`http://localhost:<port>`, another site): a small
 * node:http app using openid-client (PKCE, state, nonce) whose `/login` sends the browser to
 * Gatehouse and whose `/callback` redeems the code and shows who signed in.
 *
 * - A user signs in on Gatehouse's sign-in page, allows a third-party app on the consent page and
 *   comes back to the app.
 * - A user with an authenticator app passes the second-factor page inside the same flow.
 * - RP-initiated logout: the app sends the browser to the end-session endpoint, the user clicks
 *   "Sign out", lands on the app's post-logout page, and is signed out of Gatehouse too.
 * - A device is connected on the /device page.
 *
 * The way back to the app after a form (sign-in, consent, logout) is a redirect chain that browsers
 * check against the page's `form-action`: a CSP violation or any other console error fails the
 * test. Screenshots go to test-artifacts/screenshots/. Skipped with a reason when Chromium is
 * missing outside CI.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createUser } from '../helpers/app.ts';
import { createRpUser, discover, listeningApp, registerClient, USER, type ListeningApp } from '../helpers/oidc-rp.ts';
import { closeBrowser, launchBrowser, saveScreenshot, skipUnlessChromium, watchConsole, withPage, type Browser, type Page } from '../helpers/browser.ts';
import { totpCode, TOTP_STEP_MS } from '../helpers/totp.ts';
import { SYSTEM_SOURCE } from '../../src/audit/audit.service.ts';

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

function html(res: ServerResponse, status: number, title: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body>${body}</body></html>`);
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

interface RelyingParty {
  /** Where the app is, as the browser sees it: another site than Gatehouse. */
  readonly origin: string;
  readonly clientId: string;
  /** What went wrong in the app (a refused callback…), for the failure message. */
  readonly errors: string[];
  close(): Promise<void>;
}

/**
 * A relying party on `http://localhost:<port>` (listening on 127.0.0.1), registered with Gatehouse
 * as a confidential client with its callback and post-logout URIs, playing an app with
 * openid-client: `/login`, `/callback`, `/logout`, `/signed-out`.
 */
async function startRelyingParty(gatehouse: ListeningApp, options: { name: string; isFirstParty: boolean }): Promise<RelyingParty> {
  const transactions = new Map<string, { codeVerifier: string; state: string; nonce: string }>();
  const sessions = new Map<string, { email: string; idToken: string; logoutState?: string }>();
  const errors: string[] = [];
  let config: client.Configuration | undefined;
  let origin = '';

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', origin);
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    if (config === undefined) throw new Error('the relying party is not configured yet');
    if (url.pathname === '/login') {
      const codeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const authorizationUrl = client.buildAuthorizationUrl(config, {
        redirect_uri: `${origin}/callback`,
        scope: 'openid email profile',
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      const id = randomUUID();
      transactions.set(id, { codeVerifier, state, nonce });
      res.writeHead(302, { location: authorizationUrl.href, 'set-cookie': `rp_tx=${id}; Path=/; HttpOnly; SameSite=Lax` }).end();
      return;
    }
    if (url.pathname === '/callback') {
      const transaction = transactions.get(cookie(req, 'rp_tx') ?? '');
      if (transaction === undefined) throw new Error('no sign-in transaction for this browser');
      transactions.delete(cookie(req, 'rp_tx')!);
      const tokens = await client.authorizationCodeGrant(config, url, {
        pkceCodeVerifier: transaction.codeVerifier,
        expectedState: transaction.state,
        expectedNonce: transaction.nonce,
      });
      const claims = tokens.claims()!;
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
      const email = String(info.email);
      const id = randomUUID();
      sessions.set(id, { email, idToken: tokens.id_token! });
      html(
        res,
        200,
        'The app',
        `<h1>Signed in as ${escapeHtml(email)}</h1><p id="amr">${escapeHtml((Array.isArray(claims.amr) ? claims.amr : []).join(' '))}</p><p><a href="/logout">Sign out of the app</a></p>`,
        { 'set-cookie': `rp_session=${id}; Path=/; HttpOnly; SameSite=Lax` },
      );
      return;
    }
    if (url.pathname === '/logout') {
      const session = sessions.get(cookie(req, 'rp_session') ?? '');
      if (session === undefined) throw new Error('not signed in to the app');
      session.logoutState = client.randomState();
      const endSession = client.buildEndSessionUrl(config, { id_token_hint: session.idToken, post_logout_redirect_uri: `${origin}/signed-out`, state: session.logoutState });
      res.writeHead(302, { location: endSession.href }).end();
      return;
    }
    if (url.pathname === '/signed-out') {
      const id = cookie(req, 'rp_session') ?? '';
      const session = sessions.get(id);
      if (session === undefined || url.searchParams.get('state') !== session.logoutState) throw new Error(`unexpected post-logout state ${url.searchParams.get('state')}`);
      sessions.delete(id);
      html(res, 200, 'The app', '<h1>Signed out of the app</h1>', { 'set-cookie': 'rp_session=; Path=/; Max-Age=0' });
      return;
    }
    html(res, 404, 'Not found', '<h1>Not found</h1>');
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const message = error instanceof Error ? `${error.name}: ${error.message} ${JSON.stringify((error as { cause?: unknown }).cause ?? '')}` : String(error);
      errors.push(`${req.url}: ${message}`);
      if (!res.headersSent) html(res, 500, 'App error', `<h1>App error</h1><pre>${escapeHtml(message)}</pre>`);
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://localhost:${(server.address() as { port: number }).port}`;
  const registered = await registerClient(gatehouse, {
    name: options.name,
    redirectUris: [`${origin}/callback`],
    postLogoutRedirectUris: [`${origin}/signed-out`],
    isFirstParty: options.isFirstParty,
  });
  config = await discover(gatehouse.url, registered.clientId, registered.clientSecret);
  return {
    origin,
    clientId: registered.clientId,
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** On Gatehouse's sign-in page: e-mail, password, "Login". */
async function submitSignIn(page: Page, email: string, password: string): Promise<void> {
  await page.waitForURL((url) => url.pathname === '/auth/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

/** Waits for the app's callback page to say who signed in. */
async function expectSignedInAtApp(page: Page, rp: RelyingParty, email: string): Promise<void> {
  try {
    await page.waitForURL((url) => url.origin === rp.origin && url.pathname === '/callback');
    await page.getByRole('heading', { name: `Signed in as ${email}` }).waitFor();
  } catch (error) {
    throw new Error(`not signed in at the app (now at ${page.url()}; app errors: ${JSON.stringify(rp.errors)})`, { cause: error });
  }
}

const skip = skipUnlessChromium();

describe('Gatehouse as an OpenID Provider in Chromium', { skip, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let gatehouse: ListeningApp | undefined;
  const relyingParties = new Set<RelyingParty>();

  /** A relying party for one test, stopped after it (and, at the latest, after the suite). */
  async function relyingParty(t: TestContext, options: { name: string; isFirstParty: boolean }): Promise<RelyingParty> {
    const rp = await startRelyingParty(gatehouse!, options);
    relyingParties.add(rp);
    t.after(async () => {
      relyingParties.delete(rp);
      await rp.close();
    });
    return rp;
  }

  before(async () => {
    browser = await launchBrowser();
    database = await createSqliteDatabase();
    gatehouse = await listeningApp(database);
    await createRpUser(gatehouse);
  });
  after(async () => {
    await closeBrowser(browser);
    await Promise.all([...relyingParties].map((rp) => rp.close()));
    await gatehouse?.close();
    await database?.drop();
  });

  it('signs in at a third-party app: Gatehouse sign-in page, consent page, back at the app', async (t) => {
    assert.ok(browser && gatehouse);
    const rp = await relyingParty(t, { name: 'Recipe Box', isFirstParty: false });
    const baseURL = gatehouse.url;
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(`${rp.origin}/login`);
      // The sign-in page says which app is asking, by its name and the host it sends people back to.
      await page.waitForURL((url) => url.pathname === '/auth/signin');
      assert.equal(await page.locator('.asking-app').innerText(), `to continue to Recipe Box (${new URL(rp.origin).host})`);
      await submitSignIn(page, USER.email, USER.password);

      await page.getByRole('heading', { name: 'Recipe Box wants to use your Gatehouse account' }).waitFor();
      assert.equal(new URL(page.url()).origin, baseURL);
      assert.match(new URL(page.url()).pathname, /^\/oidc\/interaction\//);
      const main = await page.locator('main').innerText();
      assert.match(main, new RegExp(`Logged in as ${USER.email.replace('.', '\\.')}`));
      assert.match(main, /See your email address/);
      assert.match(main, /See your name/);
      assert.ok(main.includes(rp.origin), 'the page names where the app will be sent');
      await screenshot(t, page, 'oidc-consent');

      await page.getByRole('button', { name: 'Allow' }).click();
      await expectSignedInAtApp(page, rp, USER.email);
      assert.deepEqual(problems, [], 'no console errors (e.g. a form-action CSP violation on the way back to the app)');
      assert.deepEqual(rp.errors, []);

      // Once allowed, the next sign-in at the app goes straight through.
      await page.goto(`${rp.origin}/login`);
      await expectSignedInAtApp(page, rp, USER.email);
      assert.deepEqual(problems, []);
    });
  });

  it('passes the second-factor page inside the OpenID flow and comes back to the app', async (t) => {
    assert.ok(browser && gatehouse);
    const rp = await relyingParty(t, { name: 'Team Wiki', isFirstParty: true });
    const email = 'tess@example.com';
    const user = await createUser(gatehouse.services, { email, password: USER.password, name: 'Tess Totp' });
    const setup = await gatehouse.services.mfa.beginTotpSetup(user);
    assert.ok(setup.ok);
    const enabled = await gatehouse.services.mfa.enableTotp(user, totpCode(setup.secret, Date.now()), SYSTEM_SOURCE);
    assert.ok(enabled.ok, JSON.stringify(enabled));

    await withPage(t, browser, { baseURL: gatehouse.url }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(`${rp.origin}/login`);
      await submitSignIn(page, email, USER.password);
      await page.waitForURL((url) => url.pathname === '/auth/mfa');
      assert.equal(await page.locator('.asking-app').innerText(), `to continue to Team Wiki (${new URL(rp.origin).host})`, 'the second-factor page says it too');
      assert.ok(!(await page.context().cookies()).some((entry) => entry.name === 'gatehouse.session'), 'no session before the second factor');
      await screenshot(t, page, 'oidc-second-factor');
      // The step of the enabling code is spent: the next step's code.
      await page.getByLabel('Code', { exact: true }).fill(totpCode(setup.secret, Date.now() + TOTP_STEP_MS));
      await page.getByRole('button', { name: 'Verify' }).click();

      // A first-party app: no consent page.
      await expectSignedInAtApp(page, rp, email);
      const amr = (await page.locator('#amr').innerText()).split(' ');
      for (const method of ['pwd', 'otp', 'mfa']) assert.ok(amr.includes(method), `amr ${amr.join(' ')} has ${method}`);
      assert.deepEqual(problems, [], 'no console errors (e.g. a form-action CSP violation after the second-factor form)');
      assert.deepEqual(rp.errors, []);
    });
  });

  it('logs out from the app: the end-session page, "Sign out", the app\'s post-logout page, and Gatehouse is signed out too', async (t) => {
    assert.ok(browser && gatehouse);
    const rp = await relyingParty(t, { name: 'Logbook', isFirstParty: true });
    const baseURL = gatehouse.url;
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(`${rp.origin}/login`);
      await submitSignIn(page, USER.email, USER.password);
      await expectSignedInAtApp(page, rp, USER.email);
      await page.goto('/dashboard');
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

      // The app's "Sign out": to Gatehouse's end-session endpoint with the ID token and the post-logout URI.
      await page.goto(`${rp.origin}/logout`);
      await page.waitForURL((url) => url.origin === baseURL && url.pathname === '/oidc/session/end');
      await page.getByRole('heading', { name: 'Sign out' }).waitFor();
      assert.match(await page.locator('main').innerText(), /Do you want to sign out of Gatehouse and Logbook\?/);
      await screenshot(t, page, 'oidc-logout');
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();

      await page.waitForURL((url) => url.origin === rp.origin && url.pathname === '/signed-out');
      await page.getByRole('heading', { name: 'Signed out of the app' }).waitFor();
      // The session ended on the server (its cookies are cleared by the next request that presents them).
      assert.equal((await page.request.get(`${baseURL}/api/auth/session`)).status(), 401, 'the Gatehouse session ended with the logout');

      await page.goto('/dashboard');
      await page.waitForURL((url) => url.origin === baseURL && url.pathname === '/auth/signin');
      assert.deepEqual(problems, [], 'no console errors (e.g. a form-action CSP violation on the way to the post-logout page)');
      assert.deepEqual(rp.errors, []);
    });
  });

  it('connects a device on the /device page', async (t) => {
    assert.ok(browser && gatehouse);
    const { clientId } = await registerClient(gatehouse, {
      name: 'Living Room TV',
      isPublic: true,
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      isFirstParty: true,
    });
    const config = await discover(gatehouse.url, clientId);
    const device = await client.initiateDeviceAuthorization(config, { scope: 'openid email' });
    const controller = new AbortController();
    t.after(() => controller.abort());
    const polling = client.pollDeviceAuthorizationGrant(config, device, undefined, { signal: controller.signal });
    polling.catch(() => undefined);

    await withPage(t, browser, { baseURL: gatehouse.url }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin');
      await submitSignIn(page, USER.email, USER.password);
      await page.waitForURL((url) => url.pathname === '/dashboard');

      await page.goto(device.verification_uri);
      await page.getByRole('heading', { name: 'Connect a device' }).waitFor();
      await screenshot(t, page, 'oidc-device');
      await page.getByLabel('Code').fill(device.user_code);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('heading', { name: 'Connect Living Room TV?' }).waitFor();
      assert.match(await page.locator('main').innerText(), new RegExp(device.user_code));
      await screenshot(t, page, 'oidc-device-confirm');
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('heading', { name: 'Device connected' }).waitFor();
      await screenshot(t, page, 'oidc-device-done');
      assert.deepEqual(problems, []);
    });
    const tokens = await polling;
    const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    assert.equal(info.email, USER.email);
  });
});
