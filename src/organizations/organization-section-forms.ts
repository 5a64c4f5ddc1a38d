/**
 * What the forms of a section another module adds to an organization's page (`organization` slot)
 * declare: a signed-out post goes to sign in and back to the organization's page; a refused one
 * back to the organizations page with its code; `change` (making a credential) also asks for a
 * recent second factor. `back` is the section on the organization's page.
 */
import type { FastifyRequest } from 'fastify';
import { access, RECENT_SECOND_FACTOR } from '../authorization/access.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';

export const organizationPagePath = (id: string) => `/organizations/${encodeURIComponent(id)}`;

export function organizationSectionForms(sectionAnchor: string) {
  const signedOutRedirect = (request: FastifyRequest) => signInRedirect(organizationPagePath((request.params as { id: string }).id));
  return {
    read: { access: access.user({ signedOutRedirect }), formErrorPage: '/organizations' },
    change: { access: access.user({ signedOutRedirect, requires: [RECENT_SECOND_FACTOR] }), formErrorPage: '/organizations' },
    back: (organizationId: string) => `${organizationPagePath(organizationId)}${sectionAnchor}`,
  };
}
