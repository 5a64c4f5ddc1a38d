/**
 * Where the outbox worker hands a message: SMTP through nodemailer, or (development and tests,
 * without EMAIL_SERVER_HOST) the dev outbox, which keeps it in the table and logs its links.
 */
import type { SMTPTransportOptions, Transporter } from 'nodemailer';
import { isLoopbackHost } from '../config/env-reader.ts';
import type { MailAddress, SmtpConfig } from './mail.config.ts';
import type { Logger } from '../lib/logger.ts';
import type { RenderedMail, TemplateName } from './templates.ts';

export interface OutgoingMail extends RenderedMail {
  /** The outbox row id; also the Message-ID's left part, so a re-sent copy can be recognised. */
  id: string;
  to: string;
  template: TemplateName | string;
}

/** Why a send failed, in words safe to store and log: codes and the server's reply, never content. */
export interface SendFailure {
  /** `ECONNECTION`, `EENVELOPE`, `EAUTH`, `ETIMEDOUT`, … */
  code: string;
  /** The SMTP reply code, when the server answered. */
  responseCode: number | null;
  /** The server refused this message for good (5xx for its envelope or content): retrying is pointless. */
  isPermanent: boolean;
  /** `code responseCode reply`, at most 300 characters. */
  summary: string;
}

export interface MailTransport {
  readonly kind: 'smtp' | 'dev-outbox';
  /** Resolves when the message is accepted; rejects with a `SendFailure`-shaped `MailSendError`. */
  send(mail: OutgoingMail, signal: AbortSignal): Promise<void>;
  close(): void;
}

export class MailSendError extends Error {
  readonly failure: SendFailure;
  constructor(failure: SendFailure) {
    super(failure.summary);
    this.name = 'MailSendError';
    this.failure = failure;
  }
}

/** Bounds on one SMTP conversation; the whole send is also cut off by the worker's signal. */
const CONNECTION_TIMEOUT_MS = 10_000;
const GREETING_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 30_000;
/** Errors about this message itself rather than the connection or our credentials. */
const MESSAGE_ERROR_CODES = new Set(['EENVELOPE', 'EMESSAGE']);

/**
 * The nodemailer options for one relay. Remote relays: TLS required (implicit on 465, STARTTLS
 * otherwise), certificate verified, TLS 1.2 at least. A loopback relay (`localhost`, 127.0.0.0/8,
 * ::1, as written): STARTTLS when offered, certificate not verified, plain SMTP accepted.
 */
export function smtpTransportOptions(smtp: SmtpConfig): SMTPTransportOptions {
  // Decided from the host as written, never from requireTls alone, so no other setting can turn
  // verification off for a relay across a network.
  const isLoopbackRelay = isLoopbackHost(smtp.host);
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.isImplicitTls,
    // STARTTLS whenever the server offers it (nodemailer's default); with requireTLS, a server
    // that does not offer it (or a stripped offer) fails the send instead of going on in clear.
    requireTLS: smtp.requireTls,
    ...(smtp.auth !== null && { auth: { user: smtp.auth.user, pass: smtp.auth.password } }),
    // A loopback relay's traffic never leaves this machine, and plain SMTP to it is accepted, so a
    // certificate check there protects nothing; but it made a relay that offers STARTTLS with a
    // self-signed certificate (Debian Postfix's default "snakeoil") refuse every mail.
    tls: { minVersion: 'TLSv1.2', rejectUnauthorized: !isLoopbackRelay },
    connectionTimeout: CONNECTION_TIMEOUT_MS,
    greetingTimeout: GREETING_TIMEOUT_MS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    // Our messages are text we rendered: never let content name a file or URL to fetch.
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
    debug: false,
  };
}

/**
 * One connection per message, no pool: a fresh connection has no stale state after a relay
 * restarts, and nothing stays open between sends; the outbox sends up to MAIL_CONCURRENCY at once
 * (nodemailer's transport opens a connection per `sendMail`, concurrent calls included). nodemailer is loaded on the
 * first send (about 4 MB a process that never sends mail would carry).
 */
export function createSmtpTransport(smtp: SmtpConfig, from: MailAddress): MailTransport {
  let transporter: Promise<Transporter> | null = null;
  const loadTransporter = () => (transporter ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(smtpTransportOptions(smtp))));
  const fromDomain = from.address.slice(from.address.lastIndexOf('@') + 1);

  return {
    kind: 'smtp',
    async send(mail, signal) {
      try {
        await (await loadTransporter()).sendMail({
          from: from.name === null ? from.address : { name: from.name, address: from.address },
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: `<${mail.id}@${fromDomain}>`,
          // RFC 3834: no vacation auto-replies to a mail with a password reset link, say.
          headers: { 'Auto-Submitted': 'auto-generated' },
          signal,
        });
      } catch (error) {
        throw new MailSendError(describeSendError(error));
      }
    },
    close() {
      transporter?.then((loaded) => loaded.close()).catch(() => {});
    },
  };
}

export function describeSendError(error: unknown): SendFailure {
  const details = (error ?? {}) as { code?: unknown; responseCode?: unknown; response?: unknown; permanent?: unknown; name?: unknown };
  const code = typeof details.code === 'string' ? details.code : typeof details.name === 'string' ? details.name : 'ERROR';
  const responseCode = typeof details.responseCode === 'number' ? details.responseCode : null;
  // The server's reply line (e.g. "550 5.1.1 No such user"), never our message; squashed to one line.
  const reply = typeof details.response === 'string' ? details.response.replace(/\s+/g, ' ').trim() : '';
  const summary = [code, reply === '' && responseCode !== null ? String(responseCode) : reply].filter((part) => part !== '').join(' ');
  return {
    code,
    responseCode,
    isPermanent: details.permanent === true && MESSAGE_ERROR_CODES.has(code),
    summary: summary.slice(0, 300),
  };
}

/**
 * Development and tests: "delivering" only marks the message; it stays readable at /dev/outbox.
 * In development its links are logged at info level so a developer can follow them: the one
 * deliberate exception to "no token in logs", never possible in production (config refuses to
 * start there without EMAIL_SERVER_HOST).
 */
export function createDevOutboxTransport(options: { logger: Logger; shouldLogLinks: boolean; outboxUrl: string }): MailTransport {
  return {
    kind: 'dev-outbox',
    async send(mail) {
      const details: Record<string, unknown> = { mailId: mail.id, template: mail.template, to: mail.to, outbox: options.outboxUrl };
      if (options.shouldLogLinks) details.links = extractLinks(mail.text);
      options.logger.info(details, 'mail kept in the dev outbox (EMAIL_SERVER_HOST is not set)');
    },
    close() {},
  };
}

/** The http(s) links of a plain-text body, in order, without repeats. */
export function extractLinks(text: string): string[] {
  // A sentence's closing punctuation is not part of the link.
  const links = (text.match(/https?:\/\/[^\s<>"]+/g) ?? []).map((link) => link.replace(/[.,;:!?)]+$/, ''));
  return [...new Set(links)];
}
