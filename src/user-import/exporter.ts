/**
 * `gatehouse export users`: the whole user base in the generic format (JSON Lines, one user a line),
 * which `gatehouse import --from json` reads back. Password hashes go as stored (argon2id, or a
 * foreign hash not yet replaced), so the people keep their passwords; linked identities go as
 * provider and subject, memberships as organization slug and role (the organizations themselves are
 * not exported: create them on the new instance first). TOTP secrets go only when asked (`totpSecrets`), opened from their boxes:
 * unlike a hash, a secret in the file is usable as it is. Read by keyset pages: constant memory
 * whatever the number of users. The file is as sensitive as a backup.
 */
import type { KeyObject } from 'node:crypto';
import { once } from 'node:events';
import type { Db } from '../storage/database.ts';
import type { Services } from '../services.ts';
import { deriveSecretKey } from '../lib/derive-key.ts';
import { openSecret } from '../mfa/secret-box.ts';
import { findFactorsOf, findMembershipsOf, findUsersAfter } from './import.store.ts';
import { TOTP_KEY_PURPOSE } from './importer.ts';

const PAGE = 1000;

export interface ExportDeps {
  db: Db;
  /** The mfa module's sealing key, when TOTP secrets are to be exported. */
  totpKey: KeyObject | null;
}

export function exportDeps(services: Services, options: { totpSecrets: boolean }): ExportDeps {
  return { db: services.storage.db, totpKey: options.totpSecrets ? deriveSecretKey(services.config.authSecret, TOTP_KEY_PURPOSE) : null };
}

/** Writes every user; the number written, and how many had a TOTP secret left out. */
export async function exportUsers(deps: ExportDeps, output: NodeJS.WritableStream): Promise<{ written: number; totpLeftOut: number }> {
  let after = '';
  let written = 0;
  let totpLeftOut = 0;
  for (;;) {
    const users = await findUsersAfter(deps.db, after, PAGE);
    if (users.length === 0) return { written, totpLeftOut };
    const ids = users.map((user) => user.id);
    const [factors, memberships] = await Promise.all([findFactorsOf(deps.db, ids), findMembershipsOf(deps.db, ids)]);
    for (const user of users) {
      const box = factors.totp.get(user.id);
      if (box !== undefined && deps.totpKey === null) totpLeftOut++;
      const line = JSON.stringify({
        email: user.email,
        name: user.name,
        emailVerified: user.email_verified_at !== null,
        createdAt: new Date(user.created_at).toISOString(),
        disabled: user.disabled_at !== null,
        roles: user.roles,
        passwordHash: user.password_hash,
        identities: factors.identities.get(user.id) ?? [],
        organizations: memberships.get(user.id) ?? [],
        ...(box !== undefined && deps.totpKey !== null && { totpSecret: openSecret(box, deps.totpKey, user.id) }),
      });
      if (!output.write(`${line}\n`)) await once(output, 'drain');
      written++;
    }
    after = users.at(-1)!.id;
  }
}
