/** The role names an admin form types: names separated by spaces or commas, each once. */
import { isValidRole } from '../users/user.service.ts';
import { MAX_ROLES } from './admin.routes.ts';

export function parseRoles(text: string): { ok: true; roles: string[] } | { ok: false; code: 'INVALID_ROLE' | 'TOO_MANY_ROLES' } {
  const roles = [...new Set(text.split(/[\s,]+/).filter((name) => name !== ''))];
  if (!roles.every(isValidRole)) return { ok: false, code: 'INVALID_ROLE' };
  if (roles.length > MAX_ROLES) return { ok: false, code: 'TOO_MANY_ROLES' };
  return { ok: true, roles };
}
