/**
 * The admin area's lists: the users (search, filters, sort, keyset pages, the bulk form) and the
 * audit log (readable rows, filters by address, type, outcome and dates, CSV and JSON export of the
 * filtered view). ADMIN only, like every `/admin` route; hidden from the OpenAPI document.
 */
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuditEvent } from '../audit/audit.service.ts';
import type { EventFilter } from '../audit/audit.store.ts';
import { encodeCursor, type KeysetPosition } from '../lib/keyset-cursor.ts';
import type { UserService } from '../users/user.service.ts';
import type { UserCondition } from '../users/user.store.ts';
import type { Clock } from '../lib/clock.ts';
import { isValidRole } from '../users/user.service.ts';
import { queryText } from '../web/page-query.ts';
import type { PageLanguage, PageRenderer } from '../web/render.ts';
import { formatTime } from '../web/time-text.ts';
import type { AdminService } from './admin.service.ts';
import { addressesOf, csvField, eventWords, EXPORT_COLUMNS, exportRecord, toEventFilter, toReadableEvent, type AdminAuditView, type EventFilterText } from './admin-events.ts';
import {
  ADMIN_BULK,
  ADMIN_EVENTS_EXPORT,
  ADMIN_EVENTS_PAGE,
  ADMIN_NEW_USER_PAGE,
  ADMIN_PAGE,
  ADMIN_PAGE_SIZE,
  ADMIN_USERS_PAGE,
  adminUserPage,
  alertsOf,
  cursorQuery,
  forAdmins,
  hidden,
  pageQuery,
  pageUrl,
  positionOf,
} from './admin-page-kit.ts';
import { adminError } from './admin-pages.messages.ts';
import type { AdminPages } from './admin-pages.types.ts';

interface OrganizationChoice {
  readonly id: string;
  readonly name: string;
  readonly slug: string;
}

export interface AdminListOptions {
  admin: AdminService;
  /** The log's event types and their owners, and the last-sign-in condition. */
  audit: AdminAuditView;
  users: UserService;
  pages: PageRenderer<AdminPages>;
  clock: Clock;
  /** The condition "has / has no second factor" (the mfa module's); null: the filter is not offered. */
  secondFactor: ((isPresent: boolean) => UserCondition) | null;
  /** The condition "is a member of the organization" (the organizations module's); null: not offered. */
  memberOf: ((organizationId: string) => UserCondition) | null;
  /** The organizations the filter suggests (the newest), and any one by id or slug, however old. */
  organizations: {
    suggested(): Promise<ReadonlyArray<OrganizationChoice>>;
    find(idOrSlug: string): Promise<OrganizationChoice | null>;
  } | null;
}

/** The last-sign-in filter's choices: signed in within N days, or not. */
const SIGN_IN_CHOICES = ['within7', 'within30', 'within90', 'not7', 'not30', 'not90'] as const;
type SignInChoice = (typeof SIGN_IN_CHOICES)[number];
const DAY_MS = 86_400_000;

/** The most events one export holds; a larger view is cut there (the file says so in its last line or field). */
export const EXPORT_CAP = 10_000;
const EXPORT_BATCH = 500;

const choice = <T extends string>(values: readonly T[]) => queryText(20).transform((value) => (values as readonly (string | undefined)[]).includes(value) ? (value as T) : undefined);

const userListQuery = z.object({
  query: queryText(200),
  role: queryText(64),
  status: choice(['active', 'disabled'] as const),
  verified: choice(['unverified'] as const),
  factor: choice(['with', 'without'] as const),
  org: queryText(64),
  signin: choice(SIGN_IN_CHOICES),
  sort: choice(['newest', 'oldest'] as const),
  cursor: cursorQuery,
  ...pageQuery,
});

const eventQuery = {
  email: queryText(320),
  type: queryText(64),
  outcome: choice(['success', 'failure'] as const),
  from: queryText(10),
  to: queryText(10),
};

