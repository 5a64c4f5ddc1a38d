/** The audit log: every security-relevant event (the domain events modules subscribe to), and its retention. */
import { defineModule } from '../module.ts';
import { createAuditService, type AuditService } from './audit.service.ts';
import { createAuditRetentionJob, type AuditRetentionJob } from './audit-retention.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    audit: AuditService;
    auditRetention: AuditRetentionJob;
  }
}

export const auditModule = defineModule({
  name: 'audit',
  provide({ db, clock, logger, config, eventSubscriptions }) {
    const audit = createAuditService({ db, clock, logger, subscriptions: eventSubscriptions });
    return { audit, auditRetention: createAuditRetentionJob({ audit, clock, logger, retentionMs: config.audit.retentionSeconds * 1000 }) };
  },
  jobs: (services) => [services.auditRetention],
});
