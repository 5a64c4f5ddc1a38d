/**
 * Deleting an account, by its owner or an administrator, in one transaction, and exporting what
 * Gatehouse holds of one. Both walk what every module declares it holds of a user (`userData`,
 * module.ts) and name no module: what blocks the deletion is judged first (the organizations'
 * handler: an organization's only OWNER with other members must hand it over), then each module
 * erases its part, in reverse list order (as of the modules listed today: the organization
 * memberships removed, every session ended, on the revocation list too, the mails to the address
 * forgotten, the personal data in the audit history erased), the user row is deleted (identities,
 * factors, passkeys, tokens and consents go with it, on cascade), and `user.deleted` is recorded:
 * the OpenID Provider ends the apps' grants and the webhooks hear of it, by their subscriptions,
 * in the same transaction.
 */
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { DeletionBlock, GatehouseModule, ModuleContext, UserDataHandler } from '../module.ts';
import type { UserService } from '../users/user.service.ts';

export type AccountDeletionResult =
  | { ok: true }
  | { ok: false; reason: 'NOT_FOUND' | 'FORBIDDEN' | 'LAST_ADMIN' }
  /** A module's block (`reason` is its code): ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED, say. */
  | { ok: false; reason: DeletionBlock['code']; block: DeletionBlock };

/** Every module's data of one user, by module name, in list order (those holding nothing of theirs left out). */
export type UserDataExport = Readonly<Record<string, Record<string, unknown>>>;

export type AccountDeletionService = ReturnType<typeof createAccountDeletionService>;

/** A module's handler, with the module's name. */
export interface ModuleUserData {
  readonly module: string;
  readonly handler: UserDataHandler;
}

/** Every module's `userData` handler, in list order. */
export function collectUserData(context: ModuleContext): readonly ModuleUserData[] {
  return context.modules.flatMap((module) => (module.userData === undefined ? [] : [{ module: module.name, handler: module.userData(context.services, context) }]));
}

/** Thrown inside the deletion's transaction when an erasure refuses: rolls back what the others wrote. */
class DeletionRefused extends Error {
  readonly block: DeletionBlock;
  constructor(block: DeletionBlock) {
    super(`account deletion refused: ${block.code}`);
    this.block = block;
  }
}

export function createAccountDeletionService(deps: {
  users: UserService;
  audit: AuditService;
  /** Every module's handler, in list order; read when used (modules listed after this one declare theirs too). */
  userData: () => readonly ModuleUserData[];
}) {
  const { users, audit } = deps;

  async function deleteAccount(userId: string, options: { source: AuditSource; by: 'self' | 'admin' | 'cli' }): Promise<AccountDeletionResult> {
    const handlers = deps.userData().map((entry) => entry.handler);
    // Erased in reverse list order: a module's data before that of the modules it builds on.
    const erasers = handlers.toReversed();
    const judged: { block: DeletionBlock | null } = { block: null };
    // The one owning an account: the event about its deletion keeps no trace of their network or browser.
    const source: AuditSource = options.by === 'self' ? { ...options.source, ip: null, userAgent: null } : options.source;
    let result;
    try {
      result = await users.deleteUser(userId, {
        ...(options.by === 'admin' && options.source.actorUserId !== null && { actingAdminId: options.source.actorUserId }),
        // First, before anything is written: a refusal here writes nothing.
        async check(trx) {
          for (const handler of erasers) {
            judged.block = (await handler.blocksDeletion?.(userId, trx)) ?? null;
            if (judged.block !== null) return judged.block.code;
          }
          return null;
        },
        async onDeleting(trx, user) {
          for (const handler of erasers) {
            const refusal = await handler.erase?.({ user, db: trx, source });
            if (refusal) throw new DeletionRefused(refusal);
          }
        },
        async onDeleted(trx) {
          await audit.record({ type: 'user.deleted', userId, source, reason: options.by.toUpperCase(), details: { by: options.by } }, { db: trx });
        },
      });
    } catch (error) {
      if (error instanceof DeletionRefused) return { ok: false, reason: error.block.code, block: error.block };
      throw error;
    }
    if (result.ok) return { ok: true };
    switch (result.reason) {
      case 'NOT_FOUND':
      case 'LAST_ADMIN':
        return { ok: false, reason: result.reason };
      case 'ACTOR_NOT_ADMIN':
        return { ok: false, reason: 'FORBIDDEN' };
      case 'REFUSED':
        return { ok: false, reason: judged.block!.code, block: judged.block! };
    }
  }

  return {
    /** The signed-in user deletes their own account (its routes require a recent sign-in and, for an account that has one, a recent second factor). */
    deleteOwnAccount: (userId: string, source: AuditSource) => deleteAccount(userId, { source, by: 'self' }),
    /** An administrator (or the command line: no actor) deletes someone's account. */
    deleteUser: (userId: string, source: AuditSource) => deleteAccount(userId, { source, by: source.via === 'cli' ? 'cli' : 'admin' }),
    /** What would stop the user deleting their account now, in list order (the page lists it before they try; the deletion judges again, in its transaction). */
    async blockers(userId: string): Promise<DeletionBlock[]> {
      const blocks: DeletionBlock[] = [];
      for (const { handler } of deps.userData()) {
        const block = (await handler.blocksDeletion?.(userId)) ?? null;
        if (block !== null) blocks.push(block);
      }
      return blocks;
    },
    /**
     * What Gatehouse holds of the user, each module's part under its name, in list order; null for
     * an unknown user. No secret or hash: each module exports what the user may see of theirs.
     */
    async exportUserData(userId: string): Promise<UserDataExport | null> {
      if ((await users.findUserById(userId)) === null) return null;
      const data: Record<string, Record<string, unknown>> = {};
      for (const { module, handler } of deps.userData()) {
        const part = (await handler.export?.(userId)) ?? null;
        if (part !== null) data[module] = part;
      }
      return data;
    },
  };
}
