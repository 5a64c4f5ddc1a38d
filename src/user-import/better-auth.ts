/**
 * `gatehouse import --from better-auth <database>`: reads a Better Auth database directly, SQLite
 * (`sqlite:<path>` or a path) or PostgreSQL (`postgres://…`), read-only: its `user` table, each
 * user's `account` rows (the `credential` one holds the password, the others are OAuth accounts)
 * and whether a `twoFactor` row exists (its secret is encrypted with the app's BETTER_AUTH_SECRET:
 * not importable; counted). Users are read in pages by id: constant memory.
 *
 * Better Auth's hash is `<salt>:<key>` in hex: scrypt(NFKC(password), salt as its hex string,
 * N=16384, r=16, p=1, 64 bytes), which is the generic `$scrypt$ln=14,r=16,p=1$…` here.
 */
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import type { Entry } from './readers.ts';
import type { ForeignUser } from './import-record.ts';
import { toForeignIdentities } from './identities.ts';

const PAGE = 500;

interface UserRow {
  id: string;
  email: unknown;
  name: unknown;
  emailVerified: unknown;
  createdAt: unknown;
  role?: unknown;
  banned?: unknown;
}
interface AccountRow {
  userId: string;
  providerId: string;
  accountId: string;
  password: string | null;
}

/** Pages of users, each with its accounts and whether it has a two-factor row. */
type Page = (afterId: string) => Promise<Array<UserRow & { accounts: AccountRow[]; twoFactor: boolean }>>;

export async function* readBetterAuth(location: string): AsyncGenerator<Entry> {
  const { page, close } = location.startsWith('postgres://') || location.startsWith('postgresql://') ? await postgresPages(location) : sqlitePages(location.replace(/^sqlite:/, ''));
  try {
    let after = '';
    let line = 0;
    for (;;) {
      const users = await page(after);
      if (users.length === 0) return;
      for (const user of users) yield { line: ++line, value: user };
      after = users.at(-1)!.id;
    }
  } finally {
    await close();
  }
}

function sqlitePages(path: string): { page: Page; close(): Promise<void> } {
  const db = new DatabaseSync(path, { readOnly: true });
  const hasTwoFactor = db.prepare(`select 1 from sqlite_master where type = 'table' and name = 'twoFactor'`).get() !== undefined;
  const users = db.prepare('select * from "user" where id > ? order by id limit ?');
  return {
    page: async (afterId) => {
      const rows = users.all(afterId, PAGE) as unknown as UserRow[];
      if (rows.length === 0) return [];
      const ids = rows.map((row) => row.id);
      const marks = ids.map(() => '?').join(',');
      const accounts = db.prepare(`select "userId", "providerId", "accountId", password from account where "userId" in (${marks})`).all(...ids) as unknown as AccountRow[];
      const twoFactor = hasTwoFactor ? new Set((db.prepare(`select "userId" from "twoFactor" where "userId" in (${marks})`).all(...ids) as Array<{ userId: string }>).map((row) => row.userId)) : new Set<string>();
      return withAccounts(rows, accounts, twoFactor);
    },
    close: async () => db.close(),
  };
}

async function postgresPages(url: string): Promise<{ page: Page; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('set default_transaction_read_only = on');
  const hasTwoFactor = (await client.query(`select to_regclass('"twoFactor"') is not null as present`)).rows[0]?.present === true;
  return {
    page: async (afterId) => {
      const rows = (await client.query('select * from "user" where id > $1 order by id limit $2', [afterId, PAGE])).rows as UserRow[];
      if (rows.length === 0) return [];
      const ids = rows.map((row) => row.id);
      const accounts = (await client.query('select "userId", "providerId", "accountId", password from account where "userId" = any($1)', [ids])).rows as AccountRow[];
      const twoFactor = hasTwoFactor ? new Set((await client.query('select "userId" from "twoFactor" where "userId" = any($1)', [ids])).rows.map((row: { userId: string }) => row.userId)) : new Set<string>();
      return withAccounts(rows, accounts, twoFactor);
    },
    close: () => client.end(),
  };
}

function withAccounts(users: UserRow[], accounts: AccountRow[], twoFactor: Set<string>) {
  const byUser = new Map<string, AccountRow[]>();
  for (const account of accounts) (byUser.get(account.userId) ?? byUser.set(account.userId, []).get(account.userId)!).push(account);
  return users.map((user) => ({ ...user, accounts: byUser.get(user.id) ?? [], twoFactor: twoFactor.has(user.id) }));
}

const base64 = (buffer: Buffer) => buffer.toString('base64').replace(/=+$/, '');

/** One Better Auth user as a `ForeignUser`. */
export function betterAuthUser(value: Record<string, unknown>): ForeignUser {
  const accounts = (value['accounts'] ?? []) as AccountRow[];
  const password = accounts.find((account) => account.providerId === 'credential')?.password ?? null;
  let passwordHash: string | null = null;
  if (password !== null) {
    const match = /^([0-9a-f]{2,256}):([0-9a-f]{2,512})$/i.exec(password);
    passwordHash = match === null ? '!' : `$scrypt$ln=14,r=16,p=1$${base64(Buffer.from(match[1]!, 'utf8'))}$${base64(Buffer.from(match[2]!, 'hex'))}`;
  }
  const createdAt = value['createdAt'];
  const role = value['role'];
  return {
    email: value['email'],
    name: value['name'],
    emailVerified: value['emailVerified'],
    createdAt: createdAt instanceof Date ? createdAt.getTime() : createdAt,
    disabled: value['banned'] === true || value['banned'] === 1,
    passwordHash,
    // The admin plugin's `role`: one or several, comma-separated.
    roles: typeof role === 'string' && role !== '' ? role.split(',').map((part) => part.trim()) : undefined,
    identities: toForeignIdentities(accounts, (account) => ({ provider: account['providerId'] === 'credential' ? undefined : account['providerId'], subject: account['accountId'] })),
    totpNotImportable: value['twoFactor'] === true,
  };
}
