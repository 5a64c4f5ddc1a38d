/**
 * `/admin/overview`: what an operator looks at first, from the audit log: sign-ins and failed
 * sign-ins per day, new accounts per day, passwords locked after failures, as server-drawn bar
 * charts with the same numbers in tables, and the number of accounts. One grouped query over the
 * `(type, created_at)` index for every chart, and one count. ADMIN only.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Clock } from '../lib/clock.ts';
import type { UserService } from '../users/user.service.ts';
import type { PageRenderer } from '../web/render.ts';
import type { AdminService } from './admin.service.ts';
import { alertsOf, forAdmins, hidden, pageQuery } from './admin-page-kit.ts';
import type { AdminPages } from './admin-pages.types.ts';
import { barChartSvg } from './charts.ts';

export const ADMIN_OVERVIEW_PAGE = '/admin/overview';
/** The days the charts show, today included. */
export const OVERVIEW_DAYS = 14;
const DAY_MS = 86_400_000;
const CHARTED_TYPES = ['signin.success', 'signin.failure', 'user.created', 'user.password_locked'] as const;

export interface AdminOverviewOptions {
  admin: AdminService;
  users: UserService;
  pages: PageRenderer<AdminPages>;
  clock: Clock;
}

export const adminOverviewRoutes: FastifyPluginAsyncZod<AdminOverviewOptions> = async (app, { admin, users, pages, clock }) => {
  app.get(ADMIN_OVERVIEW_PAGE, { config: forAdmins, schema: { ...hidden, querystring: z.object(pageQuery) } }, async (request, reply) => {
    const { i18n } = reply.page;
    const today = Math.floor(clock() / DAY_MS);
    const days = Array.from({ length: OVERVIEW_DAYS }, (_, index) => today - OVERVIEW_DAYS + 1 + index);
    const counts = await admin.countEventsPerDay(CHARTED_TYPES, days[0]! * DAY_MS);
    const perDay = (type: string) => days.map((day) => counts.find((row) => row.type === type && row.day === day)?.count ?? 0);
    const dayLabel = new Intl.DateTimeFormat(i18n.locale, { month: 'short', day: 'numeric', timeZone: 'UTC' });
    const labels = days.map((day) => dayLabel.format(new Date(day * DAY_MS)));
    const total = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0);
    const signIns = perDay('signin.success');
    const failures = perDay('signin.failure');
    const created = perDay('user.created');
    const locked = perDay('user.password_locked');
    const charts = [
      {
        id: 'chart-signins',
        title: i18n.t('admin.overview.chart.signins', { days: OVERVIEW_DAYS }),
        labels,
        series: [
          { name: i18n.t('admin.overview.series.signins'), className: 'chart-a', values: signIns },
          { name: i18n.t('admin.overview.series.failures'), className: 'chart-b', values: failures },
        ],
      },
      { id: 'chart-created', title: i18n.t('admin.overview.chart.created', { days: OVERVIEW_DAYS }), labels, series: [{ name: i18n.t('admin.overview.series.created'), className: 'chart-a', values: created }] },
      { id: 'chart-locked', title: i18n.t('admin.overview.chart.locked', { days: OVERVIEW_DAYS }), labels, series: [{ name: i18n.t('admin.overview.series.locked'), className: 'chart-b', values: locked }] },
    ];
    return pages.send(reply, 'admin-overview', {
      title: i18n.t('admin.overview.title'),
      isFull: true,
      section: 'overview',
      alerts: alertsOf(request.query, i18n),
      figures: [
        { label: i18n.t('admin.overview.figure.users'), value: await users.countUsers() },
        { label: i18n.t('admin.overview.figure.signins', { days: OVERVIEW_DAYS }), value: total(signIns) },
        { label: i18n.t('admin.overview.figure.failures', { days: OVERVIEW_DAYS }), value: total(failures) },
        { label: i18n.t('admin.overview.figure.created', { days: OVERVIEW_DAYS }), value: total(created) },
        { label: i18n.t('admin.overview.figure.locked', { days: OVERVIEW_DAYS }), value: total(locked) },
      ],
      charts: charts.map((chart) => ({ ...chart, svg: barChartSvg(chart) })),
    });
  });
};
