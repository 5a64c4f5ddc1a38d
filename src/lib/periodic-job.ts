/**
 * A background job that runs now and then: first after `firstDelayMs`, then every `intervalMs`
 * after the previous run ended (so runs never overlap), and never keeps the process alive. A failed
 * run is logged and the next one comes as usual.
 */
import type { Logger } from './logger.ts';

export interface PeriodicJob<T> {
  start(): void;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
  /** One run now (joining a run in progress). */
  runOnce(): Promise<T>;
  /** True once `stop` was called: long runs check it between batches. */
  readonly isStopped: boolean;
}

export function createPeriodicJob<T>(options: { name: string; run: () => Promise<T>; intervalMs: number; firstDelayMs: number; logger: Logger }): PeriodicJob<T> {
  const { name, run, intervalMs, firstDelayMs, logger } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<T> | undefined;
  let isStopped = false;

  function runOnce(): Promise<T> {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(delayMs: number): void {
    if (isStopped) return;
    timer = setTimeout(() => {
      runOnce()
        .catch((error: unknown) => logger.error({ err: error }, `${name} failed; will retry`))
        .finally(() => schedule(intervalMs));
    }, delayMs);
    timer.unref();
  }

  return {
    start() {
      isStopped = false;
      schedule(Math.min(firstDelayMs, intervalMs));
    },
    async stop() {
      isStopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
    runOnce,
    get isStopped() {
      return isStopped;
    },
  };
}
