/**
 * `GET /dev/outbox`: the dev outbox as a page, newest first, with each message's links, so a
 * developer can follow a reset or verification link without a mail server. Registered only when
 * mail goes to the dev outbox, which config allows only outside production: in production the
 * route does not exist (404). It shows live links, so it must never be reachable there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { Eta } from 'eta/core';
import type { Config } from '../config.ts';
import { sendPage } from '../ui/render.ts';
import { DEV_OUTBOX_PATH, type MailService } from './mail.service.ts';

const SHOWN_MESSAGES = 50;

export const devOutboxRoutes: FastifyPluginAsync<{ mail: MailService; config: Pick<Config, 'isProduction'> }> = async (app, { mail, config }) => {
  if (config.isProduction || mail.kind !== 'dev-outbox') return;

  // The hosted pages' layout, so the outbox looks like the rest; same escaping rules.
  const eta = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });
  eta.loadTemplate('layout', readFileSync(join(import.meta.dirname, '../ui/templates/layout.eta'), 'utf8'));
  eta.loadTemplate('dev-outbox', readFileSync(join(import.meta.dirname, 'dev-outbox.eta'), 'utf8'));

  app.get(DEV_OUTBOX_PATH, { schema: { hide: true } }, async (request, reply) => {
    // Live reset links: shown only to the developer's own machine, even on a dev box others reach.
    if (!isLoopback(request.socket.remoteAddress)) return reply.callNotFound();
    const entries = await mail.listRecent(SHOWN_MESSAGES);
    const messages = entries.map((entry) => ({ ...entry, createdAt: formatTime(entry.createdAt) }));
    return sendPage(reply, eta.render('dev-outbox', { title: 'Dev outbox', isWide: true, messages }));
  });
};

function formatTime(epochMs: number): { iso: string; text: string } {
  const iso = new Date(epochMs).toISOString();
  return { iso, text: `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` };
}

function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}
