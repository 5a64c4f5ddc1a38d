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
 * What a module brings, all optional: its config section (`config`, read and validated with the
 * rest), migrations (`migrations`), error codes (`errors`) and audit event types (`auditEvents`,
 * the domain events), services (`provide`), background jobs (`jobs`, started and stopped by the
 * app, never by building), routes and pages (`routes`, in the JSON or the browser scope), sign-in
 * steps (`signInSteps`, run by the sign-in pipeline), the kinds of first factor it verifies
 * (`firstFactors`) and of second factor it brings (`secondFactors`), what may waive the second factor
 * of a sign-in (`secondFactorWaivers`: a trusted browser), access-token claims (`tokenClaims`),
 * sections of the dashboard and the admin's user page (`pageSections`) and links at named places
 * of other modules' pages (`pageLinks`: the sign-in page's sign-up link, say), rules every signed-in
 * request meets (`accessPolicies`) and named checks a route may require (`accessRequirements`; a
 * route declares who may call it in its own options: authorization/access.ts),
 * subscriptions to domain events (`subscriptions`, run in the event's transaction), what it holds of
 * a user (`userData`: account deletion erases it, an export gathers it), the kinds of Bearer
 * credential it resolves (`credentialResolvers`), the mails it sends (`mailTemplates`) and the
 * changes to an account it tells the owner of (`securityNotices`) and the page where an owner takes
 * their account back (`accountRecoveryPage`), its `gatehouse` command groups (`cli`), its links
 * in the admin area's navigation (`adminNav`), the OpenAPI tags its routes use (`openApiTags`), the
 * public (webhook) events made from its domain events (`publicEvents`), the counters its events feed
 * and how they count (`counters`, `countedEvents`), and resources to release (`close`). Its rate
 * limits are read in its config section and counted with the `rateLimiters` service.
 * docs/architecture.md walks through adding one.
 */
import type { ModuleMessages } from './i18n/catalog.ts';
import type { CliIo } from './cli/args.ts';
import type { FastifyInstance } from 'fastify';
import type { Migration } from 'kysely/migration';
import type { Config, ConfigSection } from './config.ts';
import type { Db, Storage } from './storage/database.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import type { RequestAuth, RequestAuthenticator } from './sessions/request-authentication.ts';
import type { Csrf, CsrfRotation } from './http/csrf.ts';
import type { SignInStep } from './signin/signin-pipeline.ts';
import type { FirstFactorKind } from './signin/first-factor.ts';
import type { PasswordAccountSource, PasswordHashScheme } from './credentials/password-hasher.ts';
import type { SecondFactorKind } from './signin/second-factor-kind.ts';
import type { SecondFactorWaiver } from './signin/second-factor-waiver.ts';
import type { TokenClaimsRead } from './sessions/session-claims.ts';
import type { ErrorCode, ErrorDefinition } from './errors.ts';
import type { AskingApp, AskingAppFinder, PageLink, PageLinkPlace, PageSection, SectionedPage } from './module-pages.ts';
import type { AuditEventType, EventSubscription } from './audit/audit.service.ts';
import type { RouteAccess } from './authorization/access.ts';
import type { AuditSource } from './audit/audit.service.ts';
import type { AuthContext } from './sessions/session.service.ts';
import type { User } from './users/user.service.ts';
import type { ModuleMailTemplates } from './mail/templates.ts';
import type { PublicEventType } from './audit/public-events.ts';
import type { CountedEvent, CounterDefinition } from './metrics/counted-events.ts';

/** Every module's services, by name; each module adds its own (see above). */
export interface ServiceRegistry {}

/** The services once every module is built, with the config and clock they were built with. */
export type BuiltServices = ServiceRegistry & { readonly config: Config; readonly clock: Clock };

/** What every module is built with. */
export interface ModuleContext {
  readonly config: Config;
  readonly storage: Storage;
  readonly db: Db;
  readonly clock: Clock;
  /** For work outside a request: background jobs, audit writes that failed. */
  readonly logger: Logger;
  /** Every module in the list (what they declare: audit event types, say). */
  readonly modules: readonly GatehouseModule[];
  /** The services of the modules listed before this one; asking for a later one's is an error at start. */
  readonly services: ServiceRegistry;
  /** Every module's sign-in steps, in list order; known once all modules are built, so call it at sign-in, not while building. */
  readonly signInSteps: () => readonly SignInStep[];
  /** Every module's first-factor kinds, in list order; the same: call it at sign-in. */
  readonly firstFactorKinds: () => readonly FirstFactorKind[];
  /** Every module's second-factor kinds, in list order; the same: call it when factors are listed. */
  readonly secondFactorKinds: () => readonly SecondFactorKind[];
  /** Every module's domain-event subscriptions, in list order; the same: call it when an event happens. */
  readonly eventSubscriptions: () => readonly EventSubscription[];
  /** Every module's access-token claims reads, in list order; known once every module is built. */
  readonly tokenClaims: () => readonly TokenClaimsRead<object>[];
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
  /** The sections modules add to `page`, in list order (to render inside it). */
  readonly pageSections: (page: SectionedPage) => readonly PageSection[];
  /** The links modules put at `place` of a page, in their order (to render there: `renderPageLinks`). */
  readonly pageLinks: (place: PageLinkPlace) => readonly PageLink[];
  /** The app a sign-in's callback URL leads back to, as the first module that knows it says (`askingApps`); null when none does. */
  readonly askingApp: (callbackUrl: string) => Promise<AskingApp | null>;
  /** Every module's links in the admin area's navigation, in their order (admin/admin-area.ts renders them). */
  readonly adminNav: readonly AdminNavEntry[];
}

/**
 * A rule every routed request from a signed-in user meets (authorization/route-access.ts): an
 * enrolment policy, say ("holders of ADMIN reach nothing but enrolment until they have a second
 * factor"). Run only while `isActive` (so a policy that is not configured costs nothing), on every
 * route that does not name its `exemption` in its access declaration.
 */
export interface AccessPolicy {
  readonly name: string;
  readonly isActive: boolean;
  /** The name a route's declaration gives in `exempt` to be outside this policy (DURING_ENROLMENT, say). */
  readonly exemption?: string;
  /** Null to let the request through; else why not, and where a page load should go instead. */
  check(auth: RequestAuth, request: AccessRequest): Promise<AccessRefusal | null>;
}

/** A named check a route asks for in its declaration (`requires`): a recent second factor, say. */
export interface AccessRequirement {
  /** What routes name in `requires` (authorization/access.ts); several modules may enforce one name (each check applies). */
  readonly name: string;
  check(auth: RequestAuth, request: AccessRequest): Promise<AccessRefusal | null>;
}

/** What a policy or a requirement knows of the request it judges. */
export interface AccessRequest {
  /** The route's declaration (for a path no route serves, what the prefix rules ask of it). */
  readonly access: RouteAccess;
  readonly method: string;
}

export interface AccessRefusal {
  readonly code: ErrorCode;
  /** A page load is sent here (303) rather than shown a 403 page. */
  readonly redirectTo?: string;
}

/**
 * What a module holds of one user (`userData`): account deletion walks every module's to judge
 * whether the account may go and to erase it, and gathers their exports for the user to take away.
 */
export interface UserDataHandler {
  /**
   * Why the account cannot be deleted now (the only OWNER of an organization with other members,
   * say), or null. Writes nothing. Judged inside the deletion's transaction (`db`), for every
   * module before any erases, and without `db` for the deletion page to say what stands in the way.
   */
  blocksDeletion?(userId: string, db?: Db): Promise<DeletionBlock | null>;
  /**
   * Removes or erases what it holds of the user, inside the deletion's transaction, before the
   * user's row is deleted; rows that reference that one go with it on cascade, so a module holding
   * nothing else leaves this out. Modules erase in reverse list order (as they close): a module's
   * data goes before that of the modules it builds on, the audit history (where the others'
   * erasures record their events) last. A block returned here (what only the locks the erasure
   * takes could judge) refuses the deletion: everything it wrote is rolled back.
   */
  erase?(deletion: UserDeletion): Promise<DeletionBlock | null | void>;
  /** What it holds of the user, as JSON, for them to take away (never a secret or a hash); null: nothing. */
  export?(userId: string): Promise<Record<string, unknown> | null>;
}

/** The deletion an erasure is part of. */
export interface UserDeletion {
  /** The user, as they were when the deletion began (their address, to forget it). */
  readonly user: User;
  /** The deletion's transaction: every write goes through it. */
  readonly db: Db;
  /** Who deletes, for the events the erasure records (for one's own account, with no address or browser). */
  readonly source: AuditSource;
}

/** What stops an account being deleted until the user (or an administrator) deals with it. */
export interface DeletionBlock {
  /** What the refused deletion answers with (a 409 code: ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED, say). */
  readonly code: ErrorCode;
  /** The key, in the module's catalog, of what the deletion page says to do first (given `count`, the items). */
  readonly message: string;
  /** What stands in the way, for the page to list: its name, a detail in brackets, a link to deal with it. */
  readonly items: ReadonlyArray<{ readonly name: string; readonly detail?: string; readonly href?: string }>;
  /** The same in English for the command line, after the user's address: `is the only OWNER of acme: …`. */
  readonly summary: string;
}

/**
 * A kind of Bearer credential (`credentialResolvers`): the sessions module's access tokens; API
 * keys, say. Each request's Bearer token goes to the first resolver, in list order, that
 * recognises it; a token none recognises, or that its resolver refuses, leaves the request
 * unauthenticated (an explicit credential never falls back to a cookie).
 */
export interface CredentialResolver {
  /** Unique among the resolvers (errors and logs name it). */
  readonly name: string;
  /** Whether the token is of its kind, by its shape alone (a prefix): synchronous and cheap, it runs on every Bearer request. */
  recognises(token: string): boolean;
  /** Who the token speaks for, or null when it grants nothing (expired, revoked, unknown). */
  resolve(token: string): Promise<AuthContext | null>;
  /**
   * The same caller with the roles they hold now, or null when they hold nothing any more: asked
   * for every decision that grants a role's powers or that a policy makes (the access token's
   * resolver reads the session, since a jwt-strategy token carries the roles it was issued with).
   * Leave it out when `resolve` already reads what is current: its answer is then taken as is.
   */
  withCurrentRoles?(auth: AuthContext): Promise<AuthContext | null>;
}

/**
 * A group of `gatehouse` commands a module brings: `gatehouse <name> …`. `gatehouse help` must not
 * load the modules (that takes most of a second), so the command finds the groups by their files:
 * a module declares them in a `*.cli.ts` file of its folder, exported as `cli`, which loads nothing
 * but cli/args.ts and its usage text (its commands' code only when one runs, by `load`), and names
 * the same array in its `cli` slot; cli/module-commands.test.ts checks the two agree.
 */
export interface CliCommandGroup {
  /** The command's first word (`webhooks`), unique among the modules' groups and the core's (serve, migrate, backup, restore, doctor). */
  readonly name: string;
  /** Its lines of `gatehouse help` (and of `gatehouse help <name>`), each indented by two spaces. */
  readonly usage: string;
  /** Where its lines go among the modules' groups in `gatehouse help` (after `migrate`, before `backup`), smallest first. */
  readonly order: number;
  /** Its commands' code, imported when one of them runs. */
  load(): Promise<CliCommandRunner>;
}

/** Runs `gatehouse <group> …` given the rest of the command line: its exit code (0 when none), or throws a CliError (cli/args.ts). */
export type CliCommandRunner = (args: string[], io: CliIo, context: CliCommandContext) => Promise<number | void>;

/** What a group's commands are run with. */
export interface CliCommandContext {
  /** The group's `usage`, for its errors. */
  readonly usage: string;
  /** Runs `fn` with the server's services on the configured, migrated database (cli/context.ts), imported only now. */
  withServices<T>(io: CliIo, fn: (services: BuiltServices) => Promise<T>): Promise<T>;
}

/**
 * A link in the admin area's navigation (the header of every /admin page): an area a module serves
 * to administrators. The admin module renders the links; it knows no other module's pages.
 */
export interface AdminNavEntry {
  /** Where it goes: `/admin/webhooks`. */
  readonly path: string;
  /** Its text: a key of the module's messages (`webhooks.adminNav`). */
  readonly labelKey: string;
  /** The `section` the area's pages give the header, which marks this link the current page. */
  readonly section: string;
  /** Where it goes in the navigation, smallest first (the admin module's users at 10, its audit log at 90). */
  readonly order: number;
}

/** An OpenAPI tag a module's routes use (`schema.tags`), with the line the document describes it by. */
export interface OpenApiTag {
  readonly name: string;
  readonly description: string;
}

export interface ModuleRoutes {
  /** `api`: JSON only; `browser`: where HTML form bodies are parsed too. */
  readonly scope: 'api' | 'browser';
  register(app: FastifyInstance, context: RouteContext): PromiseLike<unknown>;
}

export interface GatehouseModule {
  /** kebab-case, unique in the list. */
  readonly name: string;
  /**
   * The module's schema changes, by name. Names are recorded once applied: never rename or edit
   * one that has shipped. A new one is named `YYYYMMDD-<module>-<what>` (those shipped before
   * modules are `0001-…` to `0009-…`), so two modules never pick the same name. Pending ones run
   * in name order; one that sorts before an applied one (another module's, say) still runs. One
   * whose file exports `transaction = false` runs alone, outside a transaction: an index built with
   * `createIndexConcurrently` on a table that may be large (storage/migrations.ts `applyMigrations`).
   */
  readonly migrations?: Readonly<Record<string, Migration>>;
  /** Its part of the configuration, read and validated with the rest (one error lists every problem). */
  readonly config?: ConfigSection;
  /**
   * The texts of its pages and mails in every language (i18n/catalog.ts): ICU messages under keys
   * that begin with the module's name, usually `readMessages(join(import.meta.dirname, 'messages'))`.
   */
  readonly messages?: ModuleMessages;
  /** The error codes its routes answer with, declared in its errors file by `defineErrorCodes` (see errors.ts). */
  readonly errors?: Readonly<Record<string, ErrorDefinition>>;
  /**
   * The audit event types (domain events) it records, stable and lower-case dotted; the type
   * `AuditEventType` learns them where the module declares them (see audit/audit.service.ts).
   */
  readonly auditEvents?: readonly AuditEventType[];
  /** Builds the module's services, with no side effects (no timers, no connections that a job should open). */
  provide?(context: ModuleContext): Partial<ServiceRegistry> | Promise<Partial<ServiceRegistry>>;
  jobs?(services: ServiceRegistry, context: ModuleContext): readonly BackgroundJob[];
  readonly routes?: readonly ModuleRoutes[];
  /** Steps every sign-in runs after the account checks, in list order (see signin/signin-pipeline.ts). */
  signInSteps?(services: ServiceRegistry): readonly SignInStep[];
  /** The kinds of first factor it verifies and hands to the sign-in pipeline (see signin/first-factor.ts). */
  firstFactors?(services: ServiceRegistry): readonly FirstFactorKind[];
  /** The kinds of second factor it brings to the MFA module (see signin/second-factor-kind.ts). */
  secondFactors?(services: ServiceRegistry): readonly SecondFactorKind[];
  /** What may waive the second factor of a sign-in, asked by the MFA module's step before it challenges (see signin/second-factor-waiver.ts). */
  secondFactorWaivers?(services: ServiceRegistry): readonly SecondFactorWaiver[];
  /** Rules every signed-in routed request meets, unless its route is exempt (see `AccessPolicy`). */
  accessPolicies?(services: BuiltServices): readonly AccessPolicy[];
  /** Named checks routes may require in their access declaration (see `AccessRequirement`). */
  accessRequirements?(services: BuiltServices): readonly AccessRequirement[];
  /** Sections it adds to other modules' pages (the dashboard, the admin's user page, the sign-in page). */
  pageSections?(services: BuiltServices): readonly PageSection[];
  /** Links to its own pages at named places of other modules' pages (the sign-in page's "Forgot password?"; see module-pages.ts). */
  pageLinks?(services: BuiltServices): readonly PageLink[];
  /** Which app a sign-in's callback URL of its own leads back to ("to continue to …" on the sign-in pages; see module-pages.ts). */
  askingApps?(services: BuiltServices): readonly AskingAppFinder[];
  /**
   * Claims the module adds to every access token and to the session endpoint's view: a query on
   * its own tables correlated with the session, read in the same statement as the session itself
   * (sessions/session-claims.ts).
   */
  tokenClaims?(services: ServiceRegistry): TokenClaimsRead<object>;
  /** Domain events (the audit events) the module handles, inside the transaction of the change. */
  subscriptions?(services: ServiceRegistry): readonly EventSubscription[];
  /** What it holds of a user: what blocks deleting them, how to erase it, how to export it (see `UserDataHandler`). */
  userData?(services: ServiceRegistry, context: ModuleContext): UserDataHandler;
  /** The kinds of Bearer credential it issues, resolved to who they speak for (see `CredentialResolver`). */
  credentialResolvers?(services: ServiceRegistry): readonly CredentialResolver[];
  /**
   * Its `gatehouse` command groups (`gatehouse webhooks …`): the `cli` its `*.cli.ts` file exports,
   * which is how the command finds them without loading the modules (see `CliCommandGroup`).
   */
  readonly cli?: readonly CliCommandGroup[];
  /** Its links in the admin area's navigation (see `AdminNavEntry`); a path two modules declare stops the start. */
  readonly adminNav?: readonly AdminNavEntry[];
  /** The OpenAPI tags its routes introduce, each described once: a tag two modules declare stops the start; other modules' routes may use it. */
  readonly openApiTags?: readonly OpenApiTag[];
  /**
   * The public (webhook) events made from the domain events it records, each with its payload's
   * allow-list (see audit/public-events.ts); an audit type two declarations make public stops the start.
   */
  readonly publicEvents?: readonly PublicEventType[];
  /** The counters its domain events feed (or it counts itself with the `metrics` service's `count`), with their labels' vocabularies (see metrics/counted-events.ts); a name two modules declare stops the start. */
  readonly counters?: readonly CounterDefinition[];
  /** How its domain events (or those of the modules it builds on) count for the counters (see metrics/counted-events.ts). */
  readonly countedEvents?: readonly CountedEvent[];
  /**
   * The mails it sends, by template name (mail/templates.ts: its files in its folder, its texts in
   * its catalogs under `<module>.mail.`), given every module; a name two modules declare stops the start.
   */
  mailTemplates?(modules: readonly GatehouseModule[]): ModuleMailTemplates;
  /**
   * The changes to an account that its owner hears of by a `security-notice` mail (mail/security-notice.ts),
   * each with its texts in the module's catalogs; a change two modules declare stops the start.
   */
  readonly securityNotices?: readonly string[];
  /**
   * The page of its own where the owner of an account takes it back after a change they did not
   * make (the password-reset module's forgot-password page): the mails that offer it link it
   * (`MailService.accountRecoveryUrl`, security notices among them). One module at most declares it.
   */
  readonly accountRecoveryPage?: `/${string}`;
  /**
   * The kinds of foreign password hash it lets accounts sign in with (bcrypt, PBKDF2… imported from
   * another system; see credentials/password-hasher.ts `PasswordHashScheme`): the password check
   * asks them for every stored hash that is not argon2id, and a verified one is rehashed with argon2id.
   */
  readonly passwordHashSchemes?: readonly PasswordHashScheme[];
  /**
   * The old systems it asks for the password of an address that has no account here (lazy
   * migration; see credentials/password-hasher.ts `PasswordAccountSource`), given the config.
   */
  passwordAccountSources?(config: Config): readonly PasswordAccountSource[];
  /** Releases what `provide` opened (a connection), after the jobs have stopped. */
  close?(services: ServiceRegistry): Promise<void>;
}

/** Declares a module; the identity function, for the contract's type checking at the definition. */
export function defineModule(module: GatehouseModule): GatehouseModule {
  return module;
}

// A module's part of another module's page (module-pages.ts).
export { renderPageSections, renderPageLinks, findAskingApp, PAGE_LINK_PLACES, DASHBOARD_GROUPS } from './module-pages.ts';
export type { SectionedPage, PageSection, PageSectionContext, PageLink, PageHrefLink, PageRenderedLink, PageLinkPlace, PageLinkContext, AskingApp, AskingAppFinder, DashboardGroup } from './module-pages.ts';

// What the modules declare, collected (module-collect.ts).
export { collectPageLinks, collectFirstFactorKinds, collectSecondFactorKinds, collectConfigSections, collectMigrations, collectErrorCatalogue, collectAuditEventTypes, collectAuditEventOwners, collectCliGroups, collectAdminNav, collectOpenApiTags, collectPublicEvents, collectCounters, collectCountedEvents, collectMailTemplates, collectSecurityNotices, collectAccountRecoveryPage } from './module-collect.ts';
export type { CatalogueEntry } from './module-collect.ts';