export const adminListRoutes: FastifyPluginAsyncZod<AdminListOptions> = async (app, { admin, audit, users, pages, clock, secondFactor, memberOf, organizations }) => {
  // The users' list has its own address too (the overview may take /admin one day); one page either way.
  app.get(ADMIN_USERS_PAGE, { config: forAdmins, schema: { ...hidden, querystring: userListQuery } }, async (request, reply) => listUsers(request.query, reply.page, ADMIN_USERS_PAGE).then((model) => pages.send(reply, 'admin-users', model)));
  app.get(ADMIN_PAGE, { config: forAdmins, schema: { ...hidden, querystring: userListQuery } }, async (request, reply) => listUsers(request.query, reply.page, ADMIN_PAGE).then((model) => pages.send(reply, 'admin-users', model)));

  async function listUsers(query: z.infer<typeof userListQuery>, page: { i18n: PageLanguage }, path: string) {
    const { i18n } = page;
    const { cursor, notice, error, count, ...filters } = query;
    const before = positionOf(cursor);
    const alerts = alertsOf({ notice, error, count }, i18n);
    // A cursor we did not make (edited, or from another build): the list starts again from the top.
    if (before === null) alerts.push(adminError('INVALID_CURSOR', i18n));
    const role = filters.role !== undefined && isValidRole(filters.role.toUpperCase()) ? filters.role.toUpperCase() : undefined;
    // The one asked for is looked up alone: the suggestions are the newest few, and any organization may be filtered by.
    const [found, suggested] = await Promise.all([
      memberOf !== null && organizations !== null && filters.org !== undefined ? organizations.find(filters.org) : null,
      organizations === null ? [] : organizations.suggested(),
    ]);
    const org = found ?? undefined;
    if (filters.org !== undefined && memberOf !== null && org === undefined) alerts.push(adminError('UNKNOWN_ORGANIZATION', i18n));
    const orgs = org !== undefined && !suggested.some((candidate) => candidate.id === org.id) ? [org, ...suggested] : suggested;
    const factor = secondFactor === null ? undefined : filters.factor;
    const conditions: UserCondition[] = [
      ...(factor !== undefined ? [secondFactor!(factor === 'with')] : []),
      ...(org !== undefined ? [memberOf!(org.id)] : []),
      ...(filters.signin !== undefined ? [lastSignInCondition(filters.signin)] : []),
    ];
    const result = await users.listUsers({
      ...(filters.query !== undefined && { query: filters.query }),
      ...(role !== undefined && { role }),
      ...(filters.status !== undefined && { disabled: filters.status === 'disabled' }),
      ...(filters.verified === 'unverified' && { unverified: true }),
      ...(filters.sort === 'oldest' && { oldestFirst: true }),
      ...(conditions.length > 0 && { conditions }),
      ...(before && { before }),
      limit: ADMIN_PAGE_SIZE,
    });
    const kept = { query: filters.query, role, status: filters.status, verified: filters.verified, factor, org: org?.slug, signin: filters.signin, sort: filters.sort };
    const isFiltered = Object.values(kept).some((value) => value !== undefined);
    return {
      title: i18n.t('admin.users.title'),
      isFull: true,
      section: 'users' as const,
      alerts,
      query: filters.query ?? '',
      // What the search asks for, said back in words (its syntax's quotes and stars left out).
      search: result.search,
      filter: { role: role ?? '', status: filters.status ?? '', verified: filters.verified ?? '', factor: factor ?? '', org: org?.slug ?? '', signin: filters.signin ?? '', sort: filters.sort ?? 'newest' },
      canFilterFactor: secondFactor !== null,
      organizations: memberOf === null ? [] : orgs.map((candidate) => ({ slug: candidate.slug, name: candidate.name })),
      signInChoices: SIGN_IN_CHOICES.map((value) => ({ value, label: i18n.t(`admin.users.filter.signin.${value.startsWith('not') ? 'not' : 'within'}`, { days: Number(value.replace(/\D/g, '')) }) })),
      isFiltered,
      listHref: path,
      newUserHref: ADMIN_NEW_USER_PAGE,
      bulkAction: ADMIN_BULK,
      users: result.users.map((user) => ({
        id: user.id,
        href: adminUserPage(user.id),
        name: user.name,
        email: user.email,
        roles: user.roles,
        isDisabled: user.disabledAt !== null,
        isEmailVerified: user.emailVerifiedAt !== null,
        createdAt: formatTime(user.createdAt, i18n.locale),
      })),
      nextHref: result.next === null ? null : pageUrl(path, { ...kept, cursor: encodeCursor(result.next) }),
      firstHref: before ? pageUrl(path, kept) : null,
    };
  }

  /** "Signed in within N days" or not, from the audit log's sign-ins (kept for AUDIT_RETENTION). */
  function lastSignInCondition(choice: SignInChoice): UserCondition {
    const days = Number(choice.replace(/\D/g, ''));
    return audit.hasEventSince('signin.success', clock() - days * DAY_MS, choice.startsWith('within'));
  }

  /** The filter of the log's query, the texts to show back, and whether a date was refused. */
  async function eventFilterOf(query: Partial<Record<keyof typeof eventQuery, string | undefined>>) {
    const text: EventFilterText = {
      email: query.email ?? '',
      type: query.type !== undefined && (audit.eventTypes as readonly string[]).includes(query.type) ? query.type : '',
      outcome: (query.outcome as EventFilterText['outcome'] | undefined) ?? '',
      from: query.from ?? '',
      to: query.to ?? '',
    };
    const filter = await toEventFilter(text, audit.eventTypes, users.findUserByEmail);
    return { text, filter, isBadType: query.type !== undefined && text.type === '' };
  }

  app.get(
    ADMIN_EVENTS_PAGE,
    { config: forAdmins, schema: { ...hidden, querystring: z.object({ ...eventQuery, userId: queryText(64), cursor: cursorQuery, ...pageQuery }) } },
    async (request, reply) => {
      const { cursor, notice, error, count, userId, ...query } = request.query;
      const { i18n } = reply.page;
      const { text, filter: typed, isBadType } = await eventFilterOf(query);
      // A link may name the account by id (the API's filter, older links): kept, alongside the form's fields.
      const filter = typed === null ? null : { ...typed, ...(userId !== undefined && { userId }) };
      const before = positionOf(cursor);
      const alerts = alertsOf({ notice, error, count }, i18n);
      if (isBadType) alerts.push(adminError('UNKNOWN_EVENT_TYPE', i18n));
      if (filter === null) alerts.push(adminError('INVALID_DATE', i18n));
      if (before === null) alerts.push(adminError('INVALID_CURSOR', i18n));
      const page = await admin.listEvents({ ...(filter ?? {}), ...(before && { before }), limit: ADMIN_PAGE_SIZE });
      const addresses = await addressesOf(page.events, users.findUsersByIds);
      const kept: EventFilterText & Record<string, string> = { ...(userId !== undefined && { userId }), ...text, ...(filter === null && { from: '', to: '' }) };
      const isFiltered = Object.values(kept).some((value) => value !== '');
      return pages.send(reply, 'admin-events', {
        title: i18n.t('admin.events.title'),
        isFull: true,
        section: 'events',
        alerts,
        filter: kept,
        types: audit.eventTypes.map((type) => ({ value: type, label: eventWords(type, i18n, audit.eventOwners) })),
        isFiltered,
        events: page.events.map((event) => toReadableEvent(event, addresses, i18n, adminUserPage, audit.eventOwners)),
        exportCsvHref: pageUrl(ADMIN_EVENTS_EXPORT, { ...kept, format: 'csv' }),
        exportJsonHref: pageUrl(ADMIN_EVENTS_EXPORT, { ...kept, format: 'json' }),
        nextHref: page.next === null ? null : pageUrl(ADMIN_EVENTS_PAGE, { ...kept, cursor: encodeCursor(page.next) }),
        firstHref: before ? pageUrl(ADMIN_EVENTS_PAGE, kept) : null,
      });
    },
  );

  /** The filtered view, newest first, in batches over the keyset, at most EXPORT_CAP events. */
  async function* eventsOf(filter: EventFilter): AsyncGenerator<AuditEvent[]> {
    let before: KeysetPosition | undefined;
    let sent = 0;
    while (sent < EXPORT_CAP) {
      const page = await admin.listEvents({ ...filter, ...(before && { before }), limit: Math.min(EXPORT_BATCH, EXPORT_CAP - sent) });
      if (page.events.length > 0) yield page.events;
      sent += page.events.length;
      if (page.next === null) return;
      before = page.next;
    }
  }

  app.get(
    ADMIN_EVENTS_EXPORT,
    { config: forAdmins, schema: { ...hidden, querystring: z.object({ ...eventQuery, userId: queryText(64), format: choice(['csv', 'json'] as const) }) } },
    async (request, reply) => {
      const { format = 'csv', userId, ...query } = request.query;
      const { filter: typed } = await eventFilterOf(query);
      const filter = typed === null ? null : { ...typed, ...(userId !== undefined && { userId }) };
      if (filter === null) return reply.redirect(pageUrl(ADMIN_EVENTS_PAGE, { ...query, from: undefined, to: undefined, error: 'INVALID_DATE' }), 303);
      const { i18n } = reply.page;
      async function* lines(): AsyncGenerator<string> {
        let isFirst = true;
        if (format === 'csv') yield `${EXPORT_COLUMNS.join(',')}\r\n`;
        else yield '{"events":[';
        for await (const batch of eventsOf(filter!)) {
          const addresses = await addressesOf(batch, users.findUsersByIds);
          let chunk = '';
          for (const event of batch) {
            const record = exportRecord(event, toReadableEvent(event, addresses, i18n, adminUserPage, audit.eventOwners));
            if (format === 'csv') chunk += `${EXPORT_COLUMNS.map((column) => csvField(record[column])).join(',')}\r\n`;
            else chunk += `${isFirst ? '' : ','}${JSON.stringify({ ...record, details: event.details })}`;
            isFirst = false;
          }
          yield chunk;
        }
        if (format === 'json') yield `],"cap":${EXPORT_CAP}}\n`;
      }
      const stamp = new Date().toISOString().slice(0, 10);
      return reply
        .header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="gatehouse-audit-${stamp}.${format}"`)
        .header('cache-control', 'no-store')
        .send(Readable.from(lines()));
    },
  );
};
