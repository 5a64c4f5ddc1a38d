/**
 * SCIM PATCH (RFC 7644 §3.5.2) applied to a resource as a JSON document: `add`, `remove` and
 * `replace`, with or without `path`, paths with a value filter (`members[value eq "id"]`,
 * `emails[type eq "work"].value`, evaluated with `scim2-parse-filter`) and schema-prefixed ones
 * (`urn:…:enterprise:2.0:User:department`). The shapes the big directories send are accepted too:
 * - Okta: `replace` without a path and a value object (`{"active": false}`, a group's
 *   `{"id", "displayName"}`);
 * - Microsoft Entra ID: capitalised ops (`Replace`, `Add`, `Remove`), booleans as strings
 *   (`"False"`), dotted keys in a value object (`{"name.givenName": "…"}`), `emails[type eq
 *   "work"].value` on a user without one (the element is created), and removing members by a
 *   value array (`{"op": "Remove", "path": "members", "value": [{"value": "id"}]}`).
 * Returns the patched copy or why it is refused (a SCIM `scimType` and a detail).
 */
import type { Filter } from 'scim2-parse-filter';
import { onFirstUse } from '../lib/on-first-use.ts';

/** The filter library, loaded by the first PATCH with a value filter, not at start. */
const filterLibrary = onFirstUse<typeof import('scim2-parse-filter')>(import.meta.url, 'scim2-parse-filter');
import { CORE_USER_SCHEMA, ENTERPRISE_USER_SCHEMA, GROUP_SCHEMA, PATCH_OP_SCHEMA } from './scim-schemas.ts';

export type Doc = Record<string, unknown>;
export type PatchResult = { ok: true; doc: Doc } | { ok: false; scimType: 'invalidPath' | 'invalidValue' | 'noTarget' | 'invalidSyntax' | 'mutability' | 'invalidFilter'; detail: string };

class PatchError extends Error {
  readonly scimType: Extract<PatchResult, { ok: false }>['scimType'];
  constructor(scimType: PatchError['scimType'], detail: string) {
    super(detail);
    this.scimType = scimType;
  }
}

const MAX_OPERATIONS = 1000;
const READ_ONLY = new Set(['id', 'meta', 'schemas', 'groups']);
const isObject = (value: unknown): value is Doc => typeof value === 'object' && value !== null && !Array.isArray(value);

interface Path {
  /** The extension the attribute belongs to (its URN), or null for the core schema. */
  readonly extension: string | null;
  readonly attribute: string;
  readonly valueFilter: Filter | null;
  readonly subAttribute: string | null;
}

/** Applies a PatchOp request body to a copy of `doc`. */
export function applyPatch(doc: Doc, body: unknown): PatchResult {
  try {
    if (!isObject(body)) throw new PatchError('invalidSyntax', 'the body is not a PatchOp message');
    const schemas = body.schemas;
    if (Array.isArray(schemas) && !schemas.includes(PATCH_OP_SCHEMA)) throw new PatchError('invalidSyntax', `schemas must name ${PATCH_OP_SCHEMA}`);
    const operations = body.Operations ?? body.operations;
    if (!Array.isArray(operations) || operations.length === 0) throw new PatchError('invalidSyntax', 'Operations must be a non-empty array');
    if (operations.length > MAX_OPERATIONS) throw new PatchError('invalidSyntax', `at most ${MAX_OPERATIONS} operations`);
    const result = structuredClone(doc);
    for (const operation of operations) applyOperation(result, operation);
    return { ok: true, doc: result };
  } catch (error) {
    if (error instanceof PatchError) return { ok: false, scimType: error.scimType, detail: error.message };
    throw error;
  }
}

function applyOperation(doc: Doc, operation: unknown): void {
  if (!isObject(operation)) throw new PatchError('invalidSyntax', 'an operation is not an object');
  const op = typeof operation.op === 'string' ? operation.op.toLowerCase() : '';
  if (op !== 'add' && op !== 'remove' && op !== 'replace') throw new PatchError('invalidSyntax', 'op must be add, remove or replace');
  const { value } = operation;
  if (operation.path === undefined || operation.path === null || operation.path === '') {
    if (op === 'remove') throw new PatchError('noTarget', 'remove needs a path');
    if (!isObject(value)) throw new PatchError('invalidValue', `${op} without a path needs an object value`);
    for (const [key, item] of Object.entries(value)) {
      if (READ_ONLY.has(key)) continue; // Okta repeats the group's id; it cannot change anyway.
      if ((key === ENTERPRISE_USER_SCHEMA || key === CORE_USER_SCHEMA) && isObject(item)) {
        for (const [sub, subValue] of Object.entries(item)) apply(doc, op, parsePath(key === CORE_USER_SCHEMA ? sub : `${key}:${sub}`), subValue);
      } else {
        apply(doc, op, parsePath(key), item);
      }
    }
    return;
  }
  if (typeof operation.path !== 'string') throw new PatchError('invalidPath', 'path must be a string');
  if (op !== 'remove' && value === undefined) throw new PatchError('invalidValue', `${op} needs a value`);
  apply(doc, op, parsePath(operation.path), value);
}

