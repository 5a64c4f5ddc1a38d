/** The credentials section of the configuration: the password policy and hashing, the sign-in throttle, the bootstrap ADMIN. */
import { availableParallelism } from 'node:os';
import type { ConfigSection } from '../config.ts';

export interface Argon2Config {
  readonly memoryKib: number;
  readonly iterations: number;
  readonly parallelism: number;
}

declare module '../config.ts' {
  interface Config {
    readonly passwords: {
      readonly minLength: number;
      readonly maxLength: number;
      /** zxcvbn score (0-4) a new password must reach. */
      readonly minScore: number;
      readonly argon2: Argon2Config;
      /** Hashes computed at once; the rest wait in a bounded queue. */
      readonly maxConcurrentHashes: number;
      readonly maxQueuedHashes: number;
      readonly queueTimeoutMs: number;
      /** Nice value of the thread pool that hashes run on (Linux): above 0, the event loop comes first. */
      readonly hashThreadNice: number;
    };
    readonly admin: { readonly email: string; readonly password: string; readonly name: string } | null;
    /** Per account (normalised address): consecutive failed sign-ins. */
    readonly signinThrottle: {
      /** Failures allowed before each further attempt must wait (1 s, doubling, up to `maxDelaySeconds`). */
      readonly delayAfterFailures: number;
      readonly maxDelaySeconds: number;
      /** At this many consecutive failures the password is locked until a reset (SP 800-63B-4: at most 100). */
      readonly lockAfterFailures: number;
    };
  }
}

/** The credentials module's section: `passwords`, `admin` and `signinThrottle`. */
export const credentialsConfigSection: ConfigSection = (read, _basis, problems) => {
  // 8 is SP 800-63B-4's floor with a second factor; it asks 15 of password-only deployments.
  const minLength = read.integer('PASSWORD_MIN_LENGTH', 8, { min: 8, max: 128 });
  const minScore = read.integer('PASSWORD_MIN_SCORE', 3, { min: 0, max: 4 });
  const maxLength = read.integer('PASSWORD_MAX_LENGTH', 256, { min: 128, max: 4096 });
  const argon2: Argon2Config = {
    memoryKib: read.integer('ARGON2_MEMORY_KIB', 19_456, { min: 1024, max: 4 * 1024 * 1024 }),
    iterations: read.integer('ARGON2_ITERATIONS', 2, { min: 1, max: 20 }),
    parallelism: read.integer('ARGON2_PARALLELISM', 1, { min: 1, max: 16 }),
  };
  const maxConcurrentHashes = read.integer('HASH_CONCURRENCY', Math.max(2, availableParallelism()), { min: 1, max: 256 });
  const maxQueuedHashes = read.integer('HASH_QUEUE_MAX', 512, { min: 0, max: 100_000 });
  const queueTimeoutMs = read.integer('HASH_QUEUE_TIMEOUT_MS', 5_000, { min: 1, max: 60_000 });
  const hashThreadNice = read.integer('HASH_THREAD_NICE', 10, { min: 0, max: 19 });

  const adminEmail = read.string('ADMIN_EMAIL');
  const adminPassword = read.string('ADMIN_PASSWORD');
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    problems.push('ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  }

  return {
    passwords: { minLength, maxLength, minScore, argon2, maxConcurrentHashes, maxQueuedHashes, queueTimeoutMs, hashThreadNice },
    admin:
      adminEmail !== undefined && adminPassword !== undefined
        ? { email: adminEmail, password: adminPassword, name: read.string('ADMIN_NAME') ?? 'Administrator' }
        : null,
    signinThrottle: {
      delayAfterFailures: read.integer('SIGNIN_DELAY_AFTER_FAILURES', 5, { min: 1, max: 100 }),
      maxDelaySeconds: read.duration('SIGNIN_MAX_DELAY', 15 * 60),
      lockAfterFailures: read.integer('SIGNIN_LOCK_AFTER_FAILURES', 100, { min: 10, max: 100 }),
    },
  };
};
