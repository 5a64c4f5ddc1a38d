/**
 * Every capability of Gatehouse, in order: a module may use the services of those above it.
 * Adding a capability is a folder with its module and one line here (and its migration).
 */
import type { GatehouseModule } from './module.ts';
import { auditModule } from './audit/audit.module.ts';
import { usersModule } from './users/users.module.ts';
import { mailModule } from './mail/mail.module.ts';
import { tokensModule } from './tokens/tokens.module.ts';
import { rateLimitsModule } from './http/rate-limits.module.ts';
import { sessionsModule } from './sessions/sessions.module.ts';
import { signInModule } from './signin/signin.module.ts';
import { verificationModule } from './verification/verification.module.ts';
import { credentialsModule } from './credentials/credentials.module.ts';
import { passwordResetModule } from './password-reset/password-reset.module.ts';
import { oauthModule } from './oauth/oauth.module.ts';
import { adminModule } from './admin/admin.module.ts';
import { opsModule } from './ops/ops.module.ts';
import { pagesModule } from './ui/pages.module.ts';

export const MODULES: readonly GatehouseModule[] = [
  auditModule,
  usersModule,
  mailModule,
  tokensModule,
  rateLimitsModule,
  sessionsModule,
  signInModule,
  verificationModule,
  credentialsModule,
  passwordResetModule,
  oauthModule,
  adminModule,
  opsModule,
  pagesModule,
];
