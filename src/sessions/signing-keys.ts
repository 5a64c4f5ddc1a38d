/**
 * Token signing keys: an Ed25519 pair (our own tokens, and the OpenID Provider's by default) and an
 * RSA pair (RS256, for relying parties that cannot verify EdDSA), generated on first start and kept
 * in storage with the private half encrypted (JWE `dir` + A256GCM, bound to its `kid`) under a key
 * derived from AUTH_SECRET with HKDF. The public halves are served as the JWKS. Both algorithms
 * rotate together, by the same rules.
 *
 * Rotation (`gatehouse keys rotate`) is staged so that no instance ever meets a token signed with a
 * key it has not loaded: the new key is published at once but signs nothing until
 * `KEY_ACTIVATION_DELAY_MS` has passed, by which time every instance has reloaded (each reloads
 * every `KEY_RELOAD_INTERVAL_MS`); the old key signs until then, and stays published until every
 * token it signed has expired.
 */
import {
  CompactEncrypt,
  calculateJwkThumbprint,
  compactDecrypt,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';
import { performance } from 'node:perf_hooks';
import type { Db } from '../storage/database.ts';
import type { SigningKeyRow } from '../storage/schema.ts';
import { isoTime, type Clock } from '../lib/clock.ts';
import { deriveKey } from '../lib/derive-key.ts';
import { findPublishableKeys, insertSigningKey, listSigningKeys, retireKeysInService } from './signing-key.store.ts';

export const SIGNING_ALGORITHM = 'EdDSA';
/** Every algorithm we keep a key for; the first is SIGNING_ALGORITHM. */
export const KEY_ALGORITHMS = ['EdDSA', 'RS256'] as const;
export type KeyAlgorithm = (typeof KEY_ALGORITHMS)[number];
/** How often every instance re-reads the keys from storage. */
export const KEY_RELOAD_INTERVAL_MS = 60_000;
/** A rotated-in key signs only after this long: two reload intervals. */
export const KEY_ACTIVATION_DELAY_MS = 2 * KEY_RELOAD_INTERVAL_MS;
const KEY_ENCRYPTION_INFO = 'gatehouse signing-key encryption v1';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

export interface PublicJwk extends JWK {
  kid: string;
  alg: string;
  use: 'sig';
}

export interface SigningKeys {
  /** The key new tokens are signed with. */
  current(): SigningKey;
  /** When the current key was made (epoch ms): how long ago the last rotation was (metrics). */
  currentCreatedAt(): number;
  /**
   * Every published key with its private half, for the OpenID Provider: those that sign now first
   * (one per algorithm: a provider that takes the first key of an algorithm signs with them), then
   * the others (a key published ahead of its activation, or one retiring), which it only verifies
   * with. Never served anywhere.
   */
  privateJwks(): readonly JWK[];
  /** The kids of the keys that sign now, one per algorithm. */
  signingKids(): readonly string[];
  /** Changes whenever the published keys or the signing ones change (to rebuild what holds them). */
  version(): string;
  /** Public keys for verification: the current one and those retired recently. */
  publicJwks(): readonly PublicJwk[];
  /** The public key with this `kid`, if it is one of ours; never fetched from anywhere else. */
  verificationKey(kid: string): CryptoKey | undefined;
  /** Re-reads keys from storage (other instances may have added or rotated keys). */
  reload(): Promise<void>;
  /**
   * Reloads when a token names a `kid` we do not know, at most once per `minIntervalMs`, so a
   * stream of tokens with made-up kids costs one storage read per interval, not one per token.
   */
  reloadForUnknownKid(): Promise<void>;
  /** Starts pulling the keys again now and then (every instance sees a rotation); a served app does, the CLI does not. */
  start(): void;
  /** Stops the periodic reload. */
  stop(): void;
}

interface KeyState {
  current: SigningKey;
  currentCreatedAt: number;
  jwks: PublicJwk[];
  byKid: Map<string, CryptoKey>;
  privateJwks: JWK[];
  signingKids: string[];
  /** The algorithms with a key in service. */
  algorithms: Set<string>;
  version: string;
}

export function deriveKeyEncryptionKey(authSecret: string): Uint8Array {
  return new Uint8Array(deriveKey(authSecret, KEY_ENCRYPTION_INFO));
}

/**
 * Loads the signing keys, generating the first pair when storage has none.
 * `retentionMs` is how long a retired key stays published: at least the longest token lifetime.
 */
export async function loadSigningKeys(deps: {
  db: Db;
  authSecret: string;
  clock: Clock;
  retentionMs: number;
  minReloadIntervalMs?: number;
  /** 0: no periodic reload (the CLI, tests that reload by hand). */
  reloadIntervalMs?: number;
}): Promise<SigningKeys> {
  const { db, clock, retentionMs } = deps;
  const minReloadIntervalMs = deps.minReloadIntervalMs ?? 30_000;
  let lastReloadAt = Number.NEGATIVE_INFINITY;
  let reloading: Promise<void> | undefined;
  const encryptionKey = deriveKeyEncryptionKey(deps.authSecret);
  let state = await readKeys();
  // The first start, or the first after an upgrade that brought another algorithm: a key for
  // every algorithm that has none in service.
  const missing = state === null ? [...KEY_ALGORITHMS] : KEY_ALGORITHMS.filter((algorithm) => !state!.algorithms.has(algorithm));
  if (missing.length > 0) {
    for (const algorithm of missing) await addSigningKey({ db, authSecret: deps.authSecret, clock, algorithm });
    state = await readKeys();
  }

  async function readKeys(): Promise<KeyState | null> {
    const now = clock();
    const rows = await findPublishableKeys(db, now - retentionMs);
    const active = chooseSigningKey(rows.filter((row) => row.algorithm === SIGNING_ALGORITHM), now);
    if (active === undefined) return null;
    const signing = new Set(KEY_ALGORITHMS.map((algorithm) => chooseSigningKey(rows.filter((row) => row.algorithm === algorithm), now)?.kid));
    // Our own tokens' algorithm first, then newest first: what a reader takes for "the" key is ours.
    const jwks = rows.map((row) => JSON.parse(row.public_jwk) as PublicJwk).sort((a, b) => Number(b.alg === SIGNING_ALGORITHM) - Number(a.alg === SIGNING_ALGORITHM));
    const byKid = new Map<string, CryptoKey>();
    for (const jwk of jwks) byKid.set(jwk.kid, (await importJWK(jwk, jwk.alg)) as CryptoKey);
    const privateJwks: JWK[] = [];
    for (const row of rows) {
      const jwk = await decryptPrivateJwk(row);
      privateJwks.push({ ...jwk, kid: row.kid, alg: row.algorithm, use: 'sig' });
    }
    // Signing keys first: a provider that picks the first key of an algorithm picks them.
    privateJwks.sort((a, b) => Number(signing.has(b.kid)) - Number(signing.has(a.kid)));
    const privateKey = (await importJWK(privateJwks.find((jwk) => jwk.kid === active.kid)!, active.algorithm)) as CryptoKey;
    return {
      current: { kid: active.kid, privateKey },
      currentCreatedAt: active.created_at,
      jwks,
      byKid,
      privateJwks,
      signingKids: [...signing].filter((kid): kid is string => kid !== undefined),
      algorithms: new Set(rows.filter((row) => row.retired_at === null || row.retired_at > now).map((row) => row.algorithm)),
      version: `${[...signing].join(',')}|${jwks.map((jwk) => jwk.kid).join(',')}`,
    };
  }

  async function decryptPrivateJwk(row: SigningKeyRow): Promise<JWK> {
    const { plaintext, protectedHeader } = await compactDecrypt(row.private_jwk_encrypted, encryptionKey).catch((error: unknown) => {
      throw new Error(`Cannot decrypt signing key ${row.kid}: was AUTH_SECRET changed?`, { cause: error });
    });
    if (protectedHeader.kid !== row.kid) throw new Error(`Signing key ${row.kid} is bound to another kid`);
    return JSON.parse(new TextDecoder().decode(plaintext)) as JWK;
  }

  async function reload(): Promise<void> {
    state = (await readKeys()) ?? state;
  }

  const reloadIntervalMs = deps.reloadIntervalMs ?? KEY_RELOAD_INTERVAL_MS;
  let timer: NodeJS.Timeout | undefined;

  return {
    current: () => state!.current,
    currentCreatedAt: () => state!.currentCreatedAt,
    publicJwks: () => state!.jwks,
    privateJwks: () => state!.privateJwks,
    signingKids: () => state!.signingKids,
    version: () => state!.version,
    verificationKey: (kid) => state!.byKid.get(kid),
    reload,
    reloadForUnknownKid() {
      if (reloading !== undefined) return reloading;
      // Only the reloads an unknown kid caused count here: a periodic one just before a key was
      // added (another instance's rotation, or a clock ahead of ours) must not make its tokens wait.
      if (performance.now() - lastReloadAt < minReloadIntervalMs) return Promise.resolve();
      lastReloadAt = performance.now();
      const pending = reload().finally(() => {
        reloading = undefined;
      });
      reloading = pending;
      return pending;
    },
    start() {
      if (timer !== undefined || reloadIntervalMs <= 0) return;
      timer = setInterval(() => {
        // A failed read keeps the keys we have; the next interval tries again.
        reload().catch(() => {});
      }, reloadIntervalMs).unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}

/**
 * The key to sign with: the newest one still in service (not retired, or retiring later) that has
 * been published for the activation delay; while none has (the first start, or a rotation in
 * progress), the oldest one in service, which every instance already knows.
 */
function chooseSigningKey<T extends { created_at: number; retired_at: number | null }>(rows: readonly T[], now: number): T | undefined {
  const inService = rows.filter((row) => row.retired_at === null || row.retired_at > now).sort((a, b) => b.created_at - a.created_at);
  return inService.find((row) => row.created_at <= now - KEY_ACTIVATION_DELAY_MS) ?? inService.at(-1);
}

/**
 * Rotates: a new key, published now and signing after `KEY_ACTIVATION_DELAY_MS`; the keys in
 * service retire at that moment (and stay published while their tokens live). Returns the new kid
 * and when it starts signing.
 */
export async function rotateSigningKey(deps: { db: Db; authSecret: string; clock: Clock }): Promise<{ kid: string; activeFrom: number; kids: Record<KeyAlgorithm, string> }> {
  const now = deps.clock();
  const activeFrom = now + KEY_ACTIVATION_DELAY_MS;
  const encryptionKey = deriveKeyEncryptionKey(deps.authSecret);
  const rows = await Promise.all(KEY_ALGORITHMS.map((algorithm) => createEncryptedKeyPair(encryptionKey, now, algorithm)));
  await deps.db.transaction().execute(async (trx) => {
    await retireKeysInService(trx, activeFrom);
    for (const row of rows) await insertSigningKey(trx, row);
  });
  const kids = Object.fromEntries(rows.map((row) => [row.algorithm, row.kid])) as Record<KeyAlgorithm, string>;
  return { kid: kids[SIGNING_ALGORITHM], activeFrom, kids };
}

/** Generates a key pair and stores it; instances that load keys afterwards sign with it. */
export async function addSigningKey(deps: { db: Db; authSecret: string; clock: Clock; algorithm?: KeyAlgorithm }): Promise<string> {
  const row = await createEncryptedKeyPair(deriveKeyEncryptionKey(deps.authSecret), deps.clock(), deps.algorithm ?? SIGNING_ALGORITHM);
  await insertSigningKey(deps.db, row);
  return row.kid;
}

async function createEncryptedKeyPair(encryptionKey: Uint8Array, now: number, algorithm: KeyAlgorithm) {
  const { publicKey, privateKey } = await generateKeyPair(algorithm, algorithm === 'EdDSA' ? { crv: 'Ed25519', extractable: true } : { modulusLength: 2048, extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = await exportJWK(privateKey);
  const encrypted = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(privateJwk)))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid })
    .encrypt(encryptionKey);
  return {
    kid,
    algorithm,
    public_jwk: JSON.stringify({ ...publicJwk, kid, alg: algorithm, use: 'sig' }),
    private_jwk_encrypted: encrypted,
    created_at: now,
    retired_at: null,
  };
}

/** Every key with its state, newest first: for operators (`gatehouse keys list`). */
export async function describeSigningKeys(db: Db, now: number): Promise<Array<{ kid: string; algorithm: string; createdAt: number; state: string }>> {
  return (await listSigningKeys(db)).map((row) => ({
    kid: row.kid,
    algorithm: row.algorithm,
    createdAt: row.created_at,
    state:
      row.retired_at === null
        ? 'in service'
        : row.retired_at > now
          ? `retiring ${isoTime(row.retired_at)}`
          : `retired ${isoTime(row.retired_at)}`,
  }));
}
