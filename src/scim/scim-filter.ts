/**
 * SCIM filters (RFC 7644 §3.4.2.2) turned into SQL safely: the expression is parsed by
 * `scim2-parse-filter`, then every attribute must be one of an allow-list that names its column
 * and type; values are bound parameters, never SQL text. `eq ne co sw ew pr gt ge lt le`, `and`,
 * `or`, `not` and parentheses; attributes that are not case-exact (userName, displayName, emails)
 * compare lower-cased. Anything else is an `invalidFilter`, never a 500.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Filter } from 'scim2-parse-filter';
import { onFirstUse } from '../lib/on-first-use.ts';

/** The filter parser, loaded by the first SCIM request with a filter, not at start. */
const filterLibrary = onFirstUse<typeof import('scim2-parse-filter')>(import.meta.url, 'scim2-parse-filter');
import type { Where } from './scim.store.ts';
import { CORE_USER_SCHEMA, GROUP_SCHEMA } from './scim-schemas.ts';

type Kind = 'ci' | 'exact' | 'boolean' | 'time';
interface Column {
  readonly column: string;
  readonly kind: Kind;
}

/** Attributes of a User one may filter on (lower-cased path → column). */
export const USER_FILTER_ATTRIBUTES: ReadonlyMap<string, Column> = new Map([
  ['id', { column: 'id', kind: 'exact' }],
  ['username', { column: 'user_name_key', kind: 'ci' }],
  ['externalid', { column: 'external_id', kind: 'exact' }],
  ['displayname', { column: 'display_name', kind: 'ci' }],
  ['name.givenname', { column: 'given_name', kind: 'ci' }],
  ['name.familyname', { column: 'family_name', kind: 'ci' }],
  ['emails', { column: 'email', kind: 'ci' }],
  ['emails.value', { column: 'email', kind: 'ci' }],
  ['active', { column: 'active', kind: 'boolean' }],
  ['meta.created', { column: 'created_at', kind: 'time' }],
  ['meta.lastmodified', { column: 'updated_at', kind: 'time' }],
]);

export const GROUP_FILTER_ATTRIBUTES: ReadonlyMap<string, Column> = new Map([
  ['id', { column: 'id', kind: 'exact' }],
  ['displayname', { column: 'display_name_key', kind: 'ci' }],
  ['externalid', { column: 'external_id', kind: 'exact' }],
  ['meta.created', { column: 'created_at', kind: 'time' }],
  ['meta.lastmodified', { column: 'updated_at', kind: 'time' }],
]);

const MAX_FILTER_LENGTH = 2000;
const MAX_DEPTH = 20;

export class FilterError extends Error {}

/** The filter as a WHERE condition over the table of `attributes`; throws a FilterError when refused. */
export function filterToWhere(text: string, resource: 'User' | 'Group'): Where {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterError(`a filter is at most ${MAX_FILTER_LENGTH} characters`);
  let ast: Filter;
  try {
    ast = filterLibrary().parse(text);
  } catch {
    throw new FilterError('the filter is not valid SCIM filter syntax');
  }
  const attributes = resource === 'User' ? USER_FILTER_ATTRIBUTES : GROUP_FILTER_ATTRIBUTES;
  return build(ast, resource, attributes, 0);
}

function build(node: Filter, resource: 'User' | 'Group', attributes: ReadonlyMap<string, Column>, depth: number): RawBuilder<SqlBool> {
  if (depth > MAX_DEPTH) throw new FilterError('the filter is nested too deeply');
  switch (node.op) {
    case 'and':
    case 'or': {
      const parts = node.filters.map((part) => build(part, resource, attributes, depth + 1));
      return sql<SqlBool>`(${sql.join(parts, sql.raw(node.op === 'and' ? ' and ' : ' or '))})`;
    }
    case 'not':
      return sql<SqlBool>`(not ${build(node.filter, resource, attributes, depth + 1)})`;
    case '[]': {
      // Only `emails[value op "x"]` and `emails[type eq "work"]` (one address is kept, a work one).
      const path = attributePath(node.attrPath, resource);
      if (path !== 'emails' || resource !== 'User') throw new FilterError(`cannot filter on ${node.attrPath}[…]`);
      return build(prefixed(node.valFilter, 'emails'), resource, attributes, depth + 1);
    }
    default:
      return compare(node, resource, attributes);
  }
}

