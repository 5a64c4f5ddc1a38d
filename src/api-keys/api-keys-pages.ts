/**
 * API keys on the hosted pages (no script; forms with CSRF tokens):
 * - the dashboard's **API keys** section: your personal keys (name, prefix and id, roles and
 *   scopes, expiry, last use) with Revoke, and a form to create one;
 * - the organization page's section (`organization`), for its OWNERs and ADMINs: its keys, Revoke,
 *   and a form to create one with a role;
 * - the admin user page's section: the person's keys, with Revoke;
 * - `POST /dashboard/api-keys`, `POST /organizations/:id/api-keys`: create, answered with a page
 *   that shows the key this once (or why it was refused); the revoke forms go back to their page.
 * Creating asks for a recent second factor (from a person who has one), as every new credential.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { BuiltServices, PageSection } from '../module.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';
import type { PageContext } from '../web/page-context.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { ADMIN, MEMBER, OWNER } from '../organizations/organizations.model.ts';
import { roleChoices, roleLabel, type RoleChoice } from '../organizations/organizations-pages.messages.ts';
import type { ApiKeysService, NewKeyInput } from './api-keys.service.ts';
import type { ApiKeysConfig } from './api-keys.config.ts';
import { ADMIN_SCOPE, MAX_NAME_LENGTH, WRITE_SCOPE, type ApiKeyView } from './api-keys.model.ts';
import { API_KEY_SCANNER_REGEX } from './key-format.ts';
import { keyIdOf } from './api-key-guard.ts';

const DASHBOARD = HUB_PAGES.dashboard;
const DASHBOARD_KEYS = `${DASHBOARD}#api-keys-heading`;
const organizationPage = (id: string) => `/organizations/${encodeURIComponent(id)}`;
const adminUserPage = (id: string) => `/admin/users/${encodeURIComponent(id)}`;
/** The lifetimes the forms offer, in days (each within API_KEY_MAX_TTL is shown). */
const LIFETIMES = [7, 30, 90, 180, 366];

interface KeyRow {
  id: string;
  name: string;
  hint: string;
  status: ApiKeyView['status'];
  grants: string;
  expiresAt: TimeText;
  lastUsedAt: TimeText | null;
  lastUsedIp: string | null;
}

interface FormModel {
  action: string;
  lifetimes: number[];
  defaultDays: number;
  /** The roles a key may carry: the value posted and its words (an organization's roles in the page's language). */
  roleChoices: RoleChoice[];
  mayChooseAdmin: boolean;
  isOrganization: boolean;
  maxNameLength: number;
}

interface ApiKeyPages {
  'api-keys-section': { csrfToken: string; heading: string; intro: string; keys: KeyRow[]; revokeAction: string; form: FormModel | null; prefix: string };
  'api-key-result': { secret: string | null; error: { code: string; message: string } | null; back: string; name: string; scannerRegex: string };
}

const renderer = () => createPageRenderer<ApiKeyPages>(templatesIn(join(import.meta.dirname, 'templates')));

/** The active keys as rows; `labelRole` puts a role in words (an organization key's: its role in the page's language). */
function rowsOf(keys: readonly ApiKeyView[], page: PageContext, labelRole: (role: string) => string = (role) => role): KeyRow[] {
  const { i18n } = page;
  return keys
    .filter((key) => key.status === 'active')
    .map((key) => ({
      id: key.id,
      name: key.name,
      hint: key.hint,
      status: key.status,
      grants: [...key.roles.map(labelRole), ...key.scopes.map((scope) => `scope:${scope}`)].join(', ') || i18n.t('api-keys.section.noRoles'),
      expiresAt: formatTime(key.expiresAt, i18n.locale),
      lastUsedAt: key.lastUsedAt === null ? null : formatTime(key.lastUsedAt, i18n.locale),
      lastUsedIp: key.lastUsedIp,
    }));
}

/** An account's roles as choices: they are the deployment's own names, shown as they are. */
const asChoices = (roles: readonly string[]): FormModel['roleChoices'] => roles.map((role) => ({ value: role, label: role }));

function formModel(config: ApiKeysConfig, action: string, roleChoices: FormModel['roleChoices'], options: { mayChooseAdmin: boolean; isOrganization: boolean }): FormModel {
  const maxDays = Math.floor(config.maxTtlSeconds / 86_400);
  const defaultDays = Math.max(1, Math.round(config.defaultTtlSeconds / 86_400));
  const lifetimes = [...new Set([...LIFETIMES.filter((days) => days <= maxDays), defaultDays])].sort((a, b) => a - b);
  return { action, lifetimes, defaultDays, roleChoices, maxNameLength: MAX_NAME_LENGTH, ...options };
}

