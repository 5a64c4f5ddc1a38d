/**
 * An Express 5 app protected by Gatehouse: `gatehouse-protect` applies the seed's rules
 * (SEED_RULES) to every request and verifies Gatehouse's access tokens against its JWKS.
 *
 *   /            public
 *   /dashboard   a signed-in user (pages without a session are sent to sign in)
 *   /admin       a signed-in user with the ADMIN role (403 otherwise)
 *   /api/me      a signed-in user (401 JSON without a token): who the token speaks for
 *
 * Environment: GATEHOUSE_URL (Gatehouse's AUTH_URL), PORT, HOST, APP_URL (this app's public origin,
 * which Gatehouse must list in TRUSTED_ORIGINS for the way back after sign-in).
 */
import express from 'express';
import { createProtector, SEED_RULES } from 'gatehouse-protect';
import { toNodeMiddleware, type GatehouseUser } from 'gatehouse-protect/node';

const GATEHOUSE_URL = process.env.GATEHOUSE_URL ?? 'http://localhost:3000';
const PORT = Number(process.env.PORT ?? 4000);
const HOST = process.env.HOST ?? 'localhost';
const APP_URL = new URL(process.env.APP_URL ?? `http://localhost:${PORT}`).origin;

const protector = createProtector({
  issuer: GATEHOUSE_URL,
  rules: SEED_RULES, // the default, spelled out: /dashboard, /admin (ADMIN) and /api need a session
  // Pages without a session go to Gatehouse's sign-in page with this app's absolute URL as the
  // callbackUrl, so people come back here (Gatehouse lists APP_URL in TRUSTED_ORIGINS).
  appUrl: APP_URL,
});

const app = express();

// Everything passes through the guard; allowed requests carry req.gatehouse (null on public paths).
app.use(toNodeMiddleware(protector));

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) => `<!doctype html><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1>${body}`;

/** The user behind a request the guard let through on a protected path. */
function userOf(user: GatehouseUser | null | undefined): GatehouseUser {
  if (user === null || user === undefined) throw new Error('the guard let an anonymous request through');
  return user;
}

app.get('/', (_req, res) => {
  res.send(page('Home', '<p>Public. <a href="/dashboard">Dashboard</a> · <a href="/admin">Admin</a> · <a href="/api/me">/api/me</a></p>'));
});

app.get('/dashboard', (req, res) => {
  const user = userOf(req.gatehouse); // typed by gatehouse-protect/node: GatehouseUser | null | undefined
  res.send(page('Dashboard', `<p>Signed in as <code>${escapeHtml(user.userId)}</code> (roles: ${escapeHtml(user.roles.join(', ') || 'none')}).</p>`));
});

app.get('/admin', (req, res) => {
  const user = userOf(req.gatehouse);
  res.send(page('Admin', `<p>Admin area for <code>${escapeHtml(user.userId)}</code>.</p>`));
});

app.get('/api/me', (req, res) => {
  res.json(userOf(req.gatehouse));
});

const server = app.listen(PORT, HOST, (error?: Error) => {
  if (error) throw error;
  console.log(`Example app listening on ${APP_URL} (http://${HOST}:${PORT}), protected by Gatehouse at ${GATEHOUSE_URL}`);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
