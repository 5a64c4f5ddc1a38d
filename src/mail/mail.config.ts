/** The mail section of the configuration: SMTP, or the dev outbox. */
import { isIPv6 } from 'node:net';
import { EnvReader, HOSTNAME, isLoopbackHost } from '../config/env-reader.ts';
import type { ConfigSection } from '../config.ts';

declare module '../config.ts' {
  interface Config {
    readonly mail: MailConfig;
  }
}

/** The mail module's section: SMTP or the dev outbox, and the outbox's pace. */
export const mailConfigSection: ConfigSection = (read, { isProduction }, problems) => ({ mail: parseMailConfig(read, isProduction, problems)! });

/** A mailbox: the address, and the display name shown with it, if any. */
export interface MailAddress {
  readonly name: string | null;
  readonly address: string;
}

export interface SmtpConfig {
  readonly host: string;
  readonly port: number;
  /** Port 465: TLS from the first byte. Other ports start in clear and upgrade with STARTTLS when offered. */
  readonly isImplicitTls: boolean;
  /** Refuse to send over an unencrypted connection: true for every host but a loopback relay. */
  readonly requireTls: boolean;
  /** Present only when EMAIL_SERVER_USER is set. Never log it. */
  readonly auth: { readonly user: string; readonly password: string } | null;
}

export interface MailSettings {
  readonly from: MailAddress;
  /** Tries per message before it is marked failed. */
  readonly maxAttempts: number;
  /** How often the outbox worker looks for due messages (it is also woken by each enqueue). */
  readonly pollIntervalMs: number;
  /** Messages each process (each WORKERS worker) hands to the relay at once, each on a connection of its own (MAIL_CONCURRENCY). */
  readonly concurrency: number;
  /** Sent and failed messages older than this are deleted. */
  readonly retentionSeconds: number;
}

/**
 * `smtp` when EMAIL_SERVER_HOST is set; otherwise `dev-outbox` (never in production): messages
 * stay in the outbox table and are listed at `/dev/outbox`. Features that cannot work without
 * real mail (password reset, sign-up) check `kind`.
 */
export type MailConfig =
  | (MailSettings & { readonly kind: 'smtp'; readonly smtp: SmtpConfig; readonly showOutboxPage: false })
  | (MailSettings & {
      readonly kind: 'dev-outbox';
      readonly smtp: null;
      /**
       * `/dev/outbox` is served (DEV_OUTBOX_PAGE, off by default). It shows live reset links, and
       * whether a request really comes from this machine cannot be known behind a local proxy or
       * tunnel that adds no forwarding header, so it is never on by accident.
       */
      readonly showOutboxPage: boolean;
    });

const MAILBOX_ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

export const DEV_OUTBOX_FROM: MailAddress = { name: 'Gatehouse', address: 'no-reply@localhost' };

/** `address@domain` or `Display Name <address@domain>`; undefined when it is neither. */
export function parseMailbox(value: string): MailAddress | undefined {
  if (/[\r\n\0]/.test(value)) return undefined;
  const angled = /^(.*?)\s*<([^<>]*)>$/.exec(value);
  const address = angled ? angled[2]! : value;
  const name = angled ? angled[1]!.trim().replace(/^"(.*)"$/, '$1').trim() : '';
  if (!MAILBOX_ADDRESS.test(address) || /["<>\\]/.test(name)) return undefined;
  return { name: name === '' ? null : name, address };
}

export function parseMailConfig(read: EnvReader, isProduction: boolean, problems: string[]): MailConfig | undefined {
  const host = read.string('EMAIL_SERVER_HOST');
  const port = read.integer('EMAIL_SERVER_PORT', 587, { min: 1, max: 65535 });
  const user = read.string('EMAIL_SERVER_USER');
  const password = read.raw('EMAIL_SERVER_PASSWORD');
  const fromValue = read.string('EMAIL_FROM');
  const showOutboxPage = read.boolean('DEV_OUTBOX_PAGE', false);
  const settings = {
    maxAttempts: read.integer('MAIL_MAX_ATTEMPTS', 8, { min: 1, max: 100 }),
    pollIntervalMs: read.integer('MAIL_POLL_INTERVAL_MS', 5_000, { min: 100, max: 600_000 }),
    // 3: what Microsoft 365's SMTP submission accepts per mailbox; most relays take more.
    concurrency: read.integer('MAIL_CONCURRENCY', 3, { min: 1, max: 32 }),
    retentionSeconds: read.duration('MAIL_RETENTION', 7 * 86_400),
  };
  let from: MailAddress | undefined = DEV_OUTBOX_FROM;
  if (fromValue !== undefined) {
    from = parseMailbox(fromValue);
    if (from === undefined) problems.push(`EMAIL_FROM must be an address such as no-reply@example.com or "Gatehouse <no-reply@example.com>" (got "${fromValue}")`);
  }

  if (host === undefined) {
    if (isProduction) {
      problems.push('EMAIL_SERVER_HOST is required when NODE_ENV=production: mail is required in production for password reset and sign-up');
    }
    const orphans = ['EMAIL_SERVER_PORT', 'EMAIL_SERVER_USER', 'EMAIL_SERVER_PASSWORD'].filter((name) => read.raw(name) !== undefined);
    if (orphans.length > 0) problems.push(`${orphans.join(', ')} ${orphans.length === 1 ? 'is' : 'are'} set but EMAIL_SERVER_HOST is not`);
    if (showOutboxPage && isProduction) problems.push('DEV_OUTBOX_PAGE must not be on when NODE_ENV=production: the page shows live reset links');
    return from && { kind: 'dev-outbox', smtp: null, showOutboxPage, from, ...settings };
  }

  if (showOutboxPage) problems.push('DEV_OUTBOX_PAGE is on but EMAIL_SERVER_HOST is set: mail goes to the SMTP server, there is no dev outbox to show');

  const bareHost = host.replace(/^\[(.*)\]$/, '$1');
  if (!HOSTNAME.test(bareHost) && !isIPv6(bareHost)) {
    problems.push(`EMAIL_SERVER_HOST must be a host name or an IP address, without a scheme or port (got "${host}")`);
  }
  if (fromValue === undefined) {
    problems.push('EMAIL_FROM is required when EMAIL_SERVER_HOST is set (e.g. "Gatehouse <no-reply@example.com>")');
  }
  if ((user === undefined) !== (password === undefined)) {
    problems.push('EMAIL_SERVER_USER and EMAIL_SERVER_PASSWORD must be set together');
  }
  return from && {
    kind: 'smtp',
    smtp: {
      host: bareHost,
      port,
      isImplicitTls: port === 465,
      requireTls: !isLoopbackHost(bareHost),
      auth: user !== undefined && password !== undefined ? { user, password } : null,
    },
    showOutboxPage: false,
    from,
    ...settings,
  };
}