export function apiKeyPageSections({ apiKeys, users, organizations, config: { apiKeys: config } }: Pick<BuiltServices, 'apiKeys' | 'users' | 'organizations' | 'config'>): PageSection[] {
  const pages = renderer();
  const section = (page: PageContext, model: Omit<ApiKeyPages['api-keys-section'], 'csrfToken' | 'prefix'>) => pages.html(page, 'api-keys-section', { title: '', prefix: 'api-key', ...model });
  return [
    {
      page: 'dashboard',
      // Beside the apps a person let act for them: keys are how their own scripts and integrations do.
      group: 'apps',
      async render({ userId, page }) {
        if (userId === null || !config.enabled) return null;
        const user = await users.findUserById(userId);
        if (user === null) return null;
        const keys = (await apiKeys.list({ userId }, { userId })) ?? [];
        const { i18n } = page;
        const roles = user.roles.filter((role) => role !== ADMIN_ROLE);
        return section(page, {
          heading: i18n.t('api-keys.section.heading'),
          intro: i18n.t('api-keys.section.intro'),
          keys: rowsOf(keys, page),
          revokeAction: '/dashboard/api-keys/revoke',
          form: formModel(config, '/dashboard/api-keys', asChoices(roles), { mayChooseAdmin: user.roles.includes(ADMIN_ROLE), isOrganization: false }),
        });
      },
    },
    {
      page: 'admin-user',
      async render({ userId, page }) {
        if (userId === null) return null;
        const user = await users.findUserById(userId);
        if (user === null) return null;
        const keys = (await apiKeys.list({ userId }, 'operator')) ?? [];
        const { i18n } = page;
        const base = `${adminUserPage(userId)}/api-keys`;
        const form = config.enabled && user.disabledAt === null ? formModel(config, base, asChoices(user.roles.filter((role) => role !== ADMIN_ROLE)), { mayChooseAdmin: user.roles.includes(ADMIN_ROLE), isOrganization: false }) : null;
        return section(page, { heading: i18n.t('api-keys.admin.heading'), intro: i18n.t('api-keys.admin.intro'), keys: rowsOf(keys, page), revokeAction: `${base}/revoke`, form });
      },
    },
    {
      page: 'organization',
      async render({ userId, organizationId, page }) {
        if (userId === null || organizationId === undefined || !config.enabled) return null;
        const found = await organizations.get(organizationId, { userId });
        if (found === null || (found.role !== OWNER && found.role !== ADMIN)) return null;
        const keys = (await apiKeys.list({ organizationId }, { userId })) ?? [];
        const { i18n } = page;
        const base = organizationPage(organizationId);
        return section(page, {
          heading: i18n.t('api-keys.organization.heading'),
          intro: i18n.t('api-keys.organization.intro'),
          keys: rowsOf(keys, page, (role) => roleLabel(role, i18n)),
          revokeAction: `${base}/api-keys/revoke`,
          form: formModel(config, `${base}/api-keys`, roleChoices([MEMBER, ADMIN], i18n), { mayChooseAdmin: false, isOrganization: true }),
        });
      },
    },
  ];
}

const csrfField = z.string().max(200).optional();
const text = (max: number) => z.string().max(max).optional();
const createForm = z.object({
  name: text(1000),
  days: text(10),
  roles: z.union([z.string().max(64), z.array(z.string().max(64)).max(50)]).optional(),
  role: text(64),
  adminScope: text(10),
  writeScope: text(10),
  scopes: text(2000),
  csrfToken: csrfField,
});
const revokeForm = z.object({ id: z.string().min(1).max(64), csrfToken: csrfField });
const params = z.object({ id: z.string().min(1).max(64) });
const hidden = { hide: true } as const;
/** The refusals the result page explains in words of its own (`api-keys.error.<CODE>`); others get the general text and their code. */
const SHOWN_ERRORS: ReadonlySet<string> = new Set([
  'VALIDATION_ERROR',
  'API_KEYS_DISABLED',
  'API_KEY_NOT_FOUND',
  'API_KEY_NOT_ALLOWED',
  'API_KEY_SCOPE_NOT_ALLOWED',
  'API_KEY_SCOPE_REQUIRED',
  'API_KEY_TTL_TOO_LONG',
  'API_KEY_LIMIT_REACHED',
  'ORGANIZATION_NOT_FOUND',
  'ORGANIZATION_ROLE_REQUIRED',
  'REAUTH_REQUIRED',
]);

/** The signed-in person; a key is refused (the guard refuses pages anyway). */
function personOf(request: FastifyRequest) {
  const auth = signedIn(request);
  if (keyIdOf(auth) !== null) throw new AppError('API_KEY_NOT_ALLOWED');
  return auth;
}

function inputOf(body: z.infer<typeof createForm>, kind: 'personal' | 'organization'): NewKeyInput | null {
  const days = body.days === undefined || body.days === '' ? undefined : Number(body.days);
  if (days !== undefined && !(Number.isSafeInteger(days) && days >= 1 && days <= 3660)) return null;
  const scopes = (body.scopes ?? '').split(/[\s,]+/).filter((scope) => scope !== '');
  if (body.adminScope === 'on' && kind === 'personal') scopes.push(ADMIN_SCOPE);
  if (body.writeScope === 'on' && kind === 'personal') scopes.push(WRITE_SCOPE);
  const roles = kind === 'organization' ? [body.role ?? 'MEMBER'] : [body.roles ?? []].flat();
  return { name: body.name ?? '', ...(days !== undefined && { ttlSeconds: days * 86_400 }), roles, scopes };
}

