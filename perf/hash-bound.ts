/**
 * The hash-bound limit: argon2id verifies per second with the server's own parameters and its own
 * cap on hashes in flight. A sign-in costs one verify, so no server on the same CPUs can sign in
 * faster than this; the sign-in scenarios (scenarios.ts) divide their measured rate by it.
 *
 * Run as a child process by the sign-in scenarios, pinned to the server's CPU(s) and given the server's
 * environment, so that it measures the same cores with the same configuration. Usage:
 *   node perf/hash-bound.ts <warm-up seconds> <measured seconds> [single-verify seconds, default 1; 0 skips]
 * Prints one JSON line (`HashBound`) on standard output.
 */
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import { availableParallelism } from 'node:os';
import { loadConfig } from '../src/modules.ts';

// `Algorithm` is a const enum, which erasable syntax cannot reference; the server does the same.
const ARGON2ID = 2 as Algorithm;

export interface HashBound {
  verifiesPerSecond: number;
  verifies: number;
  seconds: number;
  /** Verifies kept in flight: the server's `maxConcurrentHashes`. */
  concurrency: number;
  argon2: { memoryKib: number; iterations: number; parallelism: number };
  /** `availableParallelism()` in this (pinned) process, which sets the server's default concurrency. */
  availableParallelism: number;
  /** One verify alone on an idle core: the median of back-to-back single verifies ("one hash"); NaN when not measured. */
  singleVerifyMs: number;
}

async function measureHashBound(warmupSeconds: number, seconds: number, singleSeconds: number): Promise<HashBound> {
  // Loaded here, inside the pinned process, from the server's environment: the default
  // HASH_CONCURRENCY follows availableParallelism(), which follows the CPU affinity.
  const config = loadConfig(process.env);
  const { argon2, maxConcurrentHashes: concurrency } = config.passwords;
  const password = config.admin?.password ?? 'a password that is long enough';
  const passwordHash = await hash(password, {
    algorithm: ARGON2ID,
    memoryCost: argon2.memoryKib,
    timeCost: argon2.iterations,
    parallelism: argon2.parallelism,
  });

  // The warm-up lets the thread pool start and the allocator settle before anything is counted.
  await verifyFor(passwordHash, password, concurrency, warmupSeconds);
  const { verifies, elapsedSeconds } = await verifyFor(passwordHash, password, concurrency, seconds);
  const singleVerifyMs = singleSeconds > 0 ? await medianSingleVerifyMs(passwordHash, password, singleSeconds) : Number.NaN;
  return {
    verifiesPerSecond: verifies / elapsedSeconds,
    verifies,
    seconds: elapsedSeconds,
    concurrency,
    argon2: { ...argon2 },
    availableParallelism: availableParallelism(),
    singleVerifyMs,
  };
}

/** Verifies one at a time for `seconds`; the median wall time of one. */
async function medianSingleVerifyMs(passwordHash: string, password: string, seconds: number): Promise<number> {
  const times: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline || times.length < 5) {
    const start = performance.now();
    await verify(passwordHash, password);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * Keeps `concurrency` verifies in flight until `seconds` have passed. The elapsed time includes
 * the verifies that finish after the deadline, so verifies / elapsed is not inflated.
 */
async function verifyFor(
  passwordHash: string,
  password: string,
  concurrency: number,
  seconds: number,
): Promise<{ verifies: number; elapsedSeconds: number }> {
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let verifies = 0;
  const lane = async (): Promise<void> => {
    while (performance.now() < deadline) {
      if (!(await verify(passwordHash, password))) throw new Error('argon2 verify returned false for the right password');
      verifies++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { verifies, elapsedSeconds: (performance.now() - start) / 1000 };
}

function secondsArgument(value: string | undefined, name: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`hash-bound.ts: ${name} must be a positive number of seconds (got "${value}")`);
  return seconds;
}

if (import.meta.main) {
  const [warmup, measured, single] = process.argv.slice(2);
  const singleSeconds = single === undefined ? 1 : single === '0' ? 0 : secondsArgument(single, 'single-verify duration');
  const result = await measureHashBound(secondsArgument(warmup, 'warm-up'), secondsArgument(measured, 'duration'), singleSeconds);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
