/**
 * Mail that is never lost. A feature calls `enqueue(db, message)` inside the transaction that
 * makes the thing the mail is about (a reset token, say): the message is rendered, sealed and
 * written to the outbox table in that transaction, so the token and its mail commit or vanish
 * together. A background worker sends it; an HTTP answer never waits on SMTP.
 *
 * Messages are rendered at enqueue time, not send time: a missing field or a broken template fails
 * in the caller (who can still answer 500 and roll back) rather than later in the worker; the mail
 * says what was true when it was asked for; and instances running different versions during a
 * rolling deploy send exactly what was enqueued, whatever templates they have.
 */
import type { Config } from '../config.ts';
import { parseMailbox } from './mail.config.ts';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import { toLocale, type Locale } from '../i18n/locales.ts';
import type { Translations } from '../i18n/translator.ts';
import * as store from './outbox.store.ts';
import { createPayloadSeal } from './payload-seal.ts';
import { createMailRenderer, type MailTemplate, type MailTemplates, type SecurityChange, type TemplateName } from './templates.ts';
import type { User } from '../users/user.service.ts';
import type { AuditSource } from '../audit/audit.service.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import { createDevOutboxTransport, createSmtpTransport, extractLinks, type MailTransport } from './transports.ts';
import { createMailOutboxWorker, type OutboxRunResult } from './outbox-worker.ts';

/**
 * A message to send: a template and the data it reads, to one address, in `locale`: the
 * recipient's language, decided by the caller (users/locale.ts `mailLocale`: the one stored with
 * their account, else the language of the request that causes the mail, else English).
 */
export type MailMessage = {
  [T in TemplateName]: { to: string; template: T; data: MailTemplates[T]; locale: Locale };
}[TemplateName];

export const DEV_OUTBOX_PATH = '/dev/outbox';

/** A change to an account that its owner hears of (`MailService.securityNotice`). */
export interface SecurityNotice {
  /** The account, as it is now: its own address, name and language. */
  readonly user: Pick<User, 'id' | 'email' | 'name' | 'nameConfirmedAt' | 'locale'>;
  /** What changed: one a module declares in `securityNotices` (a second factor added, say). */
  readonly change: SecurityChange;
  /** Who made it: the owner's own request gives the mail its language when the account has none. */
  readonly source: AuditSource;
  /** The configured name of the provider a notice about a linked or unlinked provider is about. */
  readonly provider?: string;
}

/** One outbox message as the dev outbox page shows it. */
export interface OutboxEntry {
  id: string;
  to: string;
  template: string;
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  lastError: string | null;
  createdAt: number;
  sentAt: number | null;
  /** Null once the payload is gone (sent by SMTP) or unreadable. */
  subject: string | null;
  text: string | null;
  links: string[];
}

export interface MailService {
  /** `smtp`, or `dev-outbox` when EMAIL_SERVER_HOST is not set (never in production). */
  readonly kind: 'smtp' | 'dev-outbox';
  /**
   * Renders `message` and adds it to the outbox through `db`, which may be a transaction: the
   * message exists only if that transaction commits. Resolves with the outbox id once written;
   * sending happens later, in the background. Every `…Url` in `data` must be a full link under
   * AUTH_URL, made with `link()`: never build links from request headers (Host,
   * X-Forwarded-Host), or an attacker could have a victim's reset link point at their own site.
   * Throws a `TypeError` (a programming error) for a bad address, an unknown template or language,
   * or a link elsewhere.
   */
  enqueue(db: Db, message: MailMessage): Promise<{ id: string }>;
  /** `AUTH_URL` + `path` + `?query`: the only way mail links should be made. */
  link(path: `/${string}`, query?: Record<string, string>): string;
  /**
   * Queues the `security-notice` of a change to the account's own address through `trx` (sent only
   * if the change commits), in the owner's language: the stored one, else that of their own request
   * when they made the change themselves (an administrator's request says nothing of the owner's
   * language). Its button goes to the account recovery page (`accountRecoveryUrl`).
   */
  securityNotice(trx: Db, notice: SecurityNotice): Promise<{ id: string }>;
  /**
   * The full link to the page where an owner who did not make a change takes their account back
   * (a module's `accountRecoveryPage`: the forgot-password page), for the mails that offer it.
   */
  accountRecoveryUrl(): string;
  /** Wakes the worker, e.g. right after committing a transaction that enqueued a message. */
  wake(): void;
  /** The newest messages (development: the dev outbox page). Payloads are opened: not for logs. */
  listRecent(limit?: number): Promise<OutboxEntry[]>;
  /**
   * Deletes every message to `address`, sent or not (an account being deleted, in its
   * transaction): its links are of no use any more, and the outbox keeps no trace of the address.
   */
  forgetRecipient(db: Db, address: string): Promise<number>;
  start(): void;
  /** Stops the worker and waits for a send in progress. */
  stop(): Promise<void>;
  /** One worker run now (tests; the worker runs by itself once started). */
  runOnce(): Promise<OutboxRunResult>;
}

