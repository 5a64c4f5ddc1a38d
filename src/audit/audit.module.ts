/** The audit log: every security-relevant event (the domain events modules subscribe to), and its retention. */
import { collectAuditEventOwners, defineModule } from '../module.ts';
import * as auditEvents from './migrations/0002-audit-events.ts';
import * as auditEventsEmail from './migrations/20261130-audit-events-email.ts';
import { createAuditService, type AuditService } from './audit.service.ts';
import { createAuditRetentionJob, type AuditRetentionJob } from './audit-retention.ts';
import { auditUserData } from './audit.user-data.ts';

declare module '../config.ts' {
  interface Config {
    readonly audit: {
      /** Audit events older than this are deleted by a background job. */
      readonly retentionSeconds: number;
    };
  }
}

declare module '../module.ts' {
  interface ServiceRegistry {
    audit: AuditService;
    auditRetention: AuditRetentionJob;
  }
}

export const auditModule = defineModule({
  name: 'audit',
  migrations: { '0002-audit-events': auditEvents, '20261130-audit-events-email': auditEventsEmail },
  config: (read) => ({ audit: { retentionSeconds: read.duration('AUDIT_RETENTION', 90 * 86_400) } }),
  provide({ db, clock, logger, config, eventSubscriptions, modules }) {
    const audit = createAuditService({ db, clock, logger, subscriptions: eventSubscriptions, eventOwners: collectAuditEventOwners(modules) });
    return { audit, auditRetention: createAuditRetentionJob({ audit, clock, logger, retentionMs: config.audit.retentionSeconds * 1000 }) };
  },
  jobs: (services) => [services.auditRetention],
  // The events about a user; a deleted user's address, network addresses and browsers are erased from them.
  userData: ({ audit }) => auditUserData(audit),
});
