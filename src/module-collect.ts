/**
 * What the modules declare, collected across the module list (src/modules.ts), each kind of
 * declaration with its owner: a name two modules claim stops the start with both their names.
 * Re-exported by module.ts, the contract.
 */
import type { Migration } from 'kysely/migration';
import type { ConfigSection } from './config.ts';
import type { ServiceRegistry, BuiltServices, GatehouseModule, CliCommandGroup, AdminNavEntry } from './module.ts';
import { PAGE_LINK_PLACES, type PageLink, type PageLinkPlace } from './module-pages.ts';
import { DEFAULT_LOCALE } from './i18n/locales.ts';
import { FACTOR_NAME, type FirstFactorKind } from './signin/first-factor.ts';
import type { SecondFactorKind } from './signin/second-factor-kind.ts';
import { CORE_ERRORS, type ErrorDefinition } from './errors.ts';
import type { AuditEventType } from './audit/audit.service.ts';
import type { MailTemplate } from './mail/templates.ts';
import type { PublicEventType } from './audit/public-events.ts';
import type { CountedEvent, CounterDefinition } from './metrics/counted-events.ts';

/**
 * What the modules declare of one kind, by name, each with its owner: a name two modules claim
 * is a mistake, refused at start with both their names.
 */
function claimed<T>(kind: string, owners: Iterable<readonly [owner: string, entries: Iterable<readonly [string, T]>]>): Map<string, { readonly value: T; readonly module: string }> {
  const all = new Map<string, { readonly value: T; readonly module: string }>();
  for (const [module, entries] of owners) {
    for (const [name, value] of entries) {
      const other = all.get(name);
      if (other !== undefined) throw new Error(`modules: the ${kind} "${name}" is declared by both "${other.module}" and "${module}"`);
      all.set(name, { value, module });
    }
  }
  return all;
}

/**
 * Every module's factors of one vocabulary (first-factor kinds, second-factor methods), in list
 * order: each name a `FACTOR_NAME`, claimed by one module.
 */
function collectFactors<T>(what: string, owners: ReadonlyArray<readonly [module: string, factors: readonly T[]]>, nameOf: (factor: T) => string): T[] {
  for (const [module, factors] of owners) {
    for (const factor of factors) {
      if (!FACTOR_NAME.test(nameOf(factor))) throw new Error(`modules: the ${what} "${nameOf(factor)}" of "${module}" must be lower-case letters, digits, - or _ (at most 16)`);
    }
  }
  return [...claimed<T>(what, owners.map(([module, factors]) => [module, factors.map((factor) => [nameOf(factor), factor] as const)] as const)).values()].map((entry) => entry.value);
}

/** Every module's first-factor kinds, in list order. */
export function collectFirstFactorKinds(modules: readonly GatehouseModule[], services: ServiceRegistry): FirstFactorKind[] {
  return collectFactors('first-factor kind', modules.map((module) => [module.name, module.firstFactors?.(services) ?? []] as const), (kind) => kind.kind);
}

/** Every module's second-factor kinds, in list order; two claiming one status field are refused too. */
export function collectSecondFactorKinds(modules: readonly GatehouseModule[], services: ServiceRegistry): SecondFactorKind[] {
  const owners = modules.map((module) => [module.name, module.secondFactors?.(services) ?? []] as const);
  claimed<SecondFactorKind>('second-factor status field', owners.map(([module, kinds]) => [module, kinds.map((kind) => [kind.statusKey, kind] as const)] as const));
  return collectFactors('second-factor method', owners, (kind) => kind.method);
}

/** Every module's config section, in list order. */
export function collectConfigSections(modules: readonly GatehouseModule[]): ConfigSection[] {
  return modules.flatMap((module) => (module.config === undefined ? [] : [module.config]));
}

/** Every module's migrations, by name. */
export function collectMigrations(modules: readonly GatehouseModule[]): Record<string, Migration> {
  const all = claimed<Migration>('migration', modules.map((module) => [module.name, Object.entries(module.migrations ?? {})] as const));
  return Object.fromEntries([...all].map(([name, { value }]) => [name, value]));
}