export function createMailService(deps: {
  db: Db;
  isPostgres: boolean;
  config: Pick<Config, 'mail' | 'authUrl' | 'authSecret' | 'env'> & { branding?: Pick<Config['branding'], 'name'> };
  clock: Clock;
  logger: Logger;
  /** Every module's catalogs (the i18n module's `translations`): each mail's texts are its module's. */
  translations: Translations;
  /** Every module's mail templates, by name (module.ts `collectMailTemplates`). */
  templates: ReadonlyMap<string, MailTemplate>;
  /** The page a module declares for taking an account back (module.ts `collectAccountRecoveryPage`); without one, asking for its link is an error. */
  accountRecoveryPage?: `/${string}` | null;
  random?: () => number;
}): MailService {
  const { db, config, clock, logger } = deps;
  const { authUrl } = config;
  const renderer = createMailRenderer({ authUrl, translations: deps.translations, templates: deps.templates, ...(config.branding !== undefined && { brandName: config.branding.name }) });
  const seal = createPayloadSeal(config.authSecret);
  const transport: MailTransport =
    config.mail.kind === 'smtp'
      ? createSmtpTransport(config.mail.smtp, config.mail.from)
      : createDevOutboxTransport({ logger, shouldLogLinks: config.env === 'development', outboxUrl: `${authUrl}${DEV_OUTBOX_PATH}` });
  const worker = createMailOutboxWorker({
    db,
    isPostgres: deps.isPostgres,
    transport,
    seal,
    clock,
    logger,
    maxAttempts: config.mail.maxAttempts,
    pollIntervalMs: config.mail.pollIntervalMs,
    retentionMs: config.mail.retentionSeconds * 1000,
    concurrency: config.mail.concurrency,
    ...(deps.random !== undefined && { random: deps.random }),
  });

  function assertValid(message: MailMessage): void {
    const mailbox = typeof message.to === 'string' && message.to.length <= 320 ? parseMailbox(message.to) : undefined;
    if (mailbox === undefined || mailbox.name !== null) throw new TypeError('mail: `to` must be a single e-mail address');
    if (typeof message.template !== 'string' || !renderer.has(message.template)) throw new TypeError('mail: unknown template');
    if (toLocale(message.locale) !== message.locale) throw new TypeError('mail: `locale` must be one of LOCALES');
    for (const [field, value] of Object.entries(message.data)) {
      if (field.endsWith('Url') && !isOurLink(value)) throw new TypeError(`mail: data.${field} must be a link under AUTH_URL`);
    }
  }

  function isOurLink(value: unknown): boolean {
    if (typeof value !== 'string' || /\s/.test(value)) return false;
    return value === authUrl || value.startsWith(`${authUrl}/`) || value.startsWith(`${authUrl}?`);
  }

  function link(path: `/${string}`, query?: Record<string, string>): string {
    const search = query === undefined ? '' : new URLSearchParams(query).toString();
    return `${authUrl}${path}${search === '' ? '' : `?${search}`}`;
  }

  function accountRecoveryUrl(): string {
    if (deps.accountRecoveryPage == null) throw new TypeError('mail: no module declares an account recovery page (`accountRecoveryPage`)');
    return link(deps.accountRecoveryPage);
  }

  async function enqueue(target: Db, message: MailMessage): Promise<{ id: string }> {
    assertValid(message);
    const id = randomId();
    // TypeScript cannot pair a template with its data through the union; assertValid checked the name.
    const rendered = renderer.render(message.template, message.data as never, message.locale);
    const now = clock();
    await store.insertMessage(target, {
      id,
      to_address: message.to,
      template: message.template,
      payload: seal.seal(id, rendered),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      locked_until: null,
      locked_by: null,
      last_error: null,
      delivered_via: null,
      created_at: now,
      sent_at: null,
    });
    worker.wakeAfter(target);
    return { id };
  }

  return {
    kind: transport.kind,
    enqueue,
    link,
    accountRecoveryUrl,

    securityNotice: async (trx, { user, change, source, provider }) =>
      enqueue(trx, {
        to: user.email,
        template: 'security-notice',
        locale: mailLocale(user, source.actorUserId === user.id ? source : undefined),
        data: { name: greetingName(user), change, ...(provider !== undefined && { provider }), changedAt: clock(), forgotPasswordUrl: accountRecoveryUrl() },
      }),

    wake: () => worker.wake(),

    async listRecent(limit = 50) {
      const rows = await store.findRecent(db, limit);
      return rows.map((row) => {
        const mail = row.payload === null ? null : seal.open(row.id, row.payload);
        return {
          id: row.id,
          to: row.to_address,
          template: row.template,
          status: row.status,
          attempts: row.attempts,
          lastError: row.last_error,
          createdAt: row.created_at,
          sentAt: row.sent_at,
          subject: mail?.subject ?? null,
          text: mail?.text ?? null,
          links: mail === null ? [] : extractLinks(mail.text),
        };
      });
    },

    forgetRecipient: (target, address) => store.deleteMessagesTo(target, address),

    start: () => worker.start(),
    async stop() {
      await worker.stop();
      transport.close();
    },
    runOnce: () => worker.runOnce(),
  };
}
