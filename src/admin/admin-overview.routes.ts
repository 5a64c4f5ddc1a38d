/**
 * `/admin/overview`: what an operator looks at first. From the audit log: sign-ins and failed
 * sign-ins per day, sign-ins by method (password, passkey, each OAuth provider, e-mail, SSO…),
 * active users (distinct people signing in, per day and over 30 days), new accounts, passwords
 * locked after failures; from the accounts: how many have a second factor; from the metrics this
 * process keeps: rate-limit refusals by limiter; from the outboxes: mail and webhook deliveries
 * waiting or failed. Server-drawn bar charts, each with the same numbers in a table. Grouped queries
 * over the audit log's `(type, created_at)` index and bounded counts. ADMIN only.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Clock } from '../lib/clock.ts';
import type { UserService } from '../users/user.service.ts';
import type { UserCondition } from '../users/user.store.ts';
import type { PageRenderer } from '../web/render.ts';
import type { AdminService } from './admin.service.ts';
import { alertsOf, forAdmins, hidden, pageQuery } from './admin-page-kit.ts';
import type { AdminPages } from './admin-pages.types.ts';
import { barChartSvg, SERIES_CLASSES, type Chart } from './charts.ts';

export const ADMIN_OVERVIEW_PAGE = '/admin/overview';
/** The days the charts show, today included. */
export const OVERVIEW_DAYS = 14;
/** The window of "active users" as one number. */
export const ACTIVE_DAYS = 30;
const DAY_MS = 86_400_000;
const CHARTED_TYPES = ['signin.success', 'signin.failure', 'user.created', 'user.password_locked'] as const;
/** The first-factor kinds with a name in the catalogs, in the order their series come; others follow by name. */
const KNOWN_METHODS = ['password', 'passkey', 'oauth', 'email', 'sso'] as const;

export interface AdminOverviewOptions {
  admin: AdminService;
  users: UserService;
  pages: PageRenderer<AdminPages>;
  clock: Clock;
  /** The condition "has a second factor" (the mfa module's); null without that module. */
  secondFactor: ((isPresent: boolean) => UserCondition) | null;
  /** Rate-limit refusals by limiter since this process started; null when metrics are off (nothing counts them). */
  refusals: (() => Promise<Array<{ limiter: string; count: number }>>) | null;
  /** The configured OAuth providers' names, by id (a sign-in's `provider`). */
  providerNames: ReadonlyMap<string, string>;
}

type OverviewChart = Chart & { labelHeading: string; emptyText?: string };

