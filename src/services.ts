/**
 * Builds every module's services, in the order of `modules.ts`, with nothing started: the app
 * starts the background jobs (`startJobs`) when it serves, so the CLI, which uses the same wiring,
 * runs no worker. `buildApp` receives the result.
 */
import type { Config } from './config.ts';
import type { Storage } from './storage/database.ts';
import { systemClock, type Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { createLogger } from './http/logging.ts';
import { collectFirstFactorKinds, collectSecondFactorKinds, type BackgroundJob, type GatehouseModule, type ModuleContext, type ServiceRegistry } from './module.ts';
import type { SignInStep } from './signin/signin-pipeline.ts';
import type { FirstFactorKind } from './signin/first-factor.ts';
import type { SecondFactorKind } from './signin/second-factor-kind.ts';
import type { EventSubscription } from './audit/audit.service.ts';
import type { TokenClaimsRead } from './sessions/session-claims.ts';
import { MODULES } from './modules.ts';

export type Services = ServiceRegistry & {
  readonly config: Config;
  readonly storage: Storage;
  readonly clock: Clock;
  /** For work outside a request: background jobs, audit writes that failed. */
  readonly logger: Logger;
  readonly modules: readonly GatehouseModule[];
  /** Starts every module's background jobs, in list order (each start awaited). */
  startJobs(): Promise<void>;
  /** Stops the jobs (waiting for a run in progress) and releases what modules opened; storage is closed by its owner. */
  stop(): Promise<void>;
};

export async function createServices(deps: { config: Config; storage: Storage; clock?: Clock; logger?: Logger; modules?: readonly GatehouseModule[] }): Promise<Services> {
  const { config, storage } = deps;
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger(config);
  const modules = deps.modules ?? MODULES;

  const registry: Record<string, unknown> = {};
  // While building, a module that asks for a service no module above it provided is a wiring
  // mistake: say which, at start, rather than fail later on `undefined`.
  const available = new Proxy(registry, {
    get(target, name) {
      if (typeof name === 'string' && !(name in target)) throw new Error(`a module asked for the service "${name}" before any module provided it: check the order in modules.ts`);
      return Reflect.get(target, name);
    },
  }) as unknown as ServiceRegistry;
  let steps: readonly SignInStep[] | null = null;
  let firstFactors: readonly FirstFactorKind[] | null = null;
  let secondFactors: readonly SecondFactorKind[] | null = null;
  let subscriptions: readonly EventSubscription[] | null = null;
  let claims: readonly TokenClaimsRead<object>[] | null = null;
  const context: ModuleContext = {
    modules,
    config,
    storage,
    db: storage.db,
    clock,
    logger,
    services: available,
    signInSteps: knownOnceBuilt('sign-in steps', () => steps),
    firstFactorKinds: knownOnceBuilt('first-factor kinds', () => firstFactors),
    secondFactorKinds: knownOnceBuilt('second-factor kinds', () => secondFactors),
    eventSubscriptions: knownOnceBuilt('event subscriptions', () => subscriptions),
    tokenClaims: knownOnceBuilt('token claims', () => claims),
  };

  const built: GatehouseModule[] = [];
  try {
    for (const module of modules) {
      const provided = (await module.provide?.(context)) ?? {};
      for (const [name, service] of Object.entries(provided)) {
        if (name in registry) throw new Error(`modules.ts: the service "${name}" of the module "${module.name}" is provided twice`);
        registry[name] = service;
      }
      built.push(module);
    }
    // Two modules claiming one kind of factor is a wiring mistake too.
    firstFactors = collectFirstFactorKinds(modules, registry as unknown as ServiceRegistry);
    secondFactors = collectSecondFactorKinds(modules, registry as unknown as ServiceRegistry);
  } catch (error) {
    await closeModules(built, registry as unknown as ServiceRegistry, logger);
    throw error;
  }
  const services = registry as unknown as ServiceRegistry;
  steps = modules.flatMap((module) => module.signInSteps?.(services) ?? []);
  subscriptions = modules.flatMap((module) => module.subscriptions?.(services) ?? []);
  claims = modules.flatMap((module) => (module.tokenClaims === undefined ? [] : [module.tokenClaims(services)]));
  const jobs: BackgroundJob[] = modules.flatMap((module) => module.jobs?.(services, context) ?? []);
  const started: BackgroundJob[] = [];

  return Object.assign(registry as unknown as ServiceRegistry, {
    config,
    storage,
    clock,
    logger,
    modules,
    async startJobs() {
      for (const job of jobs) {
        if (started.includes(job)) continue;
        await job.start();
        started.push(job);
      }
    },
    async stop() {
      // Every job's `stop` (a job that was never started stops at once), then what modules opened.
      await Promise.all(jobs.map(async (job) => job.stop()));
      started.length = 0;
      await closeModules(modules, services, logger);
    },
  });
}

/** What the modules declare of one kind, known once every one is built: asking while building is a wiring mistake. */
function knownOnceBuilt<T>(what: string, get: () => T | null): () => T {
  return () => {
    const value = get();
    if (value === null) throw new Error(`${what} are known once every module is built`);
    return value;
  };
}

async function closeModules(modules: readonly GatehouseModule[], services: ServiceRegistry, logger: Logger): Promise<void> {
  for (const module of [...modules].reverse()) {
    await module.close?.(services).catch((error: unknown) => logger.error({ err: error, module: module.name }, 'module did not close cleanly'));
  }
}
