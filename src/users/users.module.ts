/** Accounts: who they are, their roles, their state (verified, disabled) and the language of their mails. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { cli } from './users.cli.ts';
import * as initial from './migrations/0001-initial.ts';
import * as usersCreatedAt from './migrations/0003-users-created-at.ts';
import * as userNameConfirmed from './migrations/0009-user-name-confirmed.ts';
import * as usersLocale from './migrations/20261127-users-locale.ts';
import * as usersSearchTrigram from './migrations/20261130-users-search-trigram.ts';
import * as usersSearchLocalPart from './migrations/20261202-users-search-local-part.ts';
import * as usersEmailPrefix from './migrations/20261203-users-email-prefix.ts';
import { createUserService, type UserService } from './user.service.ts';
import { registerLanguageChoice } from './language-choice.ts';
import { USERS_PUBLIC_EVENTS } from './users.public-events.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    users: UserService;
  }
}

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['user.created', 'user.updated', 'user.roles_changed', 'user.disabled', 'user.enabled', 'user.deleted'] as const;
type UsersAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends UsersAuditEvents {}
}

export const usersModule = defineModule({
  name: 'users',
  // The descriptions of its webhook events (publicEvents), for the administrators' pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  cli,
  migrations: { '0001-initial': initial, '0003-users-created-at': usersCreatedAt, '0009-user-name-confirmed': userNameConfirmed, '20261127-users-locale': usersLocale, '20261130-users-search-trigram': usersSearchTrigram, '20261202-users-search-local-part': usersSearchLocalPart, '20261203-users-email-prefix': usersEmailPrefix },
  auditEvents: AUDIT_EVENTS,
  publicEvents: USERS_PUBLIC_EVENTS,
  provide: ({ db, clock }) => ({ users: createUserService({ db, clock }) }),
  // The account itself (its row is deleted by the deletion's `deleteUser`; rows referencing it go on cascade).
  userData: ({ users }) => ({ export: async (userId) => ({ account: await users.findUserById(userId) }) }),
  routes: [
    // On the browser's routes (where `?lang=` chooses a page's language): a signed-in user's choice is stored for their mails.
    { scope: 'browser', register: async (app, { authenticate, services }) => registerLanguageChoice(app, { authenticate, users: services.users }) },
  ],
});
