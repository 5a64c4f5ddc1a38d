/**
 * Whether this instance should be sent traffic (`GET /api/health/ready`): storage answers in time,
 * every module's migrations are applied, the signing keys are loaded, and the instance is not
 * shutting down. Each check answers `ok` or why not, so an operator reads the cause in the 503.
 */
import type { Migration } from 'kysely/migration';
import type { Storage } from '../storage/database.ts';
import { pendingMigrations } from '../storage/migrations.ts';
import type { SigningKeys } from '../sessions/signing-keys.ts';

const CHECK_TIMEOUT_MS = 2_000;

export type CheckName = 'storage' | 'migrations' | 'signingKeys' | 'shutdown';
export type Checks = Record<CheckName, string>;

export interface Readiness {
  check(): Promise<{ isReady: boolean; checks: Checks }>;
  /** From now on the instance is not ready (its server is closing). */
  markShuttingDown(): void;
}

export function createReadiness(deps: { storage: Storage; keys: SigningKeys; migrations: Readonly<Record<string, Migration>> }): Readiness {
  let isShuttingDown = false;
  /** Migrations are never undone under a running instance: once current, current. */
  let areMigrationsCurrent = false;

  async function storageCheck(): Promise<string> {
    try {
      await withTimeout(deps.storage.ping(), CHECK_TIMEOUT_MS);
      return 'ok';
    } catch (error) {
      return error instanceof TimeoutError ? `not answering within ${CHECK_TIMEOUT_MS} ms` : 'unreachable';
    }
  }

  async function migrationsCheck(): Promise<string> {
    if (areMigrationsCurrent) return 'ok';
    try {
      const pending = await withTimeout(pendingMigrations(deps.storage.db, deps.migrations), CHECK_TIMEOUT_MS);
      if (pending.length === 0) {
        areMigrationsCurrent = true;
        return 'ok';
      }
      return `${pending.length} pending (first: ${pending[0]}); run gatehouse migrate`;
    } catch {
      return 'unknown: storage did not answer';
    }
  }

  function signingKeysCheck(): string {
    try {
      deps.keys.current();
      return 'ok';
    } catch {
      return 'not loaded';
    }
  }

  return {
    async check() {
      const [storage, migrations] = await Promise.all([storageCheck(), migrationsCheck()]);
      const checks: Checks = { storage, migrations, signingKeys: signingKeysCheck(), shutdown: isShuttingDown ? 'shutting down' : 'ok' };
      return { isReady: Object.values(checks).every((value) => value === 'ok'), checks };
    },
    markShuttingDown() {
      isShuttingDown = true;
    },
  };
}

class TimeoutError extends Error {}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
