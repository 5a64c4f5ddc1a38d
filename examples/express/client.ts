/**
 * A script calling the example's API as a user, with `gatehouse-client`: sign in to Gatehouse,
 * then `GET /api/me` on the app with the session's access token (`Authorization: Bearer`).
 *
 *   GATEHOUSE_URL=http://localhost:3000 APP_URL=http://localhost:4000 \
 *   EMAIL=ada@example.com PASSWORD='…' node dist/client.js
 *
 * Prints one JSON line: `{ "status": 200, "me": { "userId": … } }`.
 */
import { createGatehouseClient } from 'gatehouse-client';

const GATEHOUSE_URL = process.env.GATEHOUSE_URL ?? 'http://localhost:3000';
const APP_URL = process.env.APP_URL ?? 'http://localhost:4000';
const { EMAIL, PASSWORD } = process.env;
if (EMAIL === undefined || PASSWORD === undefined) {
  console.error('Set EMAIL and PASSWORD.');
  process.exit(2);
}

const auth = createGatehouseClient({ baseUrl: GATEHOUSE_URL });
const result = await auth.signIn({ email: EMAIL, password: PASSWORD });
if (result.status !== 'signed-in') {
  console.error(result.status === 'error' ? `sign-in failed: ${result.error.code}` : 'this account needs a second factor');
  process.exit(1);
}

const response = await auth.fetch(new URL('/api/me', APP_URL));
const me: unknown = await response.json();
console.log(JSON.stringify({ status: response.status, signedInAs: result.session.user.email, me }));
await auth.signOut();
