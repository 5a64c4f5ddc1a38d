/**
 * `gatehouse export users`: the whole user base in the generic format (JSON Lines, one user a line),
 * which `gatehouse import --from json` reads back. Password hashes go as stored (argon2id, or a
 * foreign hash not yet replaced), so the people keep their passwords; the file is as sensitive as a
 * backup. Read by keyset pages: constant memory whatever the number of users.
 */
import { once } from 'node:events';
import type { Db } from '../storage/database.ts';
import { findUsersAfter } from './import.store.ts';

const PAGE = 1000;

export async function exportUsers(db: Db, output: NodeJS.WritableStream): Promise<number> {
  let after = '';
  let written = 0;
  for (;;) {
    const users = await findUsersAfter(db, after, PAGE);
    if (users.length === 0) return written;
    for (const user of users) {
      const line = JSON.stringify({
        email: user.email,
        name: user.name,
        emailVerified: user.email_verified_at !== null,
        createdAt: new Date(user.created_at).toISOString(),
        disabled: user.disabled_at !== null,
        roles: user.roles,
        passwordHash: user.password_hash,
      });
      if (!output.write(`${line}\n`)) await once(output, 'drain');
      written++;
    }
    after = users.at(-1)!.id;
  }
}