export const adminOverviewRoutes: FastifyPluginAsyncZod<AdminOverviewOptions> = async (app, options) => {
  const { admin, users, pages, clock } = options;
  app.get(ADMIN_OVERVIEW_PAGE, { config: forAdmins, schema: { ...hidden, querystring: z.object(pageQuery) } }, async (request, reply) => {
    const { i18n } = reply.page;
    const format = (value: number) => value.toLocaleString(i18n.locale);
    const today = Math.floor(clock() / DAY_MS);
    const days = Array.from({ length: OVERVIEW_DAYS }, (_, index) => today - OVERVIEW_DAYS + 1 + index);
    const from = days[0]! * DAY_MS;
    const [counts, byMethod, active, activeLong, accounts, enabled, withFactor, refusals, backlogs] = await Promise.all([
      admin.countEventsPerDay(CHARTED_TYPES, from),
      admin.countEventsPerDayBy('signin.success', ['method', 'provider'], from),
      admin.countDistinctUsersPerDay('signin.success', from),
      admin.countDistinctUsersPerDay('signin.success', (today - ACTIVE_DAYS + 1) * DAY_MS),
      users.countUsers(),
      users.countUsers({ disabled: false }),
      options.secondFactor === null ? Promise.resolve(null) : users.countUsers({ disabled: false, conditions: [options.secondFactor(true)] }),
      options.refusals === null ? Promise.resolve(null) : options.refusals(),
      admin.outboxBacklogs(),
    ]);
    const perDay = (type: string) => days.map((day) => counts.find((row) => row.type === type && row.day === day)?.count ?? 0);
    const dayLabel = new Intl.DateTimeFormat(i18n.locale, { month: 'short', day: 'numeric', timeZone: 'UTC' });
    const labels = days.map((day) => dayLabel.format(new Date(day * DAY_MS)));
    const total = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0);
    const signIns = perDay('signin.success');
    const failures = perDay('signin.failure');
    const created = perDay('user.created');
    const locked = perDay('user.password_locked');
    const dayHeading = i18n.t('admin.overview.day');

    // Sign-ins by method: an OAuth sign-in counts under its provider's name.
    const methodKey = ([method, provider]: Array<string | null>) => (method === 'oauth' && provider !== null ? `oauth:${provider}` : (method ?? 'unknown'));
    const methodKeys = [...new Set(byMethod.map((row) => methodKey(row.keys)))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    const methodName = (key: string) => {
      if (key.startsWith('oauth:')) return i18n.t('admin.overview.method.provider', { provider: options.providerNames.get(key.slice(6)) ?? key.slice(6) });
      return (KNOWN_METHODS as readonly string[]).includes(key) ? i18n.t(`admin.overview.method.${key}`) : i18n.t('admin.overview.method.other', { method: key });
    };
    const methodSeries = methodKeys.map((key, index) => ({
      name: methodName(key),
      className: SERIES_CLASSES[index % SERIES_CLASSES.length]!,
      values: days.map((day) => byMethod.filter((row) => row.day === day && methodKey(row.keys) === key).reduce((sum, row) => sum + row.count, 0)),
    }));
    const activePerDay = days.map((day) => active.perDay.find((row) => row.day === day)?.count ?? 0);

    const backlogLabels = backlogs.map((backlog) => i18n.t(`admin.overview.queue.${backlog.queue}`));
    const charts: OverviewChart[] = [
      {
        id: 'chart-signins',
        title: i18n.t('admin.overview.chart.signins', { days: OVERVIEW_DAYS }),
        labels,
        labelHeading: dayHeading,
        series: [
          { name: i18n.t('admin.overview.series.signins'), className: 'chart-a', values: signIns },
          { name: i18n.t('admin.overview.series.failures'), className: 'chart-b', values: failures },
        ],
      },
      {
        id: 'chart-methods',
        title: i18n.t('admin.overview.chart.methods', { days: OVERVIEW_DAYS }),
        labels,
        labelHeading: dayHeading,
        isStacked: true,
        series: methodSeries,
        ...(methodSeries.length === 0 && { emptyText: i18n.t('admin.overview.empty.methods', { days: OVERVIEW_DAYS }) }),
      },
      { id: 'chart-active', title: i18n.t('admin.overview.chart.active', { days: OVERVIEW_DAYS }), labels, labelHeading: dayHeading, series: [{ name: i18n.t('admin.overview.series.active'), className: 'chart-c', values: activePerDay }] },
      { id: 'chart-created', title: i18n.t('admin.overview.chart.created', { days: OVERVIEW_DAYS }), labels, labelHeading: dayHeading, series: [{ name: i18n.t('admin.overview.series.created'), className: 'chart-a', values: created }] },
      { id: 'chart-locked', title: i18n.t('admin.overview.chart.locked', { days: OVERVIEW_DAYS }), labels, labelHeading: dayHeading, series: [{ name: i18n.t('admin.overview.series.locked'), className: 'chart-b', values: locked }] },
      {
        id: 'chart-refusals',
        title: i18n.t('admin.overview.chart.refusals'),
        labels: (refusals ?? []).map((row) => row.limiter),
        labelHeading: i18n.t('admin.overview.limiter'),
        series: [{ name: i18n.t('admin.overview.series.refusals'), className: 'chart-d', values: (refusals ?? []).map((row) => row.count) }],
        ...(refusals === null && { emptyText: i18n.t('admin.overview.empty.refusalsOff') }),
        ...(refusals !== null && refusals.length === 0 && { emptyText: i18n.t('admin.overview.empty.refusals') }),
      },
      {
        id: 'chart-backlogs',
        title: i18n.t('admin.overview.chart.backlogs'),
        labels: backlogLabels,
        labelHeading: i18n.t('admin.overview.queue'),
        series: [
          { name: i18n.t('admin.overview.series.pending'), className: 'chart-a', values: backlogs.map((backlog) => backlog.pending) },
          { name: i18n.t('admin.overview.series.failed'), className: 'chart-b', values: backlogs.map((backlog) => backlog.failed) },
        ],
        ...(backlogs.length === 0 && { emptyText: i18n.t('admin.overview.empty.backlogs') }),
      },
    ];
    const adoption = withFactor === null ? null : enabled === 0 ? 0 : Math.round((withFactor / enabled) * 100);
    const figures = [
      { label: i18n.t('admin.overview.figure.users'), value: format(accounts) },
      { label: i18n.t('admin.overview.figure.signins', { days: OVERVIEW_DAYS }), value: format(total(signIns)) },
      { label: i18n.t('admin.overview.figure.failures', { days: OVERVIEW_DAYS }), value: format(total(failures)) },
      { label: i18n.t('admin.overview.figure.active', { days: ACTIVE_DAYS }), value: format(activeLong.total) },
      { label: i18n.t('admin.overview.figure.created', { days: OVERVIEW_DAYS }), value: format(total(created)) },
      { label: i18n.t('admin.overview.figure.locked', { days: OVERVIEW_DAYS }), value: format(total(locked)) },
      ...(adoption === null || withFactor === null
        ? []
        : [{ label: i18n.t('admin.overview.figure.adoption'), value: i18n.t('admin.overview.adoption', { percent: adoption, count: withFactor, total: enabled }), isText: true }]),
      ...backlogs.map((backlog) => ({ label: i18n.t(`admin.overview.figure.backlog.${backlog.queue}`), value: format(backlog.pending) })),
    ];
    return pages.send(reply, 'admin-overview', {
      title: i18n.t('admin.overview.title'),
      isFull: true,
      section: 'overview',
      alerts: alertsOf(request.query, i18n),
      figures,
      charts: charts.map((chart) => ({ ...chart, svg: chart.emptyText === undefined ? barChartSvg(chart) : '' })),
    });
  });
};

/** Known methods first, in their order; then the providers (`oauth:…`) where `oauth` stands; then the rest. */
function rank(key: string): number {
  const base = key.startsWith('oauth:') ? 'oauth' : key;
  const index = (KNOWN_METHODS as readonly string[]).indexOf(base);
  return index === -1 ? KNOWN_METHODS.length : index;
}
