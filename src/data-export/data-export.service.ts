/**
 * A person's data export: everything Gatehouse holds about one user, as one JSON document of a
 * stable shape (`gatehouse.account-export.v1`, see docs/guides/data-export.md):
 *
 *   { format, exportedAt, user: { id, email, name, … }, modules: { <module name>: { … } } }
 *
 * `modules` is what every module declares it holds of a user (`userData.export`, module.ts),
 * gathered by account deletion's `exportUserData`, which names no module; each module exports
 * what the user may see of theirs, never a secret or a hash. Every export is audited
 * (`account.exported`, about the user, with the one who asked as actor).
 */
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { AccountDeletionService } from '../account-deletion/account-deletion.service.ts';
import type { Clock } from '../lib/clock.ts';
import { isoTime } from '../lib/clock.ts';
import { EXPORT_FORMAT } from './data-export.format.ts';

// Declared apart, for the routes to use without loading this file.
export { EXPORT_FORMAT, exportFileName } from './data-export.format.ts';

export interface AccountExport {
  readonly format: typeof EXPORT_FORMAT;
  readonly exportedAt: string;
  /** The account itself (the users module's part, lifted here): id, address, name, roles, dates. */
  readonly user: Record<string, unknown>;
  /** Each module's part by its name, in module order (those holding nothing of the user left out). */
  readonly modules: Readonly<Record<string, Record<string, unknown>>>;
}

export type DataExportService = ReturnType<typeof createDataExportService>;

export function createDataExportService(deps: { accountDeletion: Pick<AccountDeletionService, 'exportUserData'>; audit: Pick<AuditService, 'record'>; clock: Clock }) {
  return {
    /**
     * The export of `userId`, recorded as `account.exported` (`by`: the user themselves, an
     * administrator, or the command line); null for an unknown user.
     */
    async exportAccount(userId: string, options: { source: AuditSource; by: 'self' | 'admin' | 'cli' }): Promise<AccountExport | null> {
      const data = await deps.accountDeletion.exportUserData(userId);
      if (data === null) return null;
      const { users: usersPart, ...modules } = data;
      const user = (usersPart?.account ?? { id: userId }) as Record<string, unknown>;
      const exportedAt = isoTime(deps.clock());
      await deps.audit.record({ type: 'account.exported', userId, source: options.source, details: { by: options.by, modules: Object.keys(modules).length } });
      return { format: EXPORT_FORMAT, exportedAt, user, modules };
    },
  };
}
