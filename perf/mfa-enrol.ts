/**
 * Turns on an authenticator app (TOTP) for the first MFA_USERS users perf/seed.ts made
 * (`seed-<i>@seed.example`), through the MFA service itself: `beginTotpSetup`, then `enableTotp`
 * with a code from the new secret, as test/helpers/totp.ts `enrolTotp` does, on the server's own
 * wiring and environment (src/cli/context.ts, as the CLI runs it). Setup, sealing, recovery codes,
 * audit and the notice mail are the service's; only HTTP is left out.
 *
 * Why not over HTTP: the second-factor scenario (perf/mfa.ts) needs thousands of enrolled users,
 * because a TOTP code works once (each user can finish at most two sign-ins in a 30-second step),
 * and enrolling one over HTTP costs a sign-in and two requests of the server's core.
 *
 * Each user is enabled with the code of the step before the current one, so the current step and
 * the next are left for sign-ins. Writes one JSON line per user (`EnrolledUser`) to MFA_USERS_FILE.
 *
 *   DATABASE_URL=… AUTH_SECRET=… MFA_USERS=3000 MFA_USERS_FILE=/tmp/x/users.jsonl node perf/mfa-enrol.ts
 */
import { writeFileSync } from 'node:fs';
import { withServices } from '../src/cli/context.ts';
import { SYSTEM_SOURCE } from '../src/audit/audit.service.ts';
import { totpCode } from '../test/helpers/totp.ts';
import { seededEmail } from './seed.ts';

export interface EnrolledUser {
  email: string;
  /** Base32, as the authenticator app holds it. */
  secret: string;
  /** The TOTP step the enabling code used up: sign-ins may use later steps only. */
  lastUsedStep: number;
}

async function enrol(count: number): Promise<EnrolledUser[]> {
  // Standard output is left alone: the service's logs go to standard error, as the CLI's do.
  const io = { stdin: process.stdin, stdout: process.stderr, stderr: process.stderr };
  return withServices(io, async (services) => {
    const users: EnrolledUser[] = [];
    for (let i = 0; i < count; i++) {
      const email = seededEmail(i);
      const credentials = await services.users.findCredentialsByEmail(email);
      const user = credentials === null ? null : await services.users.findUserById(credentials.id);
      if (user === null) throw new Error(`${email} is not in the store: seed it first (perf/seed.ts)`);
      const setup = await services.mfa.beginTotpSetup(user);
      if (!setup.ok) throw new Error(`${email}: TOTP setup refused (${setup.reason})`);
      const source = { ...SYSTEM_SOURCE, actorUserId: user.id };
      let enabled = await services.mfa.enableTotp(user, totpCode(setup.secret, Date.now(), -1), source);
      // The step turned between the code and its check (the code fell out of the window): once more.
      if (!enabled.ok && enabled.reason === 'INVALID_CODE') enabled = await services.mfa.enableTotp(user, totpCode(setup.secret, Date.now(), -1), source);
      if (!enabled.ok) throw new Error(`${email}: TOTP not enabled (${enabled.reason})`);
      // The step the service recorded: two adjacent steps may share a code, so not assumed.
      const row = await services.storage.db.selectFrom('mfa_totp').select('last_used_step').where('user_id', '=', user.id).executeTakeFirstOrThrow();
      users.push({ email, secret: setup.secret, lastUsedStep: Number(row.last_used_step) });
    }
    return users;
  });
}

if (import.meta.main) {
  const count = Number(process.env.MFA_USERS);
  const file = process.env.MFA_USERS_FILE;
  if (!Number.isInteger(count) || count < 1 || file === undefined) throw new Error('MFA_USERS (a positive integer) and MFA_USERS_FILE are required');
  const enrolled = await enrol(count);
  writeFileSync(file, `${enrolled.map((user) => JSON.stringify(user)).join('\n')}\n`);
}
