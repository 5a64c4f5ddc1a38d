/**
 * The organizations' hosted pages, in the page's language (texts: `messages/*.json`; the built-in
 * roles in words, `organizations.role.<ROLE>`, while forms post the role itself; custom roles, slugs
 * and codes stay as they are). No script; forms with CSRF tokens, checked by the plumbing:
 * - the dashboard's **Organizations** section: yours with your role and the active one marked,
 *   a switcher, the invitations to your verified address (Accept / Decline), and a create form;
 * - `/organizations/new`: the create form on its own (where a refused creation comes back);
 * - `/organizations/:id`: one organization for its members: members and roles (change / remove
 *   forms for those allowed), invitations (invite, revoke), rename, transfer, leave, delete (typing
 *   its slug to confirm). To anyone else it does not exist (404);
 * - `/organizations/invitations/accept?token=…`: what a mailed link opens: the organization and
 *   role, Accept (signed in; sign-in comes back here) and Decline. A GET never uses the token.
 * Every form posts to a route here, which calls the service the JSON API calls and answers 303
 * back to a page with `?notice=CODE` or `?error=CODE`. A signed-out visitor of a page or a form
 * for the signed-in is sent to sign in, coming back to the page (the form's page, for a form); the
 * role a member holds in an organization is the organizations service's to check.
 */
import { z } from 'zod';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, sessionOf, signedIn } from '../authorization/access.ts';
import type { Config } from '../config.ts';
import { renderPageSections, type PageSection } from '../module.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import { toSafeLocalPath } from '../http/safe-redirect.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { requestSource } from '../audit/request-source.ts';
import type { UserService } from '../users/user.service.ts';
import { emailField } from '../users/email.ts';
import { nameField } from '../users/name.ts';
import type { Clock } from '../lib/clock.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { shownCode, queryText } from '../web/page-query.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { BUILT_IN_ROLES, OWNER, ADMIN, MEMBER, slugProblem, type OrganizationsService } from './organizations.service.ts';
import { activateAndReissue } from './organizations.routes.ts';
import { roleField } from './organizations.schemas.ts';
import { organizationAlerts, organizationError, roleChoices, roleLabel, type PageAlert, type RoleChoice } from './organizations-pages.messages.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

export const ORGANIZATIONS_PAGE = '/organizations';
export const organizationPage = (id: string) => `${ORGANIZATIONS_PAGE}/${encodeURIComponent(id)}`;
const NEW_PAGE = '/organizations/new';
const INVITATION_PAGE = '/organizations/invitations/accept';
const DASHBOARD = HUB_PAGES.dashboard;

interface Alerts {
  alerts: PageAlert[];
}

interface OrganizationPages {
  'organizations-dashboard-section': {
    csrfToken: string;
    organizations: Array<{ id: string; name: string; slug: string; roleLabel: string; isActive: boolean; href: string }>;
    activeId: string | null;
    invitations: Array<{ id: string; organizationName: string; role: string; expiresAt: TimeText }>;
    mayCreate: boolean;
    form: null;
  };
  'organization-new': Alerts & { csrfToken: string; mayCreate: boolean; form: { name: string; slug: string } | null };
  organization: Alerts & {
    csrfToken: string;
    href: string;
    organization: { id: string; name: string; slug: string; createdAt: TimeText };
    /** Your role, in words. */
    myRoleLabel: string;
    isActive: boolean;
    isManager: boolean;
    isOwner: boolean;
    members: Array<{ userId: string; name: string; email: string; role: string; roleLabel: string; isSelf: boolean; canChangeRole: boolean; canRemove: boolean; roleChoices: RoleChoice[] }>;
    invitations: Array<{ id: string; email: string; role: string; expiresAt: TimeText }>;
    inviteRoles: RoleChoice[];
    transferChoices: Array<{ userId: string; label: string }>;
    actions: Record<'role' | 'remove' | 'invite' | 'revoke' | 'rename' | 'transfer' | 'leave' | 'delete', string>;
    /** Other modules' sections of this page (`organization`), rendered after the invitations. */
    sections: string[];
  };
  'organization-invitation': Alerts & {
    csrfToken: string;
    token: string;
    isSignedIn: boolean;
    isDone: boolean;
    signInHref: string;
    invitation: { organizationName: string; role: string; email: string; expiresAt: TimeText } | null;
  };
}

