/**
 * argon2id through @node-rs/argon2. Hashing runs on libuv's thread pool, off the event loop;
 * `BoundedConcurrency` caps how many 19 MiB hashes exist at once so a burst cannot exhaust memory.
 * Passwords are NFKC-normalised first (NIST SP 800-63B), so the same password typed on another
 * keyboard or OS still verifies.
 */
import { hash, verify, parseOptions, type Algorithm } from '@node-rs/argon2';
import { createHmac, randomBytes, type KeyObject } from 'node:crypto';
import type { Argon2Config } from './credentials.config.ts';
import { UnavailableError } from '../errors.ts';
import { BoundedConcurrency, CapacityExceededError } from '../lib/bounded-concurrency.ts';

const ARGON2ID = 2 as Algorithm;

/**
 * A kind of password hash another system made (bcrypt, PBKDF2…), which a module brings in the
 * `passwordHashSchemes` slot (module.ts) so that accounts imported with such hashes can sign in.
 * `verify` gets the password as typed (not normalised: the other system hashed it as typed), runs
 * in a hashing slot like argon2, must be constant-time where the algorithm allows, must refuse
 * (false) parameters beyond its work bounds, and never throws for a malformed hash. A hash it
 * verified is replaced by argon2id at that sign-in (`needsRehash` is true for every foreign hash).
 */
export interface PasswordHashScheme {
  /** Its name, for reports (`bcrypt`, `pbkdf2-sha256`). */
  readonly name: string;
  /** True when `passwordHash` is of this scheme (by its prefix). */
  recognises(passwordHash: string): boolean;
  verify(passwordHash: string, password: string): Promise<boolean>;
}

/**
 * A live old system that still knows passwords (lazy migration), which a module brings in the
 * `passwordAccountSources` slot (module.ts): at a password sign-in for an address Gatehouse has no
 * account for, after the throttle allowed the attempt, the credentials module asks each source in
 * turn; the first that vouches for the password has the account created here, with an argon2id
 * hash of the password just typed (audited `user.created`, `via` the source's name), and the
 * sign-in goes on as any other. Its answer is a value: null when the password is wrong, the source
 * knows no such address, or cannot be reached (never an exception).
 */
export interface PasswordAccountSource {
  /** Its name, in the audit detail `via`. */
  readonly name: string;
  verify(email: string, password: string): Promise<{ emailVerified: boolean } | null>;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Compares in constant time inside argon2; false for a malformed hash, never throws for one. */
  verify(passwordHash: string, password: string): Promise<boolean>;
  /**
   * Spends the same work as `verify` against a hash nobody's password matches. Used when there is
   * no user (or no password) so that an unknown address takes as long as a wrong password. The
   * dummy's parameters follow those of the stored hashes (see `useStoredParameters`), picked for
   * `address` by a keyed hash: an address always costs the same, and addresses without accounts
   * are spread over the parameter sets as accounts are, so a cost tells nothing about existence.
   */
  verifyDummy(password: string, address: string): Promise<void>;
  /** The encoded parameters (`$argon2id$v=19$m=…,t=…,p=…`) of the dummy `verifyDummy` uses for `address`. */
  dummyParametersFor(address: string): string;
  /**
   * How many stored hashes were made with each parameter set (hashes made before a change of
   * ARGON2_* keep theirs until their next sign-in): the dummy follows that mix. Sets that cannot
   * be parsed or lie outside the configurable bounds are ignored.
   */
  useStoredParameters(mix: ReadonlyArray<{ encoded: string; count: number }>): Promise<void>;
  /** True when the hash was made with other parameters (or another algorithm) than today's. */
  needsRehash(passwordHash: string): boolean;
  /** The hash queue now and since start, read-only (for metrics). */
  stats(): HashQueueStats;
}

export interface HashQueueStats {
  /** Hashes computing now, and the most at once (HASH_CONCURRENCY). */
  readonly running: number;
  readonly maxConcurrent: number;
  /** Hashes waiting for a slot now, and the most that may (HASH_QUEUE_MAX). */
  readonly queued: number;
  readonly maxQueued: number;
  /** Since start: hashes that got a slot, the seconds they waited for it in all, and those refused (queue full, or waited HASH_QUEUE_TIMEOUT_MS). */
  readonly started: number;
  readonly waitSecondsTotal: number;
  readonly refused: number;
}

export interface PasswordHasherOptions {
  argon2: Argon2Config;
  /** Keys the choice of a dummy per address (see `verifyDummy`); from AUTH_SECRET, so every instance chooses alike. */
  dummySelectionKey: KeyObject;
  maxConcurrentHashes: number;
  maxQueuedHashes: number;
  queueTimeoutMs: number;
  /** The foreign hash schemes the modules bring (see `PasswordHashScheme`); asked for every hash that is not argon2id. */
  schemes?: readonly PasswordHashScheme[];
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

