/**
 * A tour of every hosted page, in the states worth seeing: one list for the accessibility check
 * (test/flows/accessibility.test.ts) and the screenshots under docs/screenshots/
 * (scripts/screenshots.ts), so a page added to one is in both.
 *
 * `seedTour` makes the people and things the pages show, through the real services of a served
 * test app: a member with an organization and an invitation out, an administrator with a webhook
 * endpoint and an OpenID client, someone with an authenticator app (who stops at the second-factor
 * prompt), new accounts on demand (setting up an authenticator app), fresh e-mail sign-in links, SSO
 * setup links (one with answered test sign-ins on demand, one of another organization for its SCIM tokens).
 * `openTourPage` visits a stop as its visitor, in a
 * browser context already signed in as that visitor (`signInVisitor`) and set to a language
 * (`setLanguage`: the `gatehouse.lang` cookie, which the OpenID Provider's pages read too).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { SYSTEM_SOURCE } from '../../src/audit/audit.service.ts';
import { OPERATOR } from '../../src/organizations/organizations.model.ts';
import type { Locale } from '../../src/i18n/locales.ts';
import { createUser, type ServedTestApp } from './app.ts';
import { enrolTotp, totpCode } from './totp.ts';

export const TOUR_PASSWORD = 'correct horse battery staple';

/**
 * Who is looking: nobody signed in, a member, an administrator, someone at the second-factor
 * prompt, or a newcomer: a new account for each visit (its stops sign it in themselves), for pages
 * that change the account (turning on an authenticator app shows the recovery codes once).
 */
export type Visitor = 'guest' | 'member' | 'admin' | 'second-factor' | 'newcomer';

export interface TourSeed {
  baseURL: string;
  emails: Record<Exclude<Visitor, 'guest' | 'newcomer'>, string>;
  /** A new account (with TOUR_PASSWORD) for a newcomer's visit; its address. */
  newcomer: () => Promise<string>;
  memberId: string;
  organizationId: string;
  webhookId: string;
  clientId: string;
  /** The OpenID client's redirect URI (on loopback; nothing listens there: the tour never completes a flow). */
  redirectUri: string;
  /** A live invitation link's path and a live password reset link's path, from the mails the seeding sent. */
  invitationPath: string;
  resetPath: string;
  /** A fresh e-mail sign-in link's path (a new mail each time: a link lives EMAIL_SIGNIN_TTL). */
  emailSignInPath: () => Promise<string>;
  /** A live SSO setup link's path (with its token) for the tour organization. */
  ssoSetupPath: string;
  /** A fresh test sign-in of that link, answered as an IdP would: its result page's path (open the link first: its cookie). */
  ssoSetupTestPath: () => Promise<string>;
  /**
   * A live setup link of another organization (nobody's page in the tour shows its SCIM tokens),
   * with room for one more SCIM token: each visit makes one, past the limit of active ones.
   */
  ssoSetupScimPath: () => Promise<string>;
  /** That other organization's id (the admin's new setup links go there: the tour organization's page keeps one live link). */
  otherOrganizationId: string;
}

export interface TourStop {
  /** File-name-safe, unique: the screenshot's name. */
  id: string;
  /** What a reader of the screenshots index sees. */
  title: string;
  visitor: Visitor;
  /** The page: a path (with a state in its query), or a way there that takes more than a link. */
  path?: (seed: TourSeed) => string;
  open?: (page: Page, seed: TourSeed) => Promise<void>;
}

const fixed = (path: string) => () => path;

/** An authorization request of the seeded third-party client: lands on the consent page (signed in) or the sign-in page (not). */
async function openAuthorization(page: Page, seed: TourSeed): Promise<void> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: seed.clientId,
    redirect_uri: seed.redirectUri,
    response_type: 'code',
    scope: 'openid profile email',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  await page.goto(`/oidc/auth?${query}`);
}

async function openConsent(page: Page, seed: TourSeed): Promise<void> {
  await openAuthorization(page, seed);
  await page.waitForURL((url) => url.pathname.startsWith('/oidc/interaction/'));
}

