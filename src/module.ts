/**
 * The module contract: how a capability declares what it brings. `modules.ts` lists the modules
 * in order; `services.ts` walks the list to build their services, `app.ts` to register their
 * routes and start their jobs. A module reaches another only through the services that one
 * provides (`ServiceRegistry`), never through its stores.
 *
 * A module adds its services to the registry's type where it is declared:
 *
 *   declare module '../module.ts' {
 *     interface ServiceRegistry { verification: VerificationService }
 *   }
 *
 * What a module can bring today: services (`provide`), background jobs (`jobs`, started and
 * stopped by the app, never by building), routes and pages (`routes`, in the JSON or the browser
 * scope), sign-in steps (`signInSteps`, run by the sign-in pipeline), subscriptions to domain
 * events (`subscriptions`, run in the event's transaction), and resources to release (`close`). Config sections, migrations, error codes and audit event types are still declared
 * centrally (config.ts, storage/database.ts, errors.ts, audit/) and move here next.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { Db, Storage } from './storage/database.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import type { RequestAuthenticator } from './sessions/request-authentication.ts';
import type { Csrf, CsrfRotation } from './http/csrf.ts';
import type { SignInStep } from './signin/signin-pipeline.ts';
import type { EventSubscription } from './audit/audit.service.ts';

/** Every module's services, by name; each module adds its own (see above). */
export interface ServiceRegistry {}

/** What every module is built with. */
export interface ModuleContext {
  readonly config: Config;
  readonly storage: Storage;
  readonly db: Db;
  readonly clock: Clock;
  /** For work outside a request: background jobs, audit writes that failed. */
  readonly logger: Logger;
  /** The services of the modules listed before this one; asking for a later one's is an error at start. */
  readonly services: ServiceRegistry;
  /** Every module's sign-in steps, in list order; known once all modules are built, so call it at sign-in, not while building. */
  readonly signInSteps: () => readonly SignInStep[];
  /** Every module's domain-event subscriptions, in list order; the same: call it when an event happens. */
  readonly eventSubscriptions: () => readonly EventSubscription[];
}

/** Work that runs in the background while the service serves: started and stopped by the app. */
export interface BackgroundJob {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/** What route plugins are registered with. */
export interface RouteContext {
  readonly services: ServiceRegistry;
  readonly storage: Storage;
  readonly config: Config;
  readonly clock: Clock;
  readonly authenticate: RequestAuthenticator;
  readonly csrf: Csrf & CsrfRotation;
}

export interface ModuleRoutes {
  /** `api`: JSON only; `browser`: where HTML form bodies are parsed too. */
  readonly scope: 'api' | 'browser';
  register(app: FastifyInstance, context: RouteContext): PromiseLike<unknown>;
}

export interface GatehouseModule {
  /** kebab-case, unique in the list. */
  readonly name: string;
  /** Builds the module's services, with no side effects (no timers, no connections that a job should open). */
  provide?(context: ModuleContext): Partial<ServiceRegistry> | Promise<Partial<ServiceRegistry>>;
  jobs?(services: ServiceRegistry, context: ModuleContext): readonly BackgroundJob[];
  readonly routes?: readonly ModuleRoutes[];
  /** Steps every sign-in runs after the account checks, in list order (see signin/signin-pipeline.ts). */
  signInSteps?(services: ServiceRegistry): readonly SignInStep[];
  /** Domain events (the audit events) the module handles, inside the transaction of the change. */
  subscriptions?(services: ServiceRegistry): readonly EventSubscription[];
  /** Releases what `provide` opened (a connection), after the jobs have stopped. */
  close?(services: ServiceRegistry): Promise<void>;
}

/** Declares a module; the identity function, for the contract's type checking at the definition. */
export function defineModule(module: GatehouseModule): GatehouseModule {
  return module;
}