export interface CatalogueEntry extends ErrorDefinition {
  /** The module that declares it; `http` for the plumbing's own (errors.ts). */
  readonly module: string;
}

/** Every error code a client can see, by code: the core's, then each module's, in list order. */
export function collectErrorCatalogue(modules: readonly GatehouseModule[]): Record<string, CatalogueEntry> {
  const owners = [['http', Object.entries(CORE_ERRORS)] as const, ...modules.map((module) => [module.name, Object.entries(module.errors ?? {})] as const)];
  const all = claimed<ErrorDefinition>('error code', owners);
  return Object.fromEntries([...all].map(([code, { value, module }]) => [code, { status: value.status, message: value.message, module }]));
}

/** Every audit event type (domain event), in list order. */
export function collectAuditEventTypes(modules: readonly GatehouseModule[]): readonly AuditEventType[] {
  return [...collectAuditEventOwners(modules).keys()];
}

/**
 * Every audit event type with the name of the module that declares it, in list order: where the
 * admin log finds a type's words (`<module>.eventType.<type>` in that module's catalogs).
 */
export function collectAuditEventOwners(modules: readonly GatehouseModule[]): ReadonlyMap<AuditEventType, string> {
  const all = claimed('audit event type', modules.map((module) => [module.name, (module.auditEvents ?? []).map((type) => [type, type] as const)] as const));
  return new Map([...all].map(([type, { module }]) => [type as AuditEventType, module]));
}

/** What several modules declare with an `order`, by it (list order among equals). */
function byOrder<T extends { readonly order: number }>(entries: Iterable<{ readonly value: T }>): T[] {
  return [...entries].map((entry) => entry.value).sort((a, b) => a.order - b.order);
}

/** Every module's `gatehouse` command groups, in their order (src/cli/main.ts finds the same by their files). */
export function collectCliGroups(modules: readonly GatehouseModule[]): CliCommandGroup[] {
  return byOrder(claimed<CliCommandGroup>('CLI command group', modules.map((module) => [module.name, (module.cli ?? []).map((group) => [group.name, group] as const)] as const)).values());
}

/** Every module's links in the admin area's navigation, in their order. */
export function collectAdminNav(modules: readonly GatehouseModule[]): AdminNavEntry[] {
  return byOrder(claimed<AdminNavEntry>('admin navigation path', modules.map((module) => [module.name, (module.adminNav ?? []).map((entry) => [entry.path, entry] as const)] as const)).values());
}

/**
 * Every module's page links, by place, each place's in their order (list order among equals). A
 * place no page has, a text that is not a message of the module's own English catalog, and one
 * href two declarations put at one place stop the start.
 */
export function collectPageLinks(modules: readonly GatehouseModule[], services: BuiltServices): ReadonlyMap<PageLinkPlace, readonly PageLink[]> {
  const owners = modules.map((module) => [module, module.pageLinks?.(services) ?? []] as const);
  for (const [module, links] of owners) {
    for (const link of links) {
      if (!(PAGE_LINK_PLACES as readonly string[]).includes(link.place)) {
        throw new Error(`modules: a page link of "${module.name}" is for the place "${link.place}", which no page has (${PAGE_LINK_PLACES.join(', ')})`);
      }
      if ('href' in link && !(link.message.startsWith(`${module.name}.`) && Object.hasOwn(module.messages?.[DEFAULT_LOCALE] ?? {}, link.message))) {
        throw new Error(`modules: the page link of "${module.name}" to ${link.href} says "${link.message}", which is not a message of its own catalogs`);
      }
    }
  }
  const hrefs = owners.map(([module, links]) => [module.name, links.flatMap((link) => ('href' in link ? [[`${link.href} at ${link.place}`, link] as const] : []))] as const);
  claimed<PageLink>('page link to', hrefs);
  const all = owners.flatMap(([, links]) => links).sort((a, b) => a.order - b.order);
  return new Map(PAGE_LINK_PLACES.map((place) => [place, all.filter((link) => link.place === place)]));
}

