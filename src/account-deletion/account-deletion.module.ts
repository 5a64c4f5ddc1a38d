/**
 * Account deletion: by its owner from the dashboard (`DELETE /api/auth/account`) or by an
 * administrator (`DELETE /api/admin/users/:id`, the admin page of a user, `gatehouse users
 * delete`). What it removes is what every module declares it holds of a user (`userData`, walked
 * by account-deletion.service.ts, in one transaction), which the service also exports
 * (`exportUserData`; no route serves it yet).
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { ACCOUNT_DELETION_ERRORS } from './account-deletion.errors.ts';
import type { AccountDeletionService, ModuleUserData } from './account-deletion.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { accountDeletionRoutes } from './account-deletion.routes.ts';
import { accountDeletionPageRoutes, accountDeletionPageSections } from './account-deletion-pages.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    accountDeletion: AccountDeletionService;
  }
}

export const accountDeletionModule = defineModule({
  name: 'account-deletion',
  openApiTags: [
    { name: 'account', description: "The signed-in user's own account." },
  ],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  errors: ACCOUNT_DELETION_ERRORS,
  // The service's code is imported at its first call (lib/deferred-service.ts): a deletion, an export or the deletion page's blockers.
  provide(context) {
    const { users, audit } = context.services;
    return {
      accountDeletion: deferredService(async () => {
        const { collectUserData, createAccountDeletionService } = await import('./account-deletion.service.ts');
        // Read at the first deletion or export: by then every module's services (those listed after this one too) are built.
        let handlers: readonly ModuleUserData[] | undefined;
        const userData = () => (handlers ??= collectUserData(context));
        return createAccountDeletionService({ users, audit, userData });
      }),
    };
  },
  pageSections: ({ users }) => accountDeletionPageSections(users),
  routes: [
    {
      scope: 'api',
      register: (app, { services, config }) => app.register(accountDeletionRoutes, { accountDeletion: services.accountDeletion, config }),
    },
    {
      scope: 'browser',
      register: (app, { services, config, clock }) =>
        app.register(accountDeletionPageRoutes, {
          accountDeletion: services.accountDeletion,
          users: services.users,
          config,
          clock,
          hasSecondFactor: async (userId) => (await services.mfa.methodsOf(userId)).length > 0,
        }),
    },
  ],
});
