/**
 * What a user sees and does of their trusted browsers:
 * - `GET /api/auth/trusted-devices`: the live ones (signed in, by Bearer or cookie);
 * - `DELETE /api/auth/trusted-devices/:id` and `DELETE /api/auth/trusted-devices`: forget one, or all;
 * - the dashboard's section listing them, with "Forget" each and "Forget all", whose forms post to
 *   `POST /dashboard/trusted-devices/forget` and `/forget-all` (register where form bodies are parsed).
 * Forgetting lowers what a browser may do, so it needs no recent sign-in.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError, type ErrorCode } from '../errors.ts';
import { access, DURING_ENROLMENT, signedIn } from '../authorization/access.ts';
import { errorResponse } from '../http/schemas.ts';
import { requestSource } from '../audit/request-source.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';
import { isoTime } from '../lib/clock.ts';
import { deviceLabel } from '../sessions/device-label.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import type { PageSection } from '../module.ts';
import type { TrustedDevice, TrustedDevicesService } from './trusted-devices.service.ts';

const DASHBOARD_SECTION = '/dashboard#trusted-devices-heading';

interface TrustedDevicesPages {
  'trusted-devices-dashboard-section': {
    devices: Array<{ id: string; label: string; ip: string | null; createdAt: TimeText; lastUsedAt: TimeText | null; expiresAt: TimeText }>;
  };
}

const renderer = () => createPageRenderer<TrustedDevicesPages>(templatesIn(join(import.meta.dirname, 'templates')));

const deviceJson = z
  .object({
    id: z.string(),
    userAgent: z.string().nullable().describe('The User-Agent header of the browser when it was trusted'),
    createdIp: z.string().nullable(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime(),
    lastUsedAt: z.iso.datetime().nullable().describe('When it last waived a second factor'),
  })
  .meta({ id: 'TrustedDevice' });

const toJson = (device: TrustedDevice) => ({
  id: device.id,
  userAgent: device.userAgent,
  createdIp: device.createdIp,
  createdAt: isoTime(device.createdAt),
  expiresAt: isoTime(device.expiresAt),
  lastUsedAt: device.lastUsedAt === null ? null : isoTime(device.lastUsedAt),
});

const signedInErrors = { 401: errorResponse.describe('No valid session (UNAUTHENTICATED)') };
const signedInUser = access.user();

export const trustedDevicesApiRoutes: FastifyPluginAsyncZod<{ trustedDevices: TrustedDevicesService }> = async (app, { trustedDevices }) => {
  const common = { tags: ['trusted-devices'], security: [{ bearer: [] }] };

  app.get(
    '/api/auth/trusted-devices',
    { config: { access: signedInUser }, schema: { ...common, summary: 'Your trusted browsers', description: 'The browsers that skip your second factor at sign-in, until `expiresAt`.', response: { 200: z.object({ devices: z.array(deviceJson) }), ...signedInErrors } } },
    async (request) => ({ devices: (await trustedDevices.list(signedIn(request).userId)).map(toJson) }),
  );

  app.delete(
    '/api/auth/trusted-devices/:id',
    {
      config: { access: signedInUser },
      schema: {
        ...common,
        summary: 'Forget one of your trusted browsers',
        description: 'Its next sign-in asks for the second factor again.',
        params: z.object({ id: z.string().min(1).max(64) }),
        response: { 200: z.object({ ok: z.literal(true) }), ...signedInErrors, 404: errorResponse.describe('You have no trusted browser with this id (TRUSTED_DEVICE_NOT_FOUND)') },
      },
    },
    async (request) => {
      const auth = signedIn(request);
      if (!(await trustedDevices.forget(auth.userId, request.params.id, requestSource(request, auth.userId)))) throw new AppError('TRUSTED_DEVICE_NOT_FOUND');
      return { ok: true as const };
    },
  );

  app.delete(
    '/api/auth/trusted-devices',
    {
      config: { access: signedInUser },
      schema: { ...common, summary: 'Forget all your trusted browsers', description: 'Every browser asks for the second factor again.', response: { 200: z.object({ ok: z.literal(true), forgotten: z.number().int() }), ...signedInErrors } },
    },
    async (request) => {
      const auth = signedIn(request);
      return { ok: true as const, forgotten: await trustedDevices.forgetAll(auth.userId, requestSource(request, auth.userId)) };
    },
  );
};

/** A dashboard form: signed in (or back to sign-in), and its refusals back to the dashboard with their code. */
const dashboardForm = {
  formErrorPage: HUB_PAGES.dashboard,
  access: access.user({
    exempt: [DURING_ENROLMENT],
    refusalPage: (_request, _reply, code) => {
      throw new AppError(code as ErrorCode);
    },
  }),
};
const csrfToken = z.string().max(200).optional();

export const trustedDevicesFormRoutes: FastifyPluginAsyncZod<{ trustedDevices: TrustedDevicesService }> = async (app, { trustedDevices }) => {
  app.post('/dashboard/trusted-devices/forget', { config: dashboardForm, schema: { hide: true, body: z.object({ id: z.string().min(1).max(64), csrfToken }, { error: 'must be a JSON object' }) } }, async (request, reply) => {
    const auth = signedIn(request);
    if (!(await trustedDevices.forget(auth.userId, request.body.id, requestSource(request, auth.userId)))) throw new AppError('TRUSTED_DEVICE_NOT_FOUND');
    return reply.redirect(DASHBOARD_SECTION, 303);
  });

  app.post('/dashboard/trusted-devices/forget-all', { config: dashboardForm, schema: { hide: true, body: z.object({ csrfToken }, { error: 'must be a JSON object' }).optional() } }, async (request, reply) => {
    const auth = signedIn(request);
    await trustedDevices.forgetAll(auth.userId, requestSource(request, auth.userId));
    return reply.redirect(HUB_PAGES.dashboard, 303);
  });
};

/** The dashboard's section: the user's trusted browsers, when they have any. */
export function trustedDevicesPageSections(trustedDevices: TrustedDevicesService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'dashboard',
      group: 'security',
      async render({ userId, page }) {
        if (userId === null) return null;
        const devices = await trustedDevices.list(userId);
        if (devices.length === 0) return null;
        const { i18n } = page;
        const shown = devices.map((device) => ({
          id: device.id,
          label: deviceLabel(device.userAgent, i18n) ?? i18n.t('trusted-devices.dashboard.unknownDevice'),
          ip: device.createdIp,
          createdAt: formatTime(device.createdAt, i18n.locale),
          lastUsedAt: device.lastUsedAt === null ? null : formatTime(device.lastUsedAt, i18n.locale),
          expiresAt: formatTime(device.expiresAt, i18n.locale),
        }));
        return pages.html(page, 'trusted-devices-dashboard-section', { title: '', devices: shown });
      },
    },
  ];
}
