/**
 * Account deletion: by its owner from the dashboard (`DELETE /api/auth/account`) or by an
 * administrator (`DELETE /api/admin/users/:id`, the admin page of a user, `gatehouse users
 * delete`). Listed after the organizations module, whose memberships it removes (see
 * account-deletion.service.ts for all it removes, in one transaction).
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { ACCOUNT_DELETION_ERRORS } from './account-deletion.errors.ts';
import { createAccountDeletionService, type AccountDeletionService, type OrganizationMemberships } from './account-deletion.service.ts';
import { accountDeletionRoutes } from './account-deletion.routes.ts';
import { accountDeletionPageRoutes, accountDeletionPageSections } from './account-deletion-pages.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    accountDeletion: AccountDeletionService;
  }
}

export const accountDeletionModule = defineModule({
  name: 'account-deletion',
  messages: readMessages(join(import.meta.dirname, 'messages')),
  errors: ACCOUNT_DELETION_ERRORS,
  provide({ services }) {
    const { users, sessions, audit, mail } = services;
    // Without the organizations module in the list, nobody belongs to any.
    const registry = services as { organizations?: OrganizationMemberships };
    const organizations = () => ('organizations' in registry ? registry.organizations! : null);
    return { accountDeletion: createAccountDeletionService({ users, sessions, audit, mail, organizations }) };
  },
  pageSections: ({ users }) => accountDeletionPageSections(users),
  routes: [
    {
      scope: 'api',
      register: (app, { services, config }) => app.register(accountDeletionRoutes, { accountDeletion: services.accountDeletion, config }),
    },
    {
      scope: 'browser',
      register: (app, { services, csrf, config, clock }) =>
        app.register(accountDeletionPageRoutes, {
          accountDeletion: services.accountDeletion,
          users: services.users,
          csrf,
          config,
          clock,
          hasSecondFactor: async (userId) => (await services.mfa.methodsOf(userId)).length > 0,
        }),
    },
  ],
});