/** The same request from a visitor not signed in: the sign-in page, saying which app asks ("to continue to Recipe Box"). */
async function openSignInForApp(page: Page, seed: TourSeed): Promise<void> {
  await openAuthorization(page, seed);
  await page.waitForURL((url) => url.pathname === '/auth/signin');
  assert.match(await page.locator('main').innerText(), /Recipe Box/, 'the sign-in page names the app that asks');
}

/** Goes to `path` and submits its form posting to `action`, after `fill`; resolves on the page that answers. */
async function submitForm(page: Page, path: string, action: string, fill: (form: Locator) => Promise<void> = async () => {}): Promise<void> {
  await page.goto(path);
  const form = page.locator(`form[action="${action}"]`);
  await fill(form);
  await Promise.all([page.waitForNavigation(), form.locator('button[type="submit"]').click()]);
}

/** Signs `page`'s context in as `email` with the sign-in form (its fields by name: any language). */
async function signInAs(page: Page, email: string): Promise<void> {
  await page.goto('/auth/signin');
  await page.locator('input[name="email"]').fill(email);
  await page.locator('input[name="password"]').fill(TOUR_PASSWORD);
  await Promise.all([page.waitForNavigation(), page.locator('form[action="/api/auth/signin"] button[type="submit"]').click()]);
}

/** A newcomer's dashboard form "set up an authenticator app", posted: the setup page with its QR code and key. */
async function openTotpSetup(page: Page, seed: TourSeed): Promise<void> {
  await signInAs(page, await seed.newcomer());
  await submitForm(page, '/dashboard', '/dashboard/mfa/totp/setup');
}

/** The setup's key, as the page shows it (groups of four). */
async function shownSecret(page: Page): Promise<string> {
  return (await page.locator('#totp-secret').innerText()).replace(/\s+/g, '');
}

/** Turns the app on with the code it shows now: the recovery codes, shown once. */
async function openRecoveryCodes(page: Page, seed: TourSeed): Promise<void> {
  await openTotpSetup(page, seed);
  const code = totpCode(await shownSecret(page), Date.now());
  await page.locator('form[action="/dashboard/mfa/totp/enable"] input[name="code"]').fill(code);
  await Promise.all([page.waitForNavigation(), page.locator('form[action="/dashboard/mfa/totp/enable"] button[type="submit"]').click()]);
}

/** An address with no account: the e-mail sign-in pages answer alike for every address. */
const EMAIL_SIGNIN_ADDRESS = 'lou.link@example.com';

/** Asks for a sign-in mail with the page's form: the code prompt, this browser's request behind it. */
async function openEmailCode(page: Page): Promise<void> {
  await submitForm(page, '/auth/email-signin', '/api/auth/email/start', async (form) => {
    await form.locator('input[name="email"]').fill(EMAIL_SIGNIN_ADDRESS);
  });
  assert.equal(new URL(page.url()).pathname, '/auth/email-signin/code', 'the start form leads to the code prompt');
  assert.equal(await page.locator('input[name="code"]').count(), 1, 'the prompt asks for the code (this browser asked)');
}

/** A mailed sign-in link's page, live: its "Log in" button. */
async function openEmailLink(page: Page, seed: TourSeed): Promise<void> {
  await page.goto(await seed.emailSignInPath());
  assert.equal(await page.locator('form[action="/api/auth/email/verify"] input[name="token"]').count(), 1, 'the link is live: its button is there');
}