const renderer = () => createPageRenderer<OrganizationPages>(templatesIn(join(import.meta.dirname, 'templates')).filter((file) => !file.includes('admin-organization')));

/** The dashboard's Organizations section. */
export function organizationPageSections(deps: { organizations: OrganizationsService; users: UserService }): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'dashboard',
      group: 'organizations',
      async render({ userId, page }) {
        const { i18n } = page;
        if (userId === null) return null;
        const user = await deps.users.findUserById(userId);
        if (user === null) return null;
        const [memberships, invitations] = await Promise.all([deps.organizations.listFor(userId, page.viewer?.sessionId), deps.organizations.invitationsFor(user)]);
        return pages.html(page, 'organizations-dashboard-section', {
          title: '',
          organizations: memberships.map((membership) => ({ id: membership.id, name: membership.name, slug: membership.slug, roleLabel: roleLabel(membership.role, i18n), isActive: membership.isActive, href: organizationPage(membership.id) })),
          activeId: memberships.find((membership) => membership.isActive)?.id ?? null,
          invitations: invitations.map((invitation) => ({ id: invitation.id, organizationName: invitation.organization.name, role: invitation.role, expiresAt: formatTime(invitation.expiresAt, i18n.locale) })),
          mayCreate: deps.organizations.mayCreate(user),
          form: null,
        });
      },
    },
  ];
}

export interface OrganizationPageOptions {
  organizations: OrganizationsService;
  users: UserService;
  sessions: SessionService;
  config: Config;
  clock: Clock;
  /** The sections other modules add to an organization's page (`pageSections('organization')`). */
  sections?: readonly PageSection[];
}

const hidden = { hide: true } as const;
const csrfField = z.string().max(200).optional();
const text = (max: number) => z.string().max(max).optional();
const pageQuery = z.object({ notice: shownCode, error: shownCode });
const params = z.object({ id: z.string().min(1).max(64) });

/** Signed in; signed out, to sign in and back to `page` (for a form: the page it is on). */
const signedInComingBackTo = (page: string) => ({ access: access.user({ signedOutRedirect: signInRedirect(page) }) });
/** Signed in; signed out, to sign in and back to the organization's page (the route's `:id`). */
const forOrganizationMembers = { access: access.user({ signedOutRedirect: (request: FastifyRequest) => signInRedirect(organizationPage((request.params as { id: string }).id)) }) };
/** Anyone; the handler tells the signed-in apart (`sessionOf`). */
const readingTheSession = { access: access.anyone({ readsSession: true }) };

