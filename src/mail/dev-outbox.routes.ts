/**
 * `GET /dev/outbox`: the dev outbox as a page, newest first, with each message's links, so a
 * developer can follow a reset or verification link without a mail server. Registered only when
 * mail goes to the dev outbox, which config allows only outside production, and DEV_OUTBOX_PAGE
 * turns it on: in production, and by default, the route does not exist (404). It shows live
 * links, so it must never be reachable by anyone but the developer's own machine.
 */
import { join } from 'node:path';
import { isIP } from 'node:net';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { createPageRenderer } from '../web/render.ts';
import type { TimeText } from '../web/time-text.ts';
import { DEV_OUTBOX_PATH, type MailService, type OutboxEntry } from './mail.service.ts';
import { access } from '../authorization/access.ts';

const SHOWN_MESSAGES = 50;

/** What `dev-outbox.eta` reads: the newest messages, each with its time to the second. */
interface OutboxPages {
  'dev-outbox': { messages: Array<Omit<OutboxEntry, 'createdAt'> & { createdAt: TimeText }> };
}

export const devOutboxRoutes: FastifyPluginAsync<{ mail: MailService; config: Pick<Config, 'isProduction' | 'mail'> }> = async (app, { mail, config }) => {
  // Off unless asked for: behind a local reverse proxy or tunnel (ngrok, cloudflared, an SSH
  // forward) every request arrives from loopback, and one that adds no forwarding header leaves
  // no way to tell the developer from anyone on the internet. In development the links are
  // logged anyway, so the page is a convenience, not a need.
  if (config.isProduction || mail.kind !== 'dev-outbox' || !config.mail.showOutboxPage) return;

  // The hosted pages' layout, so the outbox looks like the rest; same escaping rules.
  const pages = createPageRenderer<OutboxPages>([join(import.meta.dirname, 'dev-outbox.eta')]);

  // No session asked: who may look is the machine it is asked from (below).
  app.get(DEV_OUTBOX_PATH, { config: { access: access.anyone() }, schema: { hide: true } }, async (request, reply) => {
    // Live reset links: shown only to the developer's own machine, even on a dev box others reach.
    if (!isFromThisMachine(request)) return reply.callNotFound();
    const entries = await mail.listRecent(SHOWN_MESSAGES);
    const { i18n } = reply.page;
    const times = new Intl.DateTimeFormat(i18n.locale, { dateStyle: 'medium', timeStyle: 'long', timeZone: 'UTC' });
    const messages = entries.map((entry) => ({ ...entry, createdAt: formatTime(entry.createdAt, times) }));
    return pages.send(reply, 'dev-outbox', { title: i18n.t('mail.outbox.title'), isWide: true, messages });
  });
};

/** A moment to the second, in UTC, written the page language's way. */
function formatTime(epochMs: number, times: Intl.DateTimeFormat): TimeText {
  return { iso: new Date(epochMs).toISOString(), text: times.format(epochMs) };
}

/**
 * Every address the request shows is loopback: the socket's peer; the client address under
 * TRUST_PROXY (`request.ip`, the forwarded one when the peer is a trusted proxy); and every
 * address a forwarding header names, trusted or not. An untrusted header can only narrow who gets
 * in, so a local proxy that forwards a remote client is refused even when TRUST_PROXY is unset.
 */
function isFromThisMachine(request: FastifyRequest): boolean {
  if (!isLoopback(request.socket.remoteAddress) || !isLoopback(request.ip)) return false;
  return forwardedAddresses(request).every(isLoopback);
}

/** The client addresses named by `X-Forwarded-For`, `X-Real-IP` and `Forwarded: for=…`, as written. */
function forwardedAddresses(request: FastifyRequest): string[] {
  const values = (name: string) => {
    const value = request.headers[name];
    return (Array.isArray(value) ? value : value === undefined ? [] : [value]).flatMap((line) => line.split(','));
  };
  const forwardedFor = values('forwarded').flatMap((element) =>
    element
      .split(';')
      .map((pair) => /^\s*for\s*=\s*(.*)$/i.exec(pair)?.[1])
      .filter((value) => value !== undefined),
  );
  return [...values('x-forwarded-for'), ...values('x-real-ip'), ...forwardedFor].map(toBareAddress);
}

/** `"[::1]:8080"` -> `::1`, `127.0.0.1:8080` -> `127.0.0.1`; anything else as it is, trimmed. */
function toBareAddress(value: string): string {
  const unquoted = value.trim().replace(/^"(.*)"$/, '$1');
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(unquoted);
  if (bracketed) return bracketed[1]!;
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(unquoted);
  return withPort ? withPort[1]! : unquoted;
}

function isLoopback(address: string | undefined): boolean {
  if (address === undefined || isIP(address) === 0) return false;
  const lower = address.toLowerCase();
  return lower === '::1' || lower.startsWith('127.') || lower.startsWith('::ffff:127.');
}
