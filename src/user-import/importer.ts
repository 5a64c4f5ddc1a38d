/**
 * `gatehouse import`: reads a file entry by entry (readers.ts), judges each (import-record.ts) and
 * writes batches of BATCH_SIZE in one transaction each (import.store.ts). Memory stays constant: one
 * batch, the counters, and the report, which is written as it goes. A re-run of the same file is a
 * resume: an address already present is skipped (or updated, or refused: `onConflict`).
 * Nothing here sees a password; a hash is never in a message, a refusal or the report.
 */
import type { KeyObject } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { FORMATS, type FormatOptions } from './formats.ts';
import { toImportRow, type ImportRow, type Refusal, type RoleRules } from './import-record.ts';
import { findIdsByEmail, writeBatch } from './import.store.ts';
import { identityMatcher } from './identities.ts';
import { sealSecret } from '../mfa/secret-box.ts';
import type { OAuthProviderConfig } from '../oauth/oauth.config.ts';
import { deriveSecretKey } from '../lib/derive-key.ts';
import type { Services } from '../services.ts';

/** What an import writes with: the storage, its clock, the configured providers (linked identities) and the mfa module's TOTP sealing key. */
export interface ImportDeps {
  db: Db;
  clock: Clock;
  providers: readonly OAuthProviderConfig[];
  totpKey: KeyObject;
}

export const BATCH_SIZE = 500;

/** The purpose the mfa module derives its TOTP sealing key for (mfa.service.ts); an imported secret is sealed as an enrolled one is. */
export const TOTP_KEY_PURPOSE = 'gatehouse mfa totp-secret v1';

export type OnConflict = 'skip' | 'update' | 'fail';

export interface ImportOptions {
  format: string;
  dryRun: boolean;
  onConflict: OnConflict;
  roleRules: RoleRules;
  formatOptions: FormatOptions;
  /** Each refused row, as it is refused (the report). */
  onRefused(refusal: { line: number; reason: Refusal; field?: string }): void | Promise<void>;
  /** After each batch. */
  onProgress?(counts: ImportCounts): void;
}

export interface ImportCounts {
  read: number;
  created: number;
  updated: number;
  skipped: number;
  refused: number;
  refusedByReason: Partial<Record<Refusal, number>>;
  /** Imported (or, in a dry run, importable) password hashes by kind. */
  hashes: Record<string, number>;
  /** Linked identities, TOTP secrets and memberships imported (or, in a dry run, importable; before conflicts with present ones). */
  identities: number;
  totp: number;
  organizations: number;
  /** What the export had that was not imported: identities of no configured provider (or linked already), TOTP secrets the export lacks or Gatehouse's TOTP cannot use, memberships of organizations that do not exist here. */
  notImported: { identities: number; totp: number; organizations: number };
}

/** 0 everything imported or skipped; 3 some rows refused; 1 every row refused (or the file had none that could be read). */
export function exitCodeOf(counts: ImportCounts): 0 | 1 | 3 {
  if (counts.refused === 0) return 0;
  return counts.refused === counts.read ? 1 : 3;
}

/** The storage, the configured providers, and the key the mfa module seals TOTP secrets with (mfa.service.ts derives the same). */
export function importDeps(services: Services): ImportDeps {
  return { db: services.storage.db, clock: services.clock, providers: services.config.oauth.providers, totpKey: deriveSecretKey(services.config.authSecret, TOTP_KEY_PURPOSE) };
}

/** `input`: the file's bytes, or the location of the database a database format reads. */
export async function runImport(deps: ImportDeps, input: Readable | string, options: ImportOptions): Promise<ImportCounts> {
  const format = FORMATS[options.format];
  if (format === undefined) throw new Error(`unknown format ${options.format}`);
  const counts: ImportCounts = { read: 0, created: 0, updated: 0, skipped: 0, refused: 0, refusedByReason: {}, hashes: {}, identities: 0, totp: 0, organizations: 0, notImported: { identities: 0, totp: 0, organizations: 0 } };
  let batch: Array<{ line: number; row: ImportRow }> = [];

  const refuse = async (line: number, reason: Refusal, field?: string) => {
    counts.refused++;
    counts.refusedByReason[reason] = (counts.refusedByReason[reason] ?? 0) + 1;
    await options.onRefused({ line, reason, ...(field !== undefined && { field }) });
  };

  const flush = async () => {
    if (batch.length === 0) return;
    const pending = batch;
    batch = [];
    const existing = await findIdsByEmail(deps.db, pending.map(({ row }) => row.email));
    const created: ImportRow[] = [];
    const updated: Array<{ id: string; row: ImportRow }> = [];
    for (const { line, row } of pending) {
      const id = existing.get(row.email);
      if (id === undefined) created.push(row);
      else if (options.onConflict === 'skip') {
        counts.skipped++;
        continue;
      } else if (options.onConflict === 'fail') {
        await refuse(line, 'EMAIL_TAKEN', 'email');
        continue;
      } else updated.push({ id, row });
      if (row.hashKind !== null) counts.hashes[row.hashKind] = (counts.hashes[row.hashKind] ?? 0) + 1;
    }
    for (const row of [...created, ...updated.map((entry) => entry.row)]) {
      counts.identities += row.identities.length;
      counts.totp += row.totpSecret === null ? 0 : 1;
      counts.organizations += row.organizations.length;
    }
    if (!options.dryRun) {
      const leftOut = await writeBatch(deps.db, created, updated, deps.clock(), (secret, userId) => sealSecret(secret, deps.totpKey, userId));
      counts.identities -= leftOut.identitiesLeftOut;
      counts.notImported.identities += leftOut.identitiesLeftOut;
      counts.totp -= leftOut.totpLeftOut;
      counts.notImported.totp += leftOut.totpLeftOut;
      counts.organizations -= leftOut.membershipsLeftOut;
      counts.notImported.organizations += leftOut.membershipsLeftOut;
    }
    counts.created += created.length;
    counts.updated += updated.length;
    options.onProgress?.(counts);
  };

  const rules = { roles: options.roleRules, matchIdentity: identityMatcher(deps.providers) };
  const inBatch = new Set<string>();
  const entries = typeof input === 'string' ? format.readDatabase!(input) : format.read(input);
  for await (const entry of entries) {
    counts.read++;
    if ('refused' in entry) {
      await refuse(entry.line, entry.refused);
      continue;
    }
    if (typeof entry.value !== 'object' || entry.value === null || Array.isArray(entry.value)) {
      await refuse(entry.line, 'NOT_AN_OBJECT');
      continue;
    }
    const user = format.toUser(entry.value as Record<string, unknown>, options.formatOptions);
    if ('refused' in user) {
      await refuse(entry.line, user.refused, user.field);
      continue;
    }
    const checked = toImportRow(user, rules);
    if (!checked.ok) {
      await refuse(entry.line, checked.reason, checked.field);
      continue;
    }
    counts.notImported.identities += checked.row.unmatchedIdentities;
    counts.notImported.totp += user.totpNotImportable === true && checked.row.totpSecret === null ? 1 : 0;
    // The same address twice in one batch: the second is refused (across batches it is found and skipped or updated).
    if (inBatch.has(checked.row.email)) {
      await refuse(entry.line, 'DUPLICATE_EMAIL', 'email');
      continue;
    }
    inBatch.add(checked.row.email);
    batch.push({ line: entry.line, row: checked.row });
    if (batch.length >= BATCH_SIZE) {
      await flush();
      inBatch.clear();
    }
  }
  await flush();
  return counts;
}
