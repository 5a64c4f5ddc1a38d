/**
 * A second-factor waiver (`secondFactorWaivers` in the module contract): something the client of
 * a sign-in carries that stands for a second factor it met before, so the second-factor step does
 * not ask again ("don't ask again on this browser": a trusted device). The MFA module's step asks
 * every registered waiver before it challenges, without naming any of them; a waiver that answers
 * lets the sign-in go on, and the sign-in's audit event says which waived it (`note`). A waived
 * sign-in proved its first factor only: its session's `amr` claims no second factor, so a route
 * that needs a recent one (RECENT_SECOND_FACTOR, the ADMIN routes under MFA_REQUIRED_ROLES) still
 * asks for it.
 *
 * After a second factor met a challenge, a request that asked for it (`rememberDevice`: the
 * prompt's field, or the JSON verify API's flag) lets each waiver give the client what it will
 * carry next time (`remember`: a cookie).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSource } from '../audit/audit.service.ts';
import type { User } from '../users/user.service.ts';
import type { PageContext } from '../web/page-context.ts';
import type { SignInAttempt } from './signin-pipeline.ts';

/** What a waiver says of the sign-in it waived the factor of, for its audit event (ids, never a secret). */
export interface WaivedSecondFactor {
  /** The waiver's name (`trusted-device`). */
  readonly by: string;
  readonly details?: Record<string, unknown>;
}

export interface SecondFactorWaiver {
  /** Unique among the waivers. */
  readonly name: string;
  /**
   * Whether what the sign-in's client carries (`attempt.source.cookie`) waives the second factor of
   * `attempt.user`, asked only when the step would challenge; null: it does not. Never for another user.
   */
  waive(attempt: SignInAttempt): Promise<WaivedSecondFactor | null>;
  /**
   * The field the second-factor prompt shows inside its form `formId` (a checkbox named
   * `rememberDevice`), as HTML rendered by the waiver's own template; null: none for this user.
   */
  promptField?(context: { readonly page: PageContext; readonly userId: string; readonly formId: string }): Promise<string | null>;
  /** After a second factor met a challenge for `user` in a request that asked to be remembered: what the client is given (a cookie on `reply`). */
  remember(request: FastifyRequest, reply: FastifyReply, user: User, source: AuditSource): Promise<void>;
}