/** `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, each optionally after a schema URN and a colon. */
export function parsePath(path: string): Path {
  if (path.length > 1000) throw new PatchError('invalidPath', 'the path is too long');
  let rest = path;
  let extension: string | null = null;
  for (const urn of [ENTERPRISE_USER_SCHEMA, CORE_USER_SCHEMA, GROUP_SCHEMA]) {
    if (rest.toLowerCase().startsWith(`${urn.toLowerCase()}:`)) {
      rest = rest.slice(urn.length + 1);
      extension = urn === ENTERPRISE_USER_SCHEMA ? ENTERPRISE_USER_SCHEMA : null;
      break;
    }
  }
  const match = /^([A-Za-z][\w$-]*)(?:\[(.*)\])?(?:\.([A-Za-z][\w$-]*))?$/s.exec(rest);
  if (match === null) throw new PatchError('invalidPath', `cannot read the path ${JSON.stringify(path)}`);
  const [, attribute = '', filterText, subAttribute] = match;
  if (READ_ONLY.has(attribute)) throw new PatchError('mutability', `${attribute} cannot be changed`);
  let valueFilter: Filter | null = null;
  if (filterText !== undefined) {
    try {
      valueFilter = filterLibrary().parse(filterText);
    } catch {
      throw new PatchError('invalidFilter', `cannot read the value filter of ${JSON.stringify(path)}`);
    }
  }
  return { extension, attribute, valueFilter, subAttribute: subAttribute ?? null };
}

/** Entra writes booleans as "True" / "False". */
function coerce(value: unknown): unknown {
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  return value;
}

/** The key `doc` holds `name` under, whatever its case (attribute names are case-insensitive). */
function keyOf(container: Doc, name: string): string {
  return Object.keys(container).find((key) => key.toLowerCase() === name.toLowerCase()) ?? name;
}

function apply(doc: Doc, op: 'add' | 'remove' | 'replace', path: Path, rawValue: unknown): void {
  let container = doc;
  if (path.extension !== null) {
    const extensionKey = keyOf(doc, path.extension);
    if (!isObject(doc[extensionKey])) doc[extensionKey] = {};
    container = doc[extensionKey] as Doc;
  }
  const key = keyOf(container, path.attribute);
  const value = key.toLowerCase() === 'active' ? coerce(rawValue) : rawValue;

  if (path.valueFilter !== null) {
    applyFiltered(container, key, op, path.valueFilter, path.subAttribute, value);
    return;
  }
  if (path.subAttribute !== null) {
    const current = container[key];
    const targets = Array.isArray(current) ? current.filter(isObject) : [isObject(current) ? current : (container[key] = {}) as Doc];
    for (const target of targets) {
      const subKey = keyOf(target, path.subAttribute);
      if (op === 'remove') delete target[subKey];
      else target[subKey] = value;
    }
    return;
  }
  const current = container[key];
  if (op === 'remove') {
    if (Array.isArray(current) && Array.isArray(value)) {
      // Entra removes members by listing them: the elements whose value is listed go.
      const gone = new Set(value.map((item) => (isObject(item) ? String(item.value) : String(item))));
      container[key] = current.filter((item) => !(isObject(item) && gone.has(String(item.value))));
    } else {
      delete container[key];
    }
    return;
  }
  if (op === 'add' && Array.isArray(current)) {
    const additions = Array.isArray(value) ? value : [value];
    const known = new Set(current.map((item) => (isObject(item) ? JSON.stringify(item.value) : JSON.stringify(item))));
    for (const item of additions) {
      const id = isObject(item) ? JSON.stringify(item.value) : JSON.stringify(item);
      if (!known.has(id)) current.push(item);
      known.add(id);
    }
    return;
  }
  if (isObject(current) && isObject(value)) {
    // A complex attribute: the sub-attributes given are set, the others kept (RFC 7644 §3.5.2.1, .3).
    for (const [sub, subValue] of Object.entries(value)) current[keyOf(current, sub)] = subValue;
    return;
  }
  container[key] = value;
}

function applyFiltered(container: Doc, key: string, op: 'add' | 'remove' | 'replace', valueFilter: Filter, subAttribute: string | null, value: unknown): void {
  const current = container[key];
  const list: unknown[] = Array.isArray(current) ? current : [];
  let matches: (item: unknown) => boolean;
  try {
    const test = filterLibrary().filter(valueFilter);
    matches = (item) => isObject(item) && test(item);
  } catch {
    throw new PatchError('invalidFilter', 'cannot evaluate the value filter');
  }
  if (op === 'remove') {
    if (subAttribute === null) container[key] = list.filter((item) => !matches(item));
    else for (const item of list.filter(matches) as Doc[]) delete item[keyOf(item, subAttribute)];
    return;
  }
  const targets = list.filter(matches) as Doc[];
  if (targets.length === 0) {
    // `emails[type eq "work"].value` on a user without a work address: Entra expects it made.
    const seed = valueFilter.op === 'eq' && typeof valueFilter.compValue === 'string' ? { [valueFilter.attrPath]: valueFilter.compValue } : null;
    if (seed === null) throw new PatchError('noTarget', `no element of ${key} matches the filter`);
    const element: Doc = subAttribute === null ? { ...seed, ...(isObject(value) ? value : {}) } : { ...seed, [subAttribute]: value };
    container[key] = [...list, element];
    return;
  }
  for (const target of targets) {
    if (subAttribute !== null) target[keyOf(target, subAttribute)] = value;
    else if (isObject(value)) for (const [sub, subValue] of Object.entries(value)) target[keyOf(target, sub)] = subValue;
    else throw new PatchError('invalidValue', `${key}[…] needs an object value`);
  }
}
