/**
 * What the organizations module holds of a user (module.ts, `userData`): their memberships and
 * the invitations waiting for their address. The only OWNER of an organization with other members
 * cannot delete their account until they hand it over (or delete it); otherwise the deletion
 * removes them from every organization, deleting those they were alone in (`removeUser`).
 */
import type { DeletionBlock, UserDataHandler } from '../module.ts';
import type { UserService } from '../users/user.service.ts';
import type { Organization } from './organizations.model.ts';
import type { OrganizationsService } from './organizations.service.ts';
import { organizationPage } from './organizations-pages.routes.ts';

/** The block for organizations the user must hand over first; null when there are none. */
function handOverFirst(organizations: ReadonlyArray<Pick<Organization, 'id' | 'slug' | 'name'>>): DeletionBlock | null {
  if (organizations.length === 0) return null;
  return {
    code: 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED',
    message: 'organizations.deletion.blockers',
    items: organizations.map((organization) => ({ name: organization.name, detail: organization.slug, href: organizationPage(organization.id) })),
    summary: `is the only OWNER of ${organizations.map((organization) => organization.slug).join(', ')}: transfer ownership or delete the organization first`,
  };
}

export function organizationsUserData(deps: { organizations: OrganizationsService; users: UserService }): UserDataHandler {
  const { organizations, users } = deps;
  return {
    blocksDeletion: async (userId, db) => handOverFirst(await organizations.ownershipBlockers(userId, db)),
    // Judged again with each organization locked: a transfer that made them its OWNER meanwhile refuses the deletion.
    async erase({ user, db, source }) {
      const removed = await organizations.removeUser(user.id, db, source);
      return removed.ok ? null : handOverFirst(removed.organizations);
    },
    async export(userId) {
      const user = await users.findUserById(userId);
      const [memberships, invitations] = await Promise.all([organizations.listFor(userId), user === null ? [] : organizations.invitationsFor(user)]);
      return {
        memberships: memberships.map(({ id, slug, name, role, joinedAt }) => ({ id, slug, name, role, joinedAt })),
        invitations: invitations.map(({ id, organization, role, expiresAt }) => ({ id, organization, role, expiresAt })),
      };
    },
  };
}