/** Every page, in the order the screenshots index lists them. */
export const TOUR: readonly TourStop[] = [
  { id: 'home', title: 'Home', visitor: 'guest', path: fixed('/') },
  { id: 'signin', title: 'Log in', visitor: 'guest', path: fixed('/auth/signin') },
  {
    id: 'signin-error',
    title: 'Log in, wrong password (the address kept)',
    visitor: 'guest',
    open: (page) =>
      submitForm(page, '/auth/signin', '/api/auth/signin', async (form) => {
        await form.locator('input[name="email"]').fill('sam.somebody@example.com');
        await form.locator('input[name="password"]').fill('not the password');
      }),
  },
  { id: 'email-signin', title: 'Log in by email: ask for a link', visitor: 'guest', path: fixed('/auth/email-signin') },
  { id: 'email-signin-code', title: 'Log in by email: the code', visitor: 'guest', open: openEmailCode },
  {
    id: 'email-signin-code-error',
    title: 'Log in by email: wrong code',
    visitor: 'guest',
    open: async (page) => {
      await openEmailCode(page);
      // Where a wrong code's form post lands (typing one for real would count against the address's limit).
      await page.goto('/auth/email-signin/code?error=INVALID_CODE');
    },
  },
  { id: 'email-signin-link', title: 'Log in by email: the mailed link (its button)', visitor: 'guest', open: openEmailLink },
  { id: 'signin-for-app', title: 'Log in during an OpenID authorization ("to continue to" the app)', visitor: 'guest', open: openSignInForApp },
  { id: 'signup', title: 'Create an account', visitor: 'guest', path: fixed('/auth/signup') },
  { id: 'signup-error', title: 'Create an account, password refused', visitor: 'guest', path: fixed('/auth/signup?error=VALIDATION_ERROR&reason=TOO_SHORT') },
  { id: 'check-email', title: 'Check your email (sign-up)', visitor: 'guest', path: fixed('/auth/check-email') },
  { id: 'verify-email', title: 'Verify email, link lost', visitor: 'guest', path: fixed('/auth/verify-email') },
  { id: 'email-verified', title: 'Email verified', visitor: 'guest', path: fixed('/auth/email-verified') },
  { id: 'forgot-password', title: 'Forgot password', visitor: 'guest', path: fixed('/auth/forgot-password') },
  { id: 'forgot-password-error', title: 'Forgot password, rate limited', visitor: 'guest', path: fixed('/auth/forgot-password?error=RATE_LIMITED') },
  { id: 'forgot-password-sent', title: 'Reset link sent', visitor: 'guest', path: fixed('/auth/forgot-password/sent') },
  { id: 'reset-password', title: 'Choose a new password (live link)', visitor: 'guest', path: (seed) => seed.resetPath },
  { id: 'reset-password-error', title: 'Choose a new password, refused', visitor: 'guest', path: (seed) => `${seed.resetPath}&error=VALIDATION_ERROR&reason=TOO_SHORT` },
  { id: 'reset-password-invalid', title: 'Reset link not valid', visitor: 'guest', path: fixed('/auth/reset-password') },
  { id: 'reset-password-done', title: 'Password changed', visitor: 'guest', path: fixed('/auth/reset-password/done') },
  { id: 'error', title: 'Error page', visitor: 'guest', path: fixed('/auth/error?error=AccessDenied') },
  { id: 'signout', title: 'Sign out', visitor: 'member', path: fixed('/auth/signout') },
  { id: 'mfa-prompt', title: 'Second factor', visitor: 'second-factor', path: fixed('/auth/mfa') },
  { id: 'mfa-prompt-error', title: 'Second factor, wrong code', visitor: 'second-factor', path: fixed('/auth/mfa?error=INVALID_CODE') },
  { id: 'dashboard', title: 'Dashboard', visitor: 'member', path: fixed('/dashboard') },
  {
    id: 'dashboard-sessions',
    title: 'Dashboard, sessions grouped by device (several API sign-ins)',
    visitor: 'member',
    // A fragment of the page already open is no navigation (no response): load it, then go to the section.
    open: async (page) => {
      const response = await page.goto('/dashboard');
      assert.equal(response?.status(), 200);
      await page.locator('#dashboard-sessions').scrollIntoViewIfNeeded();
      assert.ok((await page.locator('#dashboard-sessions details.session-each').count()) > 0, 'the API sign-ins are one group');
    },
  },
  { id: 'dashboard-notice', title: 'Dashboard, password changed', visitor: 'member', path: fixed('/dashboard?notice=PASSWORD_CHANGED') },
  { id: 'dashboard-password-error', title: 'Dashboard, new password refused', visitor: 'member', path: fixed('/dashboard?error=VALIDATION_ERROR&reason=TOO_SHORT') },
  { id: 'mfa-setup', title: 'Set up an authenticator app', visitor: 'newcomer', open: openTotpSetup },
  {
    id: 'mfa-setup-error',
    title: 'Set up an authenticator app, wrong code',
    visitor: 'newcomer',
    open: async (page, seed) => {
      await openTotpSetup(page, seed);
      await page.locator('form[action="/dashboard/mfa/totp/enable"] input[name="code"]').fill('000000');
      await Promise.all([page.waitForNavigation(), page.locator('form[action="/dashboard/mfa/totp/enable"] button[type="submit"]').click()]);
    },
  },
  { id: 'mfa-recovery-codes', title: 'Recovery codes (shown once)', visitor: 'newcomer', open: openRecoveryCodes },
  { id: 'forbidden', title: 'Access denied (a member at /admin)', visitor: 'member', path: fixed('/admin') },
  { id: 'account-delete', title: 'Delete your account', visitor: 'member', path: fixed('/dashboard/account/delete') },
  { id: 'account-deleted', title: 'Account deleted', visitor: 'guest', path: fixed('/auth/account-deleted') },
  { id: 'organization-new', title: 'New organization', visitor: 'member', path: fixed('/organizations/new') },
  { id: 'organization-new-error', title: 'New organization, address taken', visitor: 'member', path: fixed('/organizations/new?error=SLUG_TAKEN') },
  { id: 'organization', title: 'An organization (owner)', visitor: 'member', path: (seed) => `/organizations/${seed.organizationId}` },
  { id: 'invitation', title: 'An invitation to an organization', visitor: 'guest', path: (seed) => seed.invitationPath },
  { id: 'invitation-invalid', title: 'Invitation link not valid', visitor: 'guest', path: fixed('/organizations/invitations/accept') },
  { id: 'sso-setup', title: 'SSO setup link (the IT admin’s guided page)', visitor: 'guest', path: (seed) => seed.ssoSetupPath },
  {
    id: 'sso-setup-test-result',
    title: 'SSO setup link, a test sign-in’s result (what the IdP asserted)',
    visitor: 'guest',
    open: async (page, seed) => {
      await page.goto(seed.ssoSetupPath);
      const response = await page.goto(await seed.ssoSetupTestPath());
      assert.equal(response?.status(), 200);
      assert.equal(await page.locator('#setup-test-attributes').count(), 1, 'the result lists what the IdP asserted');
    },
  },
  {
    id: 'sso-setup-scim-token',
    title: 'SSO setup link, a new SCIM token (shown once)',
    visitor: 'guest',
    open: async (page, seed) => {
      await submitForm(page, await seed.ssoSetupScimPath(), '/sso/setup/scim-token');
      assert.equal(await page.locator('#scim-token').count(), 1, 'the token is shown, once');
    },
  },
  { id: 'sso-setup-invalid', title: 'SSO setup link not valid', visitor: 'guest', path: fixed(`/sso/setup?token=${'x'.repeat(43)}`) },
  { id: 'oidc-consent', title: 'Consent to an app (OpenID Provider)', visitor: 'member', open: openConsent },
  { id: 'oidc-logout', title: 'Sign out of apps (OpenID Provider)', visitor: 'member', path: fixed('/oidc/session/end') },
  { id: 'device', title: 'Connect a device (OpenID Provider)', visitor: 'member', path: fixed('/device') },
  { id: 'oidc-error', title: 'OpenID Provider error (unknown app)', visitor: 'guest', path: fixed('/oidc/auth?client_id=nope&response_type=code&scope=openid&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb') },
  { id: 'admin', title: 'Admin: users', visitor: 'admin', path: fixed('/admin') },
  { id: 'admin-user', title: 'Admin: one user', visitor: 'admin', path: (seed) => `/admin/users/${seed.memberId}` },
  { id: 'admin-search-empty', title: 'Admin: users, nothing found', visitor: 'admin', path: fixed('/admin?query=zzz') },
  { id: 'admin-events', title: 'Admin: audit log', visitor: 'admin', path: fixed('/admin/events') },
  { id: 'admin-events-error', title: 'Admin: audit log, unknown event type', visitor: 'admin', path: fixed('/admin/events?type=no.such.type') },
  { id: 'admin-events-filtered', title: 'Admin: audit log, one person’s failures', visitor: 'admin', path: (seed) => `/admin/events?email=${encodeURIComponent(seed.emails.member)}&outcome=failure` },
  { id: 'admin-overview', title: 'Admin: overview (charts with their tables, two weeks of seeded sign-ins)', visitor: 'admin', path: fixed('/admin/overview') },
  { id: 'admin-users-filtered', title: 'Admin: users, filtered and oldest first', visitor: 'admin', path: fixed('/admin/users?status=active&sort=oldest') },
  { id: 'admin-user-new', title: 'Admin: add user', visitor: 'admin', path: fixed('/admin/users/new') },
  {
    id: 'admin-user-new-refused',
    title: 'Admin: add user, address taken',
    visitor: 'admin',
    open: (page, seed) =>
      submitForm(page, '/admin/users/new', '/admin/users/new', async (form) => {
        await form.locator('input[name="email"]').fill(seed.emails.member);
        await form.locator('input[name="name"]').fill('Mia Again');
      }),
  },
  {
    id: 'admin-bulk-confirm',
    title: 'Admin: bulk sign-out, the confirmation naming the count',
    visitor: 'admin',
    open: async (page, seed) => {
      // Found by address: earlier passes of the tour add accounts, which may push them off the first page.
      await page.goto(`/admin?query=${encodeURIComponent(seed.emails.member)}`);
      await page.locator(`input[name="ids"][value="${seed.memberId}"]`).check();
      await page.locator('#bulk-action').selectOption('signOut');
      await Promise.all([page.waitForNavigation(), page.locator('form#bulk button[type="submit"]').click()]);
    },
  },
  { id: 'admin-clients', title: 'Admin: OpenID clients', visitor: 'admin', path: fixed('/admin/clients') },
  { id: 'admin-client', title: 'Admin: one OpenID client', visitor: 'admin', path: (seed) => `/admin/clients/${encodeURIComponent(seed.clientId)}` },
  {
    id: 'admin-client-secret',
    title: 'Admin: a new client’s secret (shown once)',
    visitor: 'admin',
    open: (page, seed) =>
      submitForm(page, '/admin/clients', '/admin/clients', async (form) => {
        await form.locator('input[name="name"]').fill('Team Wiki');
        await form.locator('textarea[name="redirectUris"]').fill(`${seed.baseURL}/wiki/callback`);
      }),
  },
  {
    id: 'admin-client-refused',
    title: 'Admin: registering a client, refused',
    visitor: 'admin',
    open: (page) =>
      submitForm(page, '/admin/clients', '/admin/clients', async (form) => {
        await form.locator('input[name="name"]').fill('Refused app');
        await form.locator('textarea[name="redirectUris"]').fill('ftp://files.example.com/callback');
      }),
  },
  { id: 'admin-webhooks', title: 'Admin: webhooks', visitor: 'admin', path: fixed('/admin/webhooks') },
  { id: 'admin-webhook', title: 'Admin: one webhook endpoint', visitor: 'admin', path: (seed) => `/admin/webhooks/${seed.webhookId}` },
  {
    id: 'admin-webhook-secret',
    title: 'Admin: a new endpoint’s signing secret (shown once)',
    visitor: 'admin',
    open: (page) =>
      submitForm(page, '/admin/webhooks', '/admin/webhooks', async (form) => {
        await form.locator('input[name="url"]').fill('https://hooks.example.com/billing');
        await form.locator('input[name="eventTypes"]').first().check();
      }),
  },
  {
    id: 'admin-webhook-refused',
    title: 'Admin: registering a webhook endpoint, refused',
    visitor: 'admin',
    open: (page) =>
      submitForm(page, '/admin/webhooks', '/admin/webhooks', async (form) => {
        await form.locator('input[name="url"]').fill('http://10.0.0.8/internal');
        await form.locator('input[name="eventTypes"]').first().check();
      }),
  },
  { id: 'admin-organizations', title: 'Admin: organizations', visitor: 'admin', path: fixed('/admin/organizations') },
  { id: 'admin-organization', title: 'Admin: one organization (its live SSO setup links)', visitor: 'admin', path: (seed) => `/admin/organizations/${seed.organizationId}` },
  {
    id: 'admin-organization-sso-link',
    title: 'Admin: a new SSO setup link (shown once)',
    visitor: 'admin',
    open: (page, seed) => submitForm(page, `/admin/organizations/${seed.otherOrganizationId}`, `/admin/organizations/${seed.otherOrganizationId}/sso-setup-links`),
  },
];

