/**
 * argon2id through @node-rs/argon2. Hashing runs on libuv's thread pool, off the event loop;
 * `BoundedConcurrency` caps how many 19 MiB hashes exist at once so a burst cannot exhaust memory.
 * Passwords are NFKC-normalised first (NIST SP 800-63B), so the same password typed on another
 * keyboard or OS still verifies.
 */
import { hash, verify, parseOptions, type Algorithm } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import type { Argon2Config } from '../config.ts';
import { UnavailableError } from '../errors.ts';
import { BoundedConcurrency, CapacityExceededError } from '../lib/bounded-concurrency.ts';

const ARGON2ID = 2 as Algorithm;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Compares in constant time inside argon2; false for a malformed hash, never throws for one. */
  verify(passwordHash: string, password: string): Promise<boolean>;
  /**
   * Spends the same work as `verify` against a hash nobody's password matches. Used when there is
   * no user (or no password) so that an unknown address takes as long as a wrong password.
   */
  verifyDummy(password: string): Promise<void>;
  /** True when the hash was made with other parameters (or another algorithm) than today's. */
  needsRehash(passwordHash: string): boolean;
}

export interface PasswordHasherOptions {
  argon2: Argon2Config;
  maxConcurrentHashes: number;
  maxQueuedHashes: number;
  queueTimeoutMs: number;
}

export async function createPasswordHasher(options: PasswordHasherOptions): Promise<PasswordHasher> {
  const parameters = {
    algorithm: ARGON2ID,
    memoryCost: options.argon2.memoryKib,
    timeCost: options.argon2.iterations,
    parallelism: options.argon2.parallelism,
  };
  const slots = new BoundedConcurrency({
    maxConcurrent: options.maxConcurrentHashes,
    maxQueued: options.maxQueuedHashes,
    queueTimeoutMs: options.queueTimeoutMs,
  });

  async function withSlot<T>(task: () => Promise<T>): Promise<T> {
    try {
      return await slots.run(task);
    } catch (error) {
      if (error instanceof CapacityExceededError) {
        throw new UnavailableError('password hashing capacity exceeded', { retryAfterSeconds: 1, cause: error });
      }
      throw error;
    }
  }

  const dummyHash = await hash(randomBytes(32), parameters);

  return {
    hash: (password) => withSlot(() => hash(password.normalize('NFKC'), parameters)),

    verify: (passwordHash, password) =>
      withSlot(async () => {
        try {
          return await verify(passwordHash, password.normalize('NFKC'));
        } catch {
          return false;
        }
      }),

    verifyDummy: (password) =>
      withSlot(async () => {
        await verify(dummyHash, password.normalize('NFKC')).catch(() => false);
      }),

    needsRehash(passwordHash) {
      try {
        const current = parseOptions(passwordHash);
        return (
          current.algorithm !== ARGON2ID ||
          current.memoryCost !== parameters.memoryCost ||
          current.timeCost !== parameters.timeCost ||
          current.parallelism !== parameters.parallelism
        );
      } catch {
        return true;
      }
    },
  };
}
