/**
 * HTTP traffic for fault tests and the soak script: one call that never throws (a refused or
 * reset connection is an outcome too: status 0 with the error's code), every call timed, and a
 * log of outcomes that can be counted by kind, phase and status. Loopback only.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Outcome {
  /** What the caller was doing: `signin`, `session`, `guard`, `signout`, … */
  readonly kind: string;
  /** 0 when no HTTP answer came (connection refused, reset, timed out). */
  readonly status: number;
  /** The body's `error` code, or the network error's code when status is 0. */
  readonly code: string | undefined;
  readonly retryAfter: string | null;
  /** performance.now() when the request was sent and when its answer was read. */
  readonly sentAt: number;
  readonly doneAt: number;
  readonly body: Record<string, unknown> | undefined;
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'DELETE';
  body?: unknown;
  token?: string;
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/** One request; resolves with its outcome whatever happens. */
export async function call(base: string, path: string, kind: string, options: CallOptions = {}): Promise<Outcome> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const sentAt = performance.now();
  try {
    const response = await fetch(`${base}${path}`, {
      method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
      headers,
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
    const text = await response.text();
    const body = parseJsonObject(text);
    return {
      kind,
      status: response.status,
      code: typeof body?.error === 'string' ? body.error : undefined,
      retryAfter: response.headers.get('retry-after'),
      sentAt,
      doneAt: performance.now(),
      body,
    };
  } catch (error) {
    return { kind, status: 0, code: networkCode(error), retryAfter: null, sentAt, doneAt: performance.now(), body: undefined };
  }
}

/**
 * Like `call`, but over a connection of its own that is closed afterwards (no keep-alive pool):
 * for tests where "a new connection" and "a request in flight on its connection" must be exact.
 */
export function callOnNewConnection(base: string, path: string, kind: string, options: CallOptions = {}): Promise<Outcome> {
  const url = new URL(path, base);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { connection: 'close', ...options.headers };
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const sentAt = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const failed = (error: unknown) => settle({ kind, status: 0, code: networkCode(error), retryAfter: null, sentAt, doneAt: performance.now(), body: undefined });
    const req = httpRequest(
      url,
      { method: options.method ?? (payload === undefined ? 'GET' : 'POST'), headers, agent: false, timeout: options.timeoutMs ?? 15_000 },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', failed);
        res.on('end', () => {
          const body = parseJsonObject(text);
          const retryAfter = res.headers['retry-after'];
          settle({
            kind,
            status: res.statusCode ?? 0,
            code: typeof body?.error === 'string' ? body.error : undefined,
            retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
            sentAt,
            doneAt: performance.now(),
            body,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
    req.on('error', failed);
    req.end(payload);
  });
}

function networkCode(error: unknown): string {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== null && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if ((current as Error).name === 'TimeoutError') return 'TIMEOUT';
    current = (current as { cause?: unknown }).cause;
  }
  return 'NETWORK_ERROR';
}

/** `{ "signin 200": 12, "session 503 SERVICE_UNAVAILABLE": 40, … }`, sorted by key. */
export function countOutcomes(outcomes: readonly Outcome[], label: (o: Outcome) => string = describeOutcome): Record<string, number> {
  const counts = new Map<string, number>();
  for (const outcome of outcomes) counts.set(label(outcome), (counts.get(label(outcome)) ?? 0) + 1);
  return Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)));
}

export function describeOutcome(outcome: Outcome): string {
  return `${outcome.kind} ${outcome.status}${outcome.code === undefined ? '' : ` ${outcome.code}`}`;
}

export const FAULT_PHASES = ['before', 'at-fault', 'during', 'recovering', 'after'] as const;
export type FaultPhase = (typeof FAULT_PHASES)[number];

/**
 * Where an outcome falls around a fault: answered before it began; in flight when it began;
 * sent and answered while it lasted; sent before service was back (`recoveredAt`); or after.
 */
export function faultPhase(outcome: Outcome, times: { faultAt: number; endAt: number; recoveredAt: number }): FaultPhase {
  if (outcome.doneAt < times.faultAt) return 'before';
  if (outcome.sentAt < times.faultAt) return 'at-fault';
  if (outcome.doneAt <= times.endAt) return 'during';
  if (outcome.sentAt < times.recoveredAt) return 'recovering';
  return 'after';
}

/** Outcomes counted by kind and status, phase by phase. */
export function countByPhase(outcomes: readonly Outcome[], phaseOf: (o: Outcome) => FaultPhase): Record<FaultPhase, Record<string, number>> {
  return Object.fromEntries(FAULT_PHASES.map((phase) => [phase, countOutcomes(outcomes.filter((o) => phaseOf(o) === phase))])) as Record<FaultPhase, Record<string, number>>;
}

/** What a fault may never cause, in any phase: a 500, a dropped connection, a 503 without its code and Retry-After. */
export function assertFailedSafely(outcomes: readonly Outcome[], phaseOf: (o: Outcome) => FaultPhase): void {
  for (const o of outcomes) {
    assert.notEqual(o.status, 500, `500 in phase ${phaseOf(o)}: ${describeOutcome(o)}`);
    assert.notEqual(o.status, 0, `no HTTP answer in phase ${phaseOf(o)}: ${describeOutcome(o)}`);
    if (o.status === 503) {
      assert.equal(o.code, 'SERVICE_UNAVAILABLE', describeOutcome(o));
      assert.ok(o.retryAfter !== null && Number(o.retryAfter) >= 1, `503 with Retry-After: ${describeOutcome(o)}`);
    }
  }
}

/** Runs `worker(index)` in `concurrency` loops until `shouldStop()` says so. */
export async function runLoops(concurrency: number, shouldStop: () => boolean, worker: (index: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: concurrency }, async (_, index) => {
      while (!shouldStop()) await worker(index);
    }),
  );
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every `intervalMs` until it is true; returns the ms it took, or rejects after `timeoutMs`. */
export async function waitUntil(probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 100, what = 'the condition'): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await probe()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

/** A response body that is a JSON object, or undefined (empty, not JSON, or another JSON value). */
function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = text === '' ? undefined : JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
