/**
 * What a role name is: upper-case letters, digits and _, starting with a letter, at most 64. Its
 * own file, without the store, for what checks a role before it touches the database (the
 * `gatehouse users` command line, the import's role rules).
 */
export { ADMIN_ROLE } from '../../packages/protect/src/contract.ts';

const ROLE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

export function isValidRole(role: string): boolean {
  return ROLE_PATTERN.test(role);
}
