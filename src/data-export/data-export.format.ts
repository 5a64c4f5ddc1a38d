/**
 * The export document's name and its file's: what the routes declare and answer with as they are
 * registered, kept apart from the service (data-export.service.ts, which re-exports them) so that
 * the routes load without it: the service's code is imported at its first export.
 */

/** The `format` of every export document (docs/guides/data-export.md). */
export const EXPORT_FORMAT = 'gatehouse.account-export.v1';

/** The file name a download is offered under: `gatehouse-export-2026-11-29.json`. */
export function exportFileName(exportedAt: string): string {
  return `gatehouse-export-${exportedAt.slice(0, 10)}.json`;
}