  const counts = { started: 0, waitSecondsTotal: 0, refused: 0 };
  const schemes = options.schemes ?? [];

  async function withSlot<T>(task: () => Promise<T>): Promise<T> {
    const askedAt = performance.now();
    try {
      return await slots.run(() => {
        counts.started++;
        counts.waitSecondsTotal += (performance.now() - askedAt) / 1000;
        return task();
      });
    } catch (error) {
      if (error instanceof CapacityExceededError) {
        counts.refused++;
        throw new UnavailableError('password hashing capacity exceeded', { retryAfterSeconds: 1, cause: error });
      }
      throw error;
    }
  }

  const currentEncoded = encodeParameters(parameters);
  const dummies = new Map<string, string>([[currentEncoded, await hash(randomBytes(32), parameters)]]);
  /** Cumulative shares in [0, 1] of each parameter set, in a fixed order; the last ends at 1. */
  let mix: Array<{ encoded: string; upTo: number }> = [{ encoded: currentEncoded, upTo: 1 }];

  function dummyParametersFor(address: string): string {
    const digest = createHmac('sha256', options.dummySelectionKey).update(address).digest();
    const point = digest.readUIntBE(0, 6) / 2 ** 48;
    return (mix.find((entry) => point < entry.upTo) ?? mix.at(-1)!).encoded;
  }

  return {
    hash: (password) => withSlot(() => hash(password.normalize('NFKC'), parameters)),

    verify: (passwordHash, password) =>
      withSlot(async () => {
        try {
          const scheme = passwordHash.startsWith('$argon2id$') ? undefined : schemes.find((candidate) => candidate.recognises(passwordHash));
          if (scheme !== undefined) return await scheme.verify(passwordHash, password);
          return await verify(passwordHash, password.normalize('NFKC'));
        } catch {
          return false;
        }
      }),

    verifyDummy: (password, address) =>
      withSlot(async () => {
        const dummy = dummies.get(dummyParametersFor(address)) ?? dummies.get(currentEncoded)!;
        await verify(dummy, password.normalize('NFKC')).catch(() => false);
      }),

    dummyParametersFor,

    async useStoredParameters(stored) {
      const usable = stored.filter((entry) => entry.count > 0 && parseParameters(entry.encoded) !== null);
      for (const { encoded } of usable) {
        if (!dummies.has(encoded)) dummies.set(encoded, await hash(randomBytes(32), parseParameters(encoded)!));
      }
      const total = usable.reduce((sum, entry) => sum + entry.count, 0);
      if (total === 0) {
        mix = [{ encoded: currentEncoded, upTo: 1 }];
        return;
      }
      let upTo = 0;
      mix = [...usable]
        .sort((a, b) => (a.encoded < b.encoded ? -1 : 1))
        .map((entry) => ({ encoded: entry.encoded, upTo: (upTo += entry.count / total) }));
      mix.at(-1)!.upTo = 1;
    },

    stats: () => ({
      running: slots.running,
      maxConcurrent: options.maxConcurrentHashes,
      queued: slots.queued,
      maxQueued: options.maxQueuedHashes,
      ...counts,
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

interface Argon2Parameters {
  algorithm: Algorithm;
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

const ALGORITHMS: Record<string, Algorithm> = { argon2d: 0 as Algorithm, argon2i: 1 as Algorithm, argon2id: ARGON2ID };

/** The PHC prefix of a hash made with `p` (what every hash with these parameters starts with). */
function encodeParameters(p: Argon2Parameters): string {
  const name = Object.keys(ALGORITHMS).find((key) => ALGORITHMS[key] === p.algorithm)!;
  return `$${name}$v=19$m=${p.memoryCost},t=${p.timeCost},p=${p.parallelism}`;
}

/** The inverse of `encodeParameters`, within the bounds ARGON2_* accepts; null otherwise. */
function parseParameters(encoded: string): Argon2Parameters | null {
  const match = /^\$(argon2id|argon2i|argon2d)\$v=19\$m=(\d{1,7}),t=(\d{1,2}),p=(\d{1,2})$/.exec(encoded);
  if (match === null) return null;
  const [memoryCost, timeCost, parallelism] = [Number(match[2]), Number(match[3]), Number(match[4])];
  if (memoryCost < 1024 || memoryCost > 4 * 1024 * 1024 || timeCost < 1 || timeCost > 20 || parallelism < 1 || parallelism > 16) return null;
  return { algorithm: ALGORITHMS[match[1]!]!, memoryCost, timeCost, parallelism };
}