export const organizationPageRoutes: FastifyPluginAsyncZod<OrganizationPageOptions> = async (app, options) => {
  const { organizations, users } = options;
  const pages = renderer();
  // What the handlers cannot tell apart (a field far too long, a database outage) goes back to the dashboard.
  const formErrorPage = DASHBOARD;

  const back = (reply: FastifyReply, path: string, query: Record<string, string>) => reply.redirect(`${path}?${new URLSearchParams(query)}`, 303);

  function notFoundPage(request: FastifyRequest, reply: FastifyReply) {
    const { i18n } = reply.page;
    const { code, message } = organizationError('ORGANIZATION_NOT_FOUND', i18n);
    const heading = i18n.t('organizations.notFound.title');
    return pages.send(reply, 'error', { title: heading, code, heading, message }, { status: 404 });
  }

  /** The signed-in caller: as the service's actor, and as the audit log's source. */
  function caller(request: FastifyRequest) {
    const auth = signedIn(request);
    return { auth, actor: { userId: auth.userId }, source: requestSource(request, auth.userId) };
  }

  app.get(NEW_PAGE, { config: signedInComingBackTo(NEW_PAGE), schema: { ...hidden, querystring: pageQuery } }, async (request, reply) => {
    const signed = caller(request);
    const user = await users.findUserById(signed.auth.userId);
    const { i18n } = reply.page;
    return pages.send(reply, 'organization-new', {
      title: i18n.t('organizations.create.title'),
      alerts: organizationAlerts(request.query, i18n),
      mayCreate: user !== null && organizations.mayCreate(user),
      form: null,
    });
  });

  app.post(ORGANIZATIONS_PAGE, { config: { ...signedInComingBackTo(NEW_PAGE), formErrorPage }, schema: { ...hidden, body: z.object({ name: text(1000), slug: text(200), csrfToken: csrfField }) } }, async (request, reply) => {
    const signed = caller(request);
    const user = await users.findUserById(signed.auth.userId);
    if (user === null) return reply.redirect(signInRedirect(NEW_PAGE), 303);
    const slug = (request.body.slug ?? '').trim();
    const result = await organizations.create({ name: request.body.name ?? '', ...(slug !== '' && { slug }) }, user.id, signed.source, { policyFor: user });
    if (result.ok) return back(reply, organizationPage(result.organization.id), { notice: 'ORGANIZATION_CREATED' });
    const code = result.reason === 'INVALID_NAME' || result.reason === 'INVALID_SLUG' ? 'VALIDATION_ERROR' : result.reason;
    return back(reply, NEW_PAGE, { error: code });
  });

  app.post(
    `${ORGANIZATIONS_PAGE}/active`,
    { config: { ...signedInComingBackTo(DASHBOARD), formErrorPage }, schema: { ...hidden, body: z.object({ organizationId: text(64), returnTo: text(200), csrfToken: csrfField }) } },
    async (request, reply) => {
      const signed = caller(request);
      const returnTo = toSafeLocalPath(request.body.returnTo, 'http://x', DASHBOARD);
      const target = returnTo === DASHBOARD || returnTo.startsWith(`${ORGANIZATIONS_PAGE}/`) ? returnTo : DASHBOARD;
      const organizationId = (request.body.organizationId ?? '') === '' ? null : request.body.organizationId!;
      try {
        await activateAndReissue(options, signed.auth, reply, organizationId);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === 'ORGANIZATION_NOT_FOUND') return back(reply, DASHBOARD, { error: code });
        throw error;
      }
      return reply.redirect(target === DASHBOARD ? `${DASHBOARD}#organizations-heading` : `${target}?notice=ORGANIZATION_ACTIVATED`, 303);
    },
  );

  // The invitation link's page and its two forms.
  app.get(INVITATION_PAGE, { config: readingTheSession, schema: { ...hidden, querystring: pageQuery.extend({ token: queryText(200) }) } }, async (request, reply) => {
    const token = request.query.token ?? '';
    const auth = sessionOf(request);
    const { i18n } = reply.page;
    const alerts = organizationAlerts(request.query, i18n);
    const preview = token === '' ? null : await organizations.previewInvitation(token);
    if (token !== '' && preview !== null && !preview.ok && request.query.error === undefined) alerts.push(organizationError(preview.reason, i18n));
    const invitation = preview !== null && preview.ok ? preview.invitation : null;
    const here = `${INVITATION_PAGE}?${new URLSearchParams({ token })}`;
    return pages.send(reply, 'organization-invitation', {
      title: i18n.t('organizations.invitation.title'),
      alerts,
      token,
      isSignedIn: auth !== null,
      isDone: token === '',
      signInHref: signInRedirect(here),
      invitation: invitation === null ? null : { organizationName: invitation.organization.name, role: invitation.role, email: invitation.email, expiresAt: formatTime(invitation.expiresAt, i18n.locale) },
    });
  });

  const answerBody = z.object({ token: text(200), invitationId: text(64), csrfToken: csrfField });

  // For the signed-in, but declared for anyone: a signed-out visitor goes to sign in and back to the
  // invitation the form names (its body, which the access hook runs too early to read).
  app.post(`${INVITATION_PAGE}`, { config: { ...readingTheSession, formErrorPage }, schema: { ...hidden, body: answerBody } }, async (request, reply) => {
    const { token, invitationId } = request.body;
    const page = token !== undefined ? `${INVITATION_PAGE}?${new URLSearchParams({ token })}` : DASHBOARD;
    const auth = sessionOf(request);
    const user = auth === null ? null : await users.findUserById(auth.userId);
    if (user === null) return reply.redirect(signInRedirect(page), 303);
    const ref = token !== undefined ? { token } : { invitationId: invitationId ?? '' };
    const result = await organizations.acceptInvitation(ref, user, requestSource(request, user.id));
    if (result.ok) return back(reply, organizationPage(result.organization.id), { notice: 'INVITATION_ACCEPTED' });
    if (token !== undefined) return back(reply, INVITATION_PAGE, { token, error: result.reason });
    return reply.redirect(`${DASHBOARD}?${new URLSearchParams({ error: result.reason })}`, 303);
  });

  app.post('/organizations/invitations/decline', { config: { ...readingTheSession, formErrorPage }, schema: { ...hidden, body: answerBody } }, async (request, reply) => {
    const { token, invitationId } = request.body;
    const auth = sessionOf(request);
    const user = auth === null ? null : await users.findUserById(auth.userId);
    const source = requestSource(request, auth?.userId ?? null);
    if (token !== undefined) {
      // Whoever holds the link (the mail's reader) may decline it, signed in or not.
      const result = await organizations.declineInvitation({ token }, user, source);
      return result.ok ? back(reply, INVITATION_PAGE, { notice: 'INVITATION_DECLINED' }) : back(reply, INVITATION_PAGE, { token, error: result.reason });
    }
    if (user === null) return reply.redirect(signInRedirect(DASHBOARD), 303);
    const result = await organizations.declineInvitation({ invitationId: invitationId ?? '' }, user, source);
    return reply.redirect(`${DASHBOARD}?${new URLSearchParams(result.ok ? { notice: 'INVITATION_DECLINED' } : { error: result.reason })}#organizations-heading`, 303);
  });

  // One organization's page and its forms.
  app.get(`${ORGANIZATIONS_PAGE}/:id`, { config: forOrganizationMembers, schema: { ...hidden, params, querystring: pageQuery } }, async (request, reply) => {
    const href = organizationPage(request.params.id);
    const { auth, actor } = caller(request);
    const found = await organizations.get(request.params.id, actor);
    if (found === null || found.role === null) return notFoundPage(request, reply);
    const { organization, role: myRole } = found;
    const isOwner = myRole === OWNER;
    const isManager = isOwner || myRole === ADMIN;
    const [members, invitations, memberships, sections] = await Promise.all([
      organizations.listMembers(organization.id, actor),
      isManager ? organizations.listInvitations(organization.id, actor) : Promise.resolve([]),
      organizations.listFor(auth.userId, auth.sessionId),
      renderPageSections(options.sections ?? [], { userId: auth.userId, organizationId: organization.id, page: reply.page }),
    ]);
    const { i18n } = reply.page;
    const choicesFor = (current: string) => roleChoices([...new Set([...(isOwner ? BUILT_IN_ROLES : [ADMIN, MEMBER]), current])], i18n);
    const base = href;
    return pages.send(reply, 'organization', {
      title: organization.name,
      isWide: true,
      alerts: organizationAlerts(request.query, i18n),
      href,
      organization: { id: organization.id, name: organization.name, slug: organization.slug, createdAt: formatTime(organization.createdAt, i18n.locale) },
      myRoleLabel: roleLabel(myRole, i18n),
      isActive: memberships.some((membership) => membership.id === organization.id && membership.isActive),
      isManager,
      isOwner,
      sections: sections.html,
      members: (members ?? []).map((member) => {
        const isSelf = member.userId === auth.userId;
        const mayTouch = isManager && (isOwner || member.role !== OWNER);
        return { userId: member.userId, name: member.name, email: member.email, role: member.role, roleLabel: roleLabel(member.role, i18n), isSelf, canChangeRole: mayTouch, canRemove: mayTouch && !isSelf, roleChoices: choicesFor(member.role) };
      }),
      invitations: Array.isArray(invitations) ? invitations.map((invitation) => ({ id: invitation.id, email: invitation.email, role: invitation.role, expiresAt: formatTime(invitation.expiresAt, i18n.locale) })) : [],
      inviteRoles: roleChoices(isOwner ? BUILT_IN_ROLES : [ADMIN, MEMBER], i18n),
      transferChoices: (members ?? []).filter((member) => member.userId !== auth.userId).map((member) => ({ userId: member.userId, label: i18n.t('organizations.page.transferChoice', { name: member.name, email: member.email }) })),
      actions: {
        role: `${base}/members/role`,
        remove: `${base}/members/remove`,
        invite: `${base}/invitations`,
        revoke: `${base}/invitations/revoke`,
        rename: `${base}/rename`,
        transfer: `${base}/transfer`,
        leave: `${base}/leave`,
        delete: `${base}/delete`,
      },
    });
  });

  /** A form on an organization's page: `act` as the signed-in caller; its outcome back to the page. */
  function organizationForm<B extends z.ZodType>(
    path: string,
    body: B,
    act: (input: { id: string; body: z.infer<B>; actor: { userId: string }; source: ReturnType<typeof requestSource> }) => Promise<{ ok: true; notice: string; to?: string } | { ok: false; reason: string }>,
  ) {
    app.post(`${ORGANIZATIONS_PAGE}/:id/${path}`, { config: { ...forOrganizationMembers, formErrorPage }, schema: { ...hidden, params, body } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const href = organizationPage(id);
      const signed = caller(request);
      const outcome = await act({ id, body: request.body as z.infer<B>, actor: signed.actor, source: signed.source });
      if (outcome.ok) return back(reply, outcome.to ?? href, { notice: outcome.notice });
      const code = ['INVALID_NAME', 'INVALID_SLUG', 'INVALID_ROLE'].includes(outcome.reason) ? 'VALIDATION_ERROR' : outcome.reason;
      return code === 'ORGANIZATION_NOT_FOUND' ? back(reply, DASHBOARD, { error: code }) : back(reply, href, { error: code });
    });
  }

  const userIdBody = z.object({ userId: text(64), csrfToken: csrfField });
  const invalid = { ok: false as const, reason: 'VALIDATION_ERROR' };

  organizationForm('rename', z.object({ name: text(1000), slug: text(200), csrfToken: csrfField }), async ({ id, body, actor, source }) => {
    const name = nameField.safeParse(body.name ?? '');
    const slug = (body.slug ?? '').trim();
    if (!name.success || (slug !== '' && slugProblem(slug) !== null)) return invalid;
    const result = await organizations.update(id, actor, { name: name.data, ...(slug !== '' && { slug }) }, source);
    return result.ok ? { ok: true, notice: 'ORGANIZATION_SAVED' } : result;
  });

  organizationForm('delete', z.object({ confirm: text(200), csrfToken: csrfField }), async ({ id, body, actor, source }) => {
    const found = await organizations.get(id, actor);
    if (found === null) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
    if ((body.confirm ?? '').trim() !== found.organization.slug) return { ok: false, reason: found.role === OWNER ? 'CONFIRMATION_MISMATCH' : 'ORGANIZATION_ROLE_REQUIRED' };
    const result = await organizations.delete(id, actor, source);
    return result.ok ? { ok: true, notice: 'ORGANIZATION_DELETED', to: DASHBOARD } : result;
  });

  organizationForm('leave', z.object({ csrfToken: csrfField }).optional(), async ({ id, actor, source }) => {
    const result = await organizations.leave(id, actor.userId, source);
    return result.ok ? { ok: true, notice: 'ORGANIZATION_LEFT', to: DASHBOARD } : result;
  });

  organizationForm('transfer', userIdBody, async ({ id, body, actor, source }) => {
    const result = await organizations.transferOwnership(id, actor, body.userId ?? '', source);
    return result.ok ? { ok: true, notice: 'OWNERSHIP_TRANSFERRED' } : result;
  });

  organizationForm('members/role', z.object({ userId: text(64), role: text(100), csrfToken: csrfField }), async ({ id, body, actor, source }) => {
    const role = roleField.safeParse(body.role ?? '');
    if (!role.success) return invalid;
    const result = await organizations.setRole(id, actor, body.userId ?? '', role.data, source);
    return result.ok ? { ok: true, notice: 'ROLE_CHANGED' } : result;
  });

  organizationForm('members/remove', userIdBody, async ({ id, body, actor, source }) => {
    const result = await organizations.removeMember(id, actor, body.userId ?? '', source);
    return result.ok ? { ok: true, notice: 'MEMBER_REMOVED' } : result;
  });

  organizationForm('invitations', z.object({ email: text(1000), role: text(100), csrfToken: csrfField }), async ({ id, body, actor, source }) => {
    const email = emailField.safeParse(body.email ?? '');
    const role = roleField.safeParse(body.role ?? MEMBER);
    if (!email.success || !role.success) return invalid;
    const result = await organizations.invite(id, actor, { email: email.data, role: role.data }, source);
    return result.ok ? { ok: true, notice: 'INVITATION_SENT' } : result;
  });

  organizationForm('invitations/revoke', z.object({ invitationId: text(64), csrfToken: csrfField }), async ({ id, body, actor, source }) => {
    const result = await organizations.revokeInvitation(id, actor, body.invitationId ?? '', source);
    return result.ok ? { ok: true, notice: 'INVITATION_REVOKED' } : result;
  });
};
