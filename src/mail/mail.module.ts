/** Mail: the durable outbox, its worker (SMTP or the dev outbox), and the dev outbox page. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { mailConfigSection } from './mail.config.ts';
import { collectAccountRecoveryPage, collectMailTemplates, collectSecurityNotices, defineModule, type GatehouseModule } from '../module.ts';
import * as mailOutbox from './migrations/0004-mail-outbox.ts';
import { createMailService, type MailService } from './mail.service.ts';
import { devOutboxRoutes } from './dev-outbox.routes.ts';
import { securityNoticeTemplate } from './security-notice.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    mail: MailService;
  }
}

/** The account recovery page, which a module declaring security changes needs: the start stops without one. */
function accountRecoveryPageFor(modules: readonly GatehouseModule[]): `/${string}` | null {
  const page = collectAccountRecoveryPage(modules);
  const changes = collectSecurityNotices(modules);
  if (page === null && changes.size > 0) {
    throw new Error(`modules: security notices (${[...new Set(changes.values())].join(', ')}) link an account recovery page, which no module declares (accountRecoveryPage)`);
  }
  return page;
}

export const mailModule = defineModule({
  name: 'mail',
  messages: readMessages(join(import.meta.dirname, 'messages')),
  migrations: { '0004-mail-outbox': mailOutbox },
  config: mailConfigSection,
  // Its own template: the notice of a change to an account, the changes the other modules'.
  mailTemplates: (modules) => ({ 'security-notice': securityNoticeTemplate(collectSecurityNotices(modules)) }),
  // `translations`: the i18n module's, above this one in modules.ts (every module's catalogs, this one's among them);
  // the templates every module's, this one's among them.
  // The notices' button goes to the page a module declares for taking an account back (accountRecoveryPage).
  provide: ({ db, storage, config, clock, logger, services, modules }) => ({
    mail: createMailService({
      db,
      isPostgres: storage.dialect === 'postgres',
      config,
      clock,
      logger,
      translations: services.translations,
      templates: collectMailTemplates(modules),
      accountRecoveryPage: accountRecoveryPageFor(modules),
    }),
  }),
  jobs: ({ mail }) => [mail],
  // A deleted user's mails still waiting are dropped (the address is forgotten).
  userData: ({ mail }) => ({ erase: async ({ user, db }) => void (await mail.forgetRecipient(db, user.email)) }),
  routes: [
    // Development and tests without EMAIL_SERVER_HOST only; never registered in production. A
    // browser route: the page answers in the request's language (`reply.page.i18n`, web/page-context.ts).
    { scope: 'browser', register: (app, { services, config }) => app.register(devOutboxRoutes, { mail: services.mail, config }) },
  ],
});
