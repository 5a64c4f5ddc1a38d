/**
 * An Express 5 app on its own origin (say https://app.example.com beside Gatehouse at
 * https://auth.example.com), protected by Gatehouse with `gatehouse-protect`:
 *
 * - Its pages are signed in through Gatehouse's OpenID Provider (`createSignIn`, sign-in mode): the
 *   app is a relying party with its own sealed session cookie, so it works on any origin.
 *       /                public
 *       /dashboard       a signed-in user (a browser without a session is sent to sign in at Gatehouse)
 *       /admin           a signed-in user with the ADMIN role (403 otherwise)
 *       /auth/signin, /auth/callback, /auth/signout (POST), /auth/backchannel-logout (POST): sign-in mode's own
 * - Its API takes Bearer tokens (`createProtector`): tokens Gatehouse's OpenID Provider issued for
 *   this API (API_AUDIENCE), to machines (client credentials) or to apps calling for a user, and
 *   Gatehouse's own session tokens (a first-party script signed in with gatehouse-client: client.ts).
 *       /api/me          a user: who the token speaks for (a machine's own token is refused: 403)
 *       /api/reports     a token with the `reports:read` scope (403 INSUFFICIENT_SCOPE otherwise)
 *
 * Environment (see README.md): GATEHOUSE_URL, APP_URL, CLIENT_ID, CLIENT_SECRET, SESSION_SECRET,
 * API_AUDIENCE (default APP_URL + /api), PORT, HOST.
 */
import express from 'express';
import { createProtector, createSignIn } from 'gatehouse-protect';
import { toNodeMiddleware, type GatehouseUser } from 'gatehouse-protect/node';

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    console.error(`Set ${name} (see README.md).`);
    process.exit(2);
  }
  return value;
}

const GATEHOUSE_URL = process.env.GATEHOUSE_URL ?? 'http://localhost:3000';
const PORT = Number(process.env.PORT ?? 4000);
const HOST = process.env.HOST ?? 'localhost';
const APP_URL = new URL(process.env.APP_URL ?? `http://localhost:${PORT}`).origin;
const API_AUDIENCE = process.env.API_AUDIENCE ?? `${APP_URL}/api`;

// The pages: sign-in mode. The client is registered at Gatehouse with the redirect URI
// APP_URL/auth/callback, the post-logout redirect URI APP_URL/ and the back-channel logout URI
// APP_URL/auth/backchannel-logout (`gatehouse clients create … --json` prints the id and secret).
const signIn = createSignIn({
  issuer: GATEHOUSE_URL,
  clientId: required('CLIENT_ID'),
  clientSecret: required('CLIENT_SECRET'),
  appUrl: APP_URL,
  secret: required('SESSION_SECRET'), // 32+ characters: seals the app's session cookie
  rules: {
    protectedPrefixes: ['/dashboard', '/admin'],
    publicPrefixes: [],
    roleRequirements: [{ prefix: '/admin', role: 'ADMIN' }],
  },
});

// The API: Bearer tokens only (no cookie: nothing for a cross-site form to ride on), scopes ruled per path.
const apiProtector = createProtector({
  issuer: GATEHOUSE_URL,
  audience: [API_AUDIENCE, GATEHOUSE_URL],
  cookieNames: [],
  rules: {
    protectedPrefixes: ['/api'],
    publicPrefixes: [],
    roleRequirements: [],
    scopeRequirements: [{ prefix: '/api/reports', scopes: ['reports:read'] }],
  },
});

const app = express();

// Every /api request (Express matches mount paths case-insensitively, as its routes) meets the API's
// guard first and never the pages' session; every other request passes through sign-in mode.
const api = express.Router();
api.use(toNodeMiddleware(apiProtector));
app.use('/api', api);
app.use(toNodeMiddleware(signIn));

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) => `<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1>${body}`;
const signOutForm = `<form method="post" action="${signIn.paths.signOut}"><button>Sign out</button></form>`;

/** The user behind a request the guard let through on a protected path. */
function userOf(user: GatehouseUser | null | undefined): GatehouseUser {
  if (user === null || user === undefined) throw new Error('the guard let an anonymous request through');
  return user;
}

app.get('/', (req, res) => {
  const who = req.gatehouse ? `Signed in as ${escapeHtml(req.gatehouse.email ?? req.gatehouse.userId)}. ${signOutForm}` : `<a href="${signIn.paths.signIn}?returnTo=/dashboard">Sign in</a>`;
  res.send(page('Home', `<p>Public. <a href="/dashboard">Dashboard</a> · <a href="/admin">Admin</a></p><p>${who}</p>`));
});

app.get('/dashboard', (req, res) => {
  const user = userOf(req.gatehouse); // typed by gatehouse-protect/node: GatehouseUser | null | undefined
  res.send(
    page(
      'Dashboard',
      `<p id="who">Signed in as <strong>${escapeHtml(user.email ?? '')}</strong> (<code>${escapeHtml(user.userId)}</code>; roles: ${escapeHtml(user.roles.join(', ') || 'none')}).</p>${signOutForm}`,
    ),
  );
});

app.get('/admin', (req, res) => {
  const user = userOf(req.gatehouse);
  res.send(page('Admin', `<p>Admin area for <code>${escapeHtml(user.userId)}</code>.</p>`));
});

api.get('/me', (req, res) => {
  const user = req.gatehouse;
  // A machine calling for itself has no user: this route is for people (and apps calling for them).
  if (user === null || user === undefined) {
    res.status(403).json({ error: 'FORBIDDEN', message: 'This endpoint is about a user; a machine token speaks for no one.' });
    return;
  }
  res.json(user);
});

api.get('/reports', (req, res) => {
  const client = req.gatehouseClient; // the app behind the token: its id, its scopes, the user it calls for
  res.json({ reports: [{ id: 'weekly', title: 'Weekly sign-ins' }], calledBy: client?.clientId ?? null, forUser: req.gatehouse?.userId ?? null });
});

const server = app.listen(PORT, HOST, (error?: Error) => {
  if (error) throw error;
  console.log(`Example app listening on ${APP_URL} (http://${HOST}:${PORT}), signing in through Gatehouse at ${GATEHOUSE_URL}`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