/** Every OpenAPI tag the modules describe: its description, by name. */
export function collectOpenApiTags(modules: readonly GatehouseModule[]): ReadonlyMap<string, string> {
  const all = claimed<string>('OpenAPI tag', modules.map((module) => [module.name, (module.openApiTags ?? []).map((tag) => [tag.name, tag.description] as const)] as const));
  return new Map([...all].map(([name, { value }]) => [name, value]));
}

/**
 * Every module's public events, in their order (list order among equals). Each is made from an
 * audit type its own module declares, by one declaration at most; the declarations of one public
 * type give the same order.
 */
export function collectPublicEvents(modules: readonly GatehouseModule[]): PublicEventType[] {
  const owners = modules.map((module) => [module.name, (module.publicEvents ?? []).map((event) => [event.from, event] as const)] as const);
  const all = claimed<PublicEventType>('public event source', owners);
  const orders = new Map<string, number>();
  for (const [from, { value, module }] of all) {
    if (!/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/.test(value.type)) throw new Error(`modules: the public event "${value.type}" of "${module}" must be lower-case and dotted`);
    const declaring = modules.find((candidate) => candidate.name === module)!;
    if (!(declaring.auditEvents ?? []).includes(from as AuditEventType)) throw new Error(`modules: "${module}" makes the public event "${value.type}" from "${from}", an audit event it does not declare`);
    if ((orders.get(value.type) ?? value.order) !== value.order) throw new Error(`modules: the public event "${value.type}" is given two orders`);
    if (value.description !== undefined && !(value.description.startsWith(`${module}.`) && Object.hasOwn(declaring.messages?.[DEFAULT_LOCALE] ?? {}, value.description))) {
      throw new Error(`modules: the public event "${value.type}" of "${module}" is described by "${value.description}", which its messages do not have`);
    }
    orders.set(value.type, value.order);
  }
  return byOrder(all.values());
}

/** Every module's counters, in list order; a counter's name two modules declare stops the start. */
export function collectCounters(modules: readonly GatehouseModule[]): CounterDefinition[] {
  return [...claimed<CounterDefinition>('counter', modules.map((module) => [module.name, (module.counters ?? []).map((counter) => [counter.metric, counter] as const)] as const)).values()].map((entry) => entry.value);
}

/** How every module's events count, in list order. */
export function collectCountedEvents(modules: readonly GatehouseModule[]): CountedEvent[] {
  return modules.flatMap((module) => module.countedEvents ?? []);
}

/** Every module's mail templates, by name. */
export function collectMailTemplates(modules: readonly GatehouseModule[]): ReadonlyMap<string, MailTemplate> {
  const all = claimed<MailTemplate>('mail template', modules.map((module) => [module.name, Object.entries(module.mailTemplates?.(modules) ?? {}) as Array<[string, MailTemplate]>] as const));
  return new Map([...all].map(([name, { value }]) => [name, value]));
}

/** The page a module declares for taking an account back (`accountRecoveryPage`), or null; two declaring one stop the start. */
export function collectAccountRecoveryPage(modules: readonly GatehouseModule[]): `/${string}` | null {
  const all = claimed<`/${string}`>('account recovery page', modules.map((module) => [module.name, module.accountRecoveryPage === undefined ? [] : [['', module.accountRecoveryPage] as const]] as const));
  return all.get('')?.value ?? null;
}

/** Every change a security notice tells of: the module that declares it (whose catalogs have its texts), by name. */
export function collectSecurityNotices(modules: readonly GatehouseModule[]): ReadonlyMap<string, string> {
  const all = claimed<string>('security change', modules.map((module) => [module.name, (module.securityNotices ?? []).map((change) => [change, change] as const)] as const));
  return new Map([...all].map(([change, { module }]) => [change, module]));
}
