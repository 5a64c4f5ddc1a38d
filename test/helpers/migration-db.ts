/**
 * A fresh database on `backend` with every migration applied but one, for a test of that
 * migration: `fn` gets the database (to write rows as they were before it), and everything is
 * closed and dropped after, whatever happens.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from './databases.ts';
import { testEnv } from './app.ts';
import { openStorage, type Db } from '../../src/storage/database.ts';
import { applyMigrations } from '../../src/storage/migrations.ts';
import { collectMigrations } from '../../src/module.ts';
import { loadConfig, MODULES } from '../../src/modules.ts';

export async function withDatabaseBefore(backend: Backend, migration: string, fn: (db: Db) => Promise<void>): Promise<void> {
  const database = await backend.create();
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-migration-'));
  const storage = openStorage(loadConfig({ DATA_DIR: dataDir, ...testEnv(database) }).database);
  try {
    await applyMigrations(storage.db, Object.fromEntries(Object.entries(collectMigrations(MODULES)).filter(([name]) => name !== migration)));
    await fn(storage.db);
  } finally {
    await storage.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
