/**
 * Data export (issue 36): a person downloads everything Gatehouse holds about them, as one JSON
 * document (data-export.service.ts; docs/guides/data-export.md): from the dashboard ("Download
 * your data"), `GET /api/auth/account/export`, and, for administrators, `GET
 * /api/admin/users/:id/export` and `gatehouse users export`. What it holds is what every module
 * declares of a user (`userData.export`, module.ts), gathered by account deletion's
 * `exportUserData`; this module names no other.
 *
 * Listed before account deletion so that its dashboard section comes first; it reads that
 * module's service when an export is made (every module's services are built by then).
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import type { DataExportService } from './data-export.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { dataExportRoutes, EXPORT_PAGE } from './data-export.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    dataExport: DataExportService;
  }
}

const AUDIT_EVENTS = ['account.exported'] as const;
type DataExportAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends DataExportAuditEvents {}
}

const pages = createPageRenderer<{ 'data-export-dashboard-section': { href: string } }>(templatesIn(join(import.meta.dirname, 'templates')));

export const dataExportModule = defineModule({
  name: 'data-export',
  messages: readMessages(join(import.meta.dirname, 'messages')),
  auditEvents: AUDIT_EVENTS,
  // The service's code is imported at its first export (lib/deferred-service.ts).
  provide({ services, clock }) {
    const { audit } = services;
    // Account deletion is listed after this module: its service is asked for at the export, not now.
    const accountDeletion = { exportUserData: (userId: string) => services.accountDeletion.exportUserData(userId) };
    return { dataExport: deferredService(async () => (await import('./data-export.service.ts')).createDataExportService({ accountDeletion, audit, clock })) };
  },
  pageSections: () => [
    {
      page: 'dashboard',
      render: async ({ userId, page }) => (userId === null ? null : pages.html(page, 'data-export-dashboard-section', { title: '', href: EXPORT_PAGE })),
    },
  ],
  routes: [
    {
      scope: 'api',
      register: (app, { services }) => app.register(dataExportRoutes, { dataExport: services.dataExport, rateLimiters: services.rateLimiters }),
    },
  ],
});
