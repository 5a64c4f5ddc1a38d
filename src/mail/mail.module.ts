/** Mail: the durable outbox, its worker (SMTP or the dev outbox), and the dev outbox page. */
import { mailConfigSection } from './mail.config.ts';
import { defineModule } from '../module.ts';
import * as mailOutbox from './migrations/0004-mail-outbox.ts';
import { createMailService, type MailService } from './mail.service.ts';
import { devOutboxRoutes } from './dev-outbox.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    mail: MailService;
  }
}

export const mailModule = defineModule({
  name: 'mail',
  migrations: { '0004-mail-outbox': mailOutbox },
  config: mailConfigSection,
  provide: ({ db, storage, config, clock, logger }) => ({ mail: createMailService({ db, isPostgres: storage.dialect === 'postgres', config, clock, logger }) }),
  jobs: ({ mail }) => [mail],
  routes: [
    // Development and tests without EMAIL_SERVER_HOST only; never registered in production.
    { scope: 'api', register: (app, { services, config }) => app.register(devOutboxRoutes, { mail: services.mail, config }) },
  ],
});