export const apiKeyPageRoutes: FastifyPluginAsyncZod<{ apiKeys: ApiKeysService; users: UserService; organizations: OrganizationsService }> = async (app, { apiKeys }) => {
  const pages = renderer();

  /** The created key, shown this once, or why it was not made. */
  function result(reply: FastifyReply, back: string, outcome: Awaited<ReturnType<ApiKeysService['createPersonal']>> | null) {
    const { i18n } = reply.page;
    reply.header('cache-control', 'no-store');
    if (outcome !== null && outcome.ok) {
      return pages.send(reply, 'api-key-result', { title: i18n.t('api-keys.result.title'), secret: outcome.secret, error: null, back, name: outcome.key.name, scannerRegex: API_KEY_SCANNER_REGEX });
    }
    const code = outcome === null ? 'VALIDATION_ERROR' : outcome.reason;
    const status = new AppError(code as ErrorCode).status;
    const message = i18n.t(SHOWN_ERRORS.has(code) ? `api-keys.error.${code}` : 'api-keys.error.default');
    return pages.send(reply, 'api-key-result', { title: i18n.t('api-keys.result.refusedTitle'), secret: null, error: { code, message }, back, name: '', scannerRegex: API_KEY_SCANNER_REGEX }, { status });
  }

  const newCredential = (back: (request: FastifyRequest) => string) => ({
    formErrorPage: DASHBOARD,
    access: access.user({ requires: [RECENT_SECOND_FACTOR], refusalPage: (request: FastifyRequest, reply: FastifyReply, code: string) => result(reply, back(request), { ok: false, reason: code as never }) }),
  });

  app.post('/dashboard/api-keys', { config: newCredential(() => DASHBOARD_KEYS), schema: { ...hidden, body: createForm } }, async (request, reply) => {
    const auth = personOf(request);
    const input = inputOf(request.body, 'personal');
    const outcome = input === null ? null : await apiKeys.createPersonal(auth.userId, { userId: auth.userId }, input, requestSource(request, auth.userId));
    return result(reply, DASHBOARD_KEYS, outcome);
  });

  const orgBack = (request: FastifyRequest) => organizationPage((request.params as { id: string }).id);
  app.post('/organizations/:id/api-keys', { config: newCredential(orgBack), schema: { ...hidden, params, body: createForm } }, async (request, reply) => {
    const auth = personOf(request);
    const input = inputOf(request.body, 'organization');
    const outcome = input === null ? null : await apiKeys.createForOrganization(request.params.id, { userId: auth.userId }, input, requestSource(request, auth.userId));
    return result(reply, orgBack(request), outcome);
  });

  const adminBack = (request: FastifyRequest) => adminUserPage((request.params as { id: string }).id);
  app.post(
    '/admin/users/:id/api-keys',
    {
      config: { formErrorPage: DASHBOARD, access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR], refusalPage: (request: FastifyRequest, reply: FastifyReply, code: string) => result(reply, adminBack(request), { ok: false, reason: code as never }) }) },
      schema: { ...hidden, params, body: createForm },
    },
    async (request, reply) => {
      const auth = personOf(request);
      const input = inputOf(request.body, 'personal');
      const outcome = input === null ? null : await apiKeys.createPersonal(request.params.id, { userId: auth.userId, asAdmin: true }, input, requestSource(request, auth.userId));
      return result(reply, adminBack(request), outcome);
    },
  );

  const revoke = (path: string, access_: ReturnType<typeof access.user>, back: (request: FastifyRequest) => string, owner: (request: FastifyRequest) => Parameters<ApiKeysService['revoke']>[3], asAdmin = false) =>
    app.post(path, { config: { formErrorPage: DASHBOARD, access: access_ }, schema: { ...hidden, body: revokeForm } }, async (request, reply) => {
      const auth = personOf(request);
      const outcome = await apiKeys.revoke(request.body.id, { userId: auth.userId, asAdmin }, requestSource(request, auth.userId), owner(request));
      const to = back(request);
      const [path_, hash] = to.split('#');
      return reply.redirect(`${path_}${outcome.ok ? '' : `?${new URLSearchParams({ error: outcome.reason })}`}${hash === undefined ? '' : `#${hash}`}`, 303);
    });

  // Revoking only ever takes access away: reachable while the MFA policy still asks for enrolment.
  revoke('/dashboard/api-keys/revoke', access.user({ exempt: [DURING_ENROLMENT] }), () => DASHBOARD_KEYS, (request) => ({ userId: signedIn(request).userId }));
  revoke('/organizations/:id/api-keys/revoke', access.user({ exempt: [DURING_ENROLMENT] }), orgBack, (request) => ({ organizationId: (request.params as { id: string }).id }));
  // An administrator's change to a user, as every other one: with a recent second factor.
  revoke('/admin/users/:id/api-keys/revoke', access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }), (request) => adminUserPage((request.params as { id: string }).id), (request) => ({ userId: (request.params as { id: string }).id }), true);
};