/** The path and query of the link to `path` in the newest mail to `to` (the outbox keeps it: no SMTP server here). */
async function mailedPath(served: ServedTestApp, to: string, path: string): Promise<string> {
  for (const entry of await served.services.mail.listRecent(50)) {
    if (entry.to !== to) continue;
    const link = entry.links.map((found) => new URL(found)).find((url) => url.pathname === path);
    if (link !== undefined) return `${link.pathname}${link.search}`;
  }
  throw new Error(`no mail to ${to} with a link to ${path}`);
}

/** Makes what the tour's pages show, through the app's own services. */
export async function seedTour(served: ServedTestApp): Promise<TourSeed> {
  const { services } = served;
  const emails = {
    member: 'mia.member@example.com',
    admin: 'ada.admin@example.com',
    'second-factor': 'max.factor@example.com',
  };
  let newcomers = 0;
  const newcomer = async () => {
    const email = `newcomer${++newcomers}@example.com`;
    await createUser(services, { email, password: TOUR_PASSWORD, name: 'Eli Newcomer' });
    return email;
  };
  const member = await createUser(services, { email: emails.member, password: TOUR_PASSWORD, name: 'Mia Member' });
  const admin = await createUser(services, { email: emails.admin, password: TOUR_PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
  const factor = await createUser(services, { email: emails['second-factor'], password: TOUR_PASSWORD, name: 'Max Factor' });
  await enrolTotp(services, factor, Object.assign(() => Date.now(), { advance: () => undefined }));

  const organization = await services.organizations.create({ name: 'Northwind Traders' }, member.id, SYSTEM_SOURCE);
  assert.ok(organization.ok, 'the tour organization is made');
  const added = await services.organizations.addMember(organization.organization.id, admin.id, 'MEMBER', SYSTEM_SOURCE);
  assert.ok(added.ok, 'the administrator is a member of it');
  const webhook = await services.webhooks.create({ url: 'https://hooks.example.com/gatehouse', eventTypes: ['user.created', 'session.created'], description: 'CRM sync' }, SYSTEM_SOURCE);
  assert.ok(webhook.ok, 'the tour webhook endpoint is made');
  const redirectUri = `${served.baseURL}/tour/callback`;
  const client = await services.oidcClients.create({ name: 'Recipe Box', redirectUris: [redirectUri], isFirstParty: false }, SYSTEM_SOURCE);
  assert.ok(client.ok, 'the tour OpenID client is made');
  // The member's connected apps (on their dashboard and on the admin's page of them): one an
  // administrator registered, with an API, a last use and an agent acting through it, and an agent
  // named by its metadata document, not reviewed.
  const photos = await services.oidcClients.create({ name: 'Photo Frame', redirectUris: [redirectUri], isFirstParty: false }, SYSTEM_SOURCE);
  assert.ok(photos.ok, 'the tour connected app is made');
  await services.oidcProvider.rememberConsent(member.id, { clientId: photos.client.id, scopes: new Set(['openid', 'email', 'offline_access']), resources: { 'https://photos.example.com/api': ['albums:read'] } });
  await services.storage.db.insertInto('oidc_app_uses').values({ user_id: member.id, client_id: photos.client.id, last_used_at: Date.now() }).execute();
  // An agent that exchanged the app's token for another API (token exchange): shown under the app.
  const planner = await services.oidcClients.create({ name: 'Trip Planner', redirectUris: [redirectUri], isFirstParty: false }, SYSTEM_SOURCE);
  assert.ok(planner.ok, 'the tour agent is made');
  const exchanged = { clientId: planner.client.id, subjectClientId: photos.client.id, fromAudience: 'https://photos.example.com/api', toAudience: 'https://maps.example.com/api', scopes: ['places:read'], priorActors: [] };
  await services.audit.record({ type: 'oidc_client.token_exchanged', userId: member.id, source: SYSTEM_SOURCE, details: exchanged });
  await services.oidcProvider.rememberConsent(member.id, { clientId: 'https://agents.example.com/helper.json', scopes: new Set(['openid', 'profile']), resources: {} });
  const invited = 'new.colleague@example.com';
  const invitation = await services.organizations.invite(organization.organization.id, { userId: member.id }, { email: invited, role: 'MEMBER' }, SYSTEM_SOURCE);
  assert.ok(invitation.ok, 'the tour invitation is sent');
  await services.passwordReset.requestReset({ email: emails['second-factor'], source: SYSTEM_SOURCE });
  // A sign-in link for someone with an account (it opens on its "Log in" button; looking spends nothing).
  const emailSignInPath = async () => {
    await services.emailSignIn.start({ email: emails['second-factor'], callbackUrl: null, browserSecret: randomBytes(32).toString('base64url'), source: SYSTEM_SOURCE });
    return mailedPath(served, emails['second-factor'], '/auth/email-signin/link');
  };
  const setupLink = await services.sso.setup.create(organization.organization.id, {}, OPERATOR, SYSTEM_SOURCE);
  assert.ok(setupLink.ok, 'the tour SSO setup link is made');
  const ssoSetupTestPath = async () => {
    const opened = await services.sso.setup.open(new URL(setupLink.url).searchParams.get('token') ?? '', SYSTEM_SOURCE);
    assert.ok(opened.ok, 'the tour SSO setup link is live');
    const testId = await services.sso.setup.startTest(opened.link);
    // What the IdP's answer records (sso.service.ts answerTest): no IdP runs during the tour.
    const outcome = { ok: true, subject: 'ira.it@northwind.example', email: 'ira.it@northwind.example', name: 'Ira IT', groups: ['Engineering', 'Gatehouse Admins'], attributeNames: ['email', 'displayName', 'groups'] };
    await services.storage.db.updateTable('sso_setup_tests').set({ result: JSON.stringify(outcome) }).where('id', '=', testId).execute();
    return `/sso/setup/tests/${encodeURIComponent(testId)}`;
  };
  const itOwner = await createUser(services, { email: 'iris.owner@example.com', password: TOUR_PASSWORD, name: 'Iris Owner' });
  const scimOrganization = await services.organizations.create({ name: 'Fabrikam' }, itOwner.id, SYSTEM_SOURCE);
  assert.ok(scimOrganization.ok, 'the SCIM tour organization is made');
  const scimLink = await services.sso.setup.create(scimOrganization.organization.id, {}, OPERATOR, SYSTEM_SOURCE);
  assert.ok(scimLink.ok, 'its SSO setup link is made');
  const ssoSetupScimPath = async () => {
    for (const token of await services.scimTokens.list(scimOrganization.organization.id)) {
      if (token.revokedAt === null) await services.scimTokens.revoke(scimOrganization.organization.id, token.id, SYSTEM_SOURCE);
    }
    return `${new URL(scimLink.url).pathname}${new URL(scimLink.url).search}`;
  };
  // The member's API sign-ins from one program: the dashboard groups them as one device.
  for (let i = 0; i < 3; i++) {
    const response = await fetch(`${served.baseURL}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'curl/8.5.0' }, body: JSON.stringify({ email: emails.member, password: TOUR_PASSWORD }) });
    assert.equal(response.status, 200, 'an API sign-in of the member');
  }
  // Two weeks of sign-ins and failures by several methods, in the past, for the overview's charts.
  const now = Date.now();
  const methods = [{ method: 'password' }, { method: 'password' }, { method: 'passkey' }, { method: 'oauth', provider: 'github' }, { method: 'email' }];
  const people = [member.id, admin.id, factor.id];
  const seeded = Array.from({ length: 300 }, (_, i) => ({
    id: `tour-event-${i}`,
    type: i % 7 === 0 ? 'signin.failure' : 'signin.success',
    user_id: people[i % people.length]!,
    actor_user_id: null,
    email: null,
    ip: null,
    user_agent: null,
    reason: i % 7 === 0 ? 'INVALID_CREDENTIALS' : null,
    details: JSON.stringify(methods[(i * 3 + Math.floor(i / 14)) % methods.length]),
    created_at: now - (1 + (i % 13)) * 86_400_000 - (i % 5) * 3_600_000,
  }));
  await services.storage.db.insertInto('audit_events').values(seeded).execute();
  return {
    emailSignInPath,
    ssoSetupPath: `${new URL(setupLink.url).pathname}${new URL(setupLink.url).search}`,
    ssoSetupTestPath,
    ssoSetupScimPath,
    otherOrganizationId: scimOrganization.organization.id,
    baseURL: served.baseURL,
    newcomer,
    invitationPath: await mailedPath(served, invited, '/organizations/invitations/accept'),
    resetPath: await mailedPath(served, emails['second-factor'], '/auth/reset-password'),
    emails,
    memberId: member.id,
    organizationId: organization.organization.id,
    webhookId: webhook.endpoint.id,
    clientId: client.client.id,
    redirectUri,
  };
}

/**
 * The environment a tour's app needs: sign-up on, the provider's device flow on its default, sign-in
 * by e-mail on (its pages; the sign-in page's "E-mail me a link"), with room for the mails its stops
 * ask for from one address and IP in every language and look, and for the SSO setup pages' requests.
 */
export const TOUR_ENV = {
  ALLOW_SIGNUP: 'true',
  EMAIL_SIGNIN: 'true',
  RATE_LIMIT_EMAIL_SIGNIN_PER_ADDRESS: '1000/1h',
  RATE_LIMIT_EMAIL_SIGNIN_PER_IP: '1000/1h',
  // The SSO setup link's stops, from one IP in every language and look.
  RATE_LIMIT_SSO_SETUP: '5000/15m',
} as const;

/** Pages answer in `locale` from now on (the cookie a `?lang=` choice sets). */
export async function setLanguage(context: BrowserContext, seed: TourSeed, locale: Locale): Promise<void> {
  await context.addCookies([{ name: 'gatehouse.lang', value: locale, url: seed.baseURL, httpOnly: true, sameSite: 'Lax' }]);
}

/**
 * Signs `page`'s context in as `visitor` with the sign-in form (the form's fields by name, so any
 * language works). The second-factor visitor stops at the prompt: that is the page it shows.
 */
export async function signInVisitor(page: Page, seed: TourSeed, visitor: Visitor): Promise<void> {
  if (visitor === 'guest' || visitor === 'newcomer') return;
  await signInAs(page, seed.emails[visitor]);
  const expected = visitor === 'second-factor' ? '/auth/mfa' : '/dashboard';
  assert.equal(new URL(page.url()).pathname, expected, `${visitor} signed in`);
}

/** Goes to `stop` (signed in already as its visitor). */
export async function openTourPage(page: Page, seed: TourSeed, stop: TourStop): Promise<void> {
  if (stop.open !== undefined) {
    await stop.open(page, seed);
    return;
  }
  const response = await page.goto(stop.path!(seed));
  assert.ok(response !== null && response.status() < 500, `${stop.id}: ${response?.status()}`);
}

/** The tour's stops grouped by visitor, in tour order: each group shares one signed-in context. */
export function stopsByVisitor(stops: readonly TourStop[] = TOUR): Array<{ visitor: Visitor; stops: TourStop[] }> {
  const groups = new Map<Visitor, TourStop[]>();
  for (const stop of stops) groups.set(stop.visitor, [...(groups.get(stop.visitor) ?? []), stop]);
  return [...groups].map(([visitor, grouped]) => ({ visitor, stops: grouped }));
}