/** Sub-attribute filters of `emails[…]` read as `emails.value`, `emails.type`… */
function prefixed(node: Filter, parent: string): Filter {
  switch (node.op) {
    case 'and':
    case 'or':
      return { op: node.op, filters: node.filters.map((part) => prefixed(part, parent)) };
    case 'not':
      return { op: 'not', filter: prefixed(node.filter, parent) };
    case '[]':
      throw new FilterError('nested value filters are not supported');
    default:
      return { ...node, attrPath: `${parent}.${node.attrPath}` };
  }
}

/** The attribute path without its schema URN, lower-cased. */
function attributePath(path: string, resource: 'User' | 'Group'): string {
  const urn = `${resource === 'User' ? CORE_USER_SCHEMA : GROUP_SCHEMA}:`.toLowerCase();
  const lower = path.toLowerCase();
  return lower.startsWith(urn) ? lower.slice(urn.length) : lower;
}

function compare(node: Exclude<Filter, { op: 'and' | 'or' | 'not' | '[]' }>, resource: 'User' | 'Group', attributes: ReadonlyMap<string, Column>): RawBuilder<SqlBool> {
  const path = attributePath(node.attrPath, resource);
  // The one address kept is a work address and the primary one.
  if (path === 'emails.type' && node.op === 'eq') return node.compValue === 'work' ? sql<SqlBool>`1 = 1` : sql<SqlBool>`1 = 0`;
  if (path === 'emails.primary' && node.op === 'eq') return node.compValue === true ? sql<SqlBool>`1 = 1` : sql<SqlBool>`1 = 0`;
  if (path === 'members' || path === 'members.value') {
    if (resource !== 'Group' || node.op !== 'eq' || typeof node.compValue !== 'string') throw new FilterError('members can only be filtered with eq and a user id');
    return sql<SqlBool>`exists (select 1 from scim_group_members m where m.group_id = ${sql.ref('scim_groups.id')} and m.scim_user_id = ${node.compValue})`;
  }
  const attribute = attributes.get(path);
  if (attribute === undefined) throw new FilterError(`cannot filter on ${node.attrPath}`);
  const column = sql.ref(attribute.column);
  if (node.op === 'pr') return attribute.kind === 'ci' || attribute.kind === 'exact' ? sql<SqlBool>`(${column} is not null and ${column} <> '')` : sql<SqlBool>`${column} is not null`;
  const value = operand(node.compValue, attribute.kind, node.attrPath);
  const subject = attribute.kind === 'ci' && attribute.column !== 'user_name_key' && attribute.column !== 'display_name_key' ? sql`lower(${column})` : column;
  switch (node.op) {
    case 'eq':
      return value === null ? sql<SqlBool>`${column} is null` : sql<SqlBool>`${subject} = ${value}`;
    case 'ne':
      return value === null ? sql<SqlBool>`${column} is not null` : sql<SqlBool>`(${column} is null or ${subject} <> ${value})`;
    case 'co':
    case 'sw':
    case 'ew': {
      if (typeof value !== 'string') throw new FilterError(`${node.op} compares strings only`);
      const escaped = value.replace(/[\\%_]/g, (character) => `\\${character}`);
      const pattern = node.op === 'co' ? `%${escaped}%` : node.op === 'sw' ? `${escaped}%` : `%${escaped}`;
      return sql<SqlBool>`${subject} like ${pattern} escape '\\'`;
    }
    case 'gt':
    case 'ge':
    case 'lt':
    case 'le': {
      if (value === null || attribute.kind === 'boolean') throw new FilterError(`${node.op} does not compare ${attribute.kind === 'boolean' ? 'booleans' : 'null'}`);
      const operator = { gt: '>', ge: '>=', lt: '<', le: '<=' }[node.op];
      return sql<SqlBool>`${subject} ${sql.raw(operator)} ${value}`;
    }
  }
}

function operand(value: boolean | null | number | string, kind: Kind, path: string): string | number | null {
  if (value === null) return null;
  switch (kind) {
    case 'boolean':
      if (typeof value === 'boolean') return value ? 1 : 0;
      if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true' ? 1 : 0;
      throw new FilterError(`${path} is compared with true or false`);
    case 'time': {
      const time = typeof value === 'string' ? Date.parse(value) : Number.NaN;
      if (!Number.isFinite(time)) throw new FilterError(`${path} is compared with a date-time (RFC 3339)`);
      return time;
    }
    case 'ci':
      if (typeof value !== 'string') throw new FilterError(`${path} is compared with a string`);
      return value.toLowerCase();
    case 'exact':
      if (typeof value !== 'string') throw new FilterError(`${path} is compared with a string`);
      return value;
  }
}
