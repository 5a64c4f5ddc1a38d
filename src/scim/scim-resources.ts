/**
 * SCIM resources and our rows: what a User or Group document must hold to be stored (checked,
 * with the SCIM error it earns otherwise), and the JSON each row is answered with. No I/O.
 */
import { z } from 'zod';
import { isoTime } from '../lib/clock.ts';
import { normaliseEmail } from '../users/email.ts';
import { toValidName } from '../users/name.ts';
import type { GroupRow, ScimUserRow } from './scim.store.ts';
import { CORE_USER_SCHEMA, ENTERPRISE_ATTRIBUTES, ENTERPRISE_USER_SCHEMA, EXTRA_USER_ATTRIBUTES, GROUP_SCHEMA } from './scim-schemas.ts';
import type { Doc } from './scim-patch.ts';

export type Invalid = { ok: false; scimType: 'invalidValue' | 'invalidSyntax'; detail: string };

/** A User document, checked: the columns and the other attributes kept. */
export interface UserInput {
  userName: string;
  userNameKey: string;
  externalId: string | null;
  displayName: string | null;
  givenName: string | null;
  familyName: string | null;
  /** The normal form of the work (or primary, or only) address, else of userName. */
  email: string;
  active: boolean;
  attributes: Doc;
  /** The name the Gatehouse account is given. */
  accountName: string;
}

export interface GroupInput {
  displayName: string;
  displayNameKey: string;
  externalId: string | null;
  /** The SCIM User ids listed in `members`, or null when the document does not list members. */
  memberIds: string[] | null;
}

const MAX_ATTRIBUTES_JSON = 16_384;
const text = (max: number) => z.string().max(max).refine((value) => !/[\u0000-\u001f\u007f]/.test(value), 'must not contain control characters');
const optionalText = (max: number) => text(max).nullish();
const isEmail = (value: string) => value.length <= 254 && z.regexes.html5Email.test(value);
const isObject = (value: unknown): value is Doc => typeof value === 'object' && value !== null && !Array.isArray(value);

const userDoc = z.looseObject({
  userName: text(320).min(1),
  externalId: optionalText(256),
  displayName: optionalText(200),
  name: z.looseObject({ givenName: optionalText(200), familyName: optionalText(200), formatted: optionalText(400) }).nullish(),
  emails: z.array(z.looseObject({ value: z.string().max(1000).nullish(), type: z.string().max(64).nullish(), primary: z.union([z.boolean(), z.string()]).nullish() })).max(20).nullish(),
  active: z.union([z.boolean(), z.enum(['true', 'false', 'True', 'False', 'TRUE', 'FALSE'])]).nullish(),
});

const groupDoc = z.looseObject({
  displayName: text(256).min(1),
  externalId: optionalText(256),
  members: z.array(z.looseObject({ value: z.string().max(64) })).max(10_000).nullish(),
});

function problem(error: z.ZodError): Invalid {
  const issue = error.issues[0];
  const where = issue?.path.join('.') || 'the resource';
  const scimType = issue?.code === 'invalid_type' && issue.path.length === 0 ? 'invalidSyntax' : 'invalidValue';
  return { ok: false, scimType, detail: `${where}: ${issue?.message ?? 'is invalid'}` };
}

/** Checks a User document (a POST or PUT body, or a patched resource). */
export function readUser(doc: unknown): { ok: true; user: UserInput } | Invalid {
  const parsed = userDoc.safeParse(doc);
  if (!parsed.success) return problem(parsed.error);
  const body = parsed.data;
  const emails = (body.emails ?? []).filter((item) => typeof item.value === 'string' && item.value.trim() !== '');
  const chosen = emails.find((item) => item.primary === true || item.primary === 'true' || item.primary === 'True') ?? emails.find((item) => item.type === 'work') ?? emails[0];
  const email = normaliseEmail(chosen?.value ?? body.userName);
  if (!isEmail(email)) return { ok: false, scimType: 'invalidValue', detail: chosen === undefined ? 'userName must be an e-mail address when no emails are given' : 'emails: the address is not an e-mail address' };
  const attributes: Doc = {};
  for (const name of EXTRA_USER_ATTRIBUTES) if (body[name] !== undefined && body[name] !== null) attributes[name] = body[name];
  const enterprise = Object.entries(body).find(([key]) => key.toLowerCase() === ENTERPRISE_USER_SCHEMA.toLowerCase())?.[1];
  if (isObject(enterprise)) {
    const kept: Doc = {};
    for (const name of ENTERPRISE_ATTRIBUTES) {
      const value = Object.entries(enterprise).find(([key]) => key.toLowerCase() === name.toLowerCase())?.[1];
      // Entra sends the manager as its id alone; the schema's shape is `{value}`.
      if (value !== undefined && value !== null && value !== '') kept[name] = name === 'manager' && typeof value === 'string' ? { value } : value;
    }
    if (Object.keys(kept).length > 0) attributes[ENTERPRISE_USER_SCHEMA] = kept;
  }
  if (emails.length > 0) attributes.emails = emails.map((item) => ({ value: item.value, ...(item.type && { type: item.type }), ...(item === chosen && { primary: true }) }));
  if (JSON.stringify(attributes).length > MAX_ATTRIBUTES_JSON) return { ok: false, scimType: 'invalidValue', detail: `the attributes kept are at most ${MAX_ATTRIBUTES_JSON} characters of JSON` };
  const givenName = body.name?.givenName?.trim() || null;
  const familyName = body.name?.familyName?.trim() || null;
  const displayName = body.displayName?.trim() || null;
  if (body.name?.formatted) attributes.nameFormatted = body.name.formatted;
  const accountName =
    toValidName(displayName ?? body.name?.formatted ?? [givenName, familyName].filter(Boolean).join(' ')) ?? toValidName(email.split('@')[0] ?? '') ?? 'Member';
  const active = body.active === undefined || body.active === null ? true : typeof body.active === 'boolean' ? body.active : body.active.toLowerCase() === 'true';
  return {
    ok: true,
    user: { userName: body.userName, userNameKey: body.userName.toLowerCase(), externalId: body.externalId ?? null, displayName, givenName, familyName, email, active, attributes, accountName },
  };
}

export function readGroup(doc: unknown): { ok: true; group: GroupInput } | Invalid {
  const parsed = groupDoc.safeParse(doc);
  if (!parsed.success) return problem(parsed.error);
  const { displayName, externalId, members } = parsed.data;
  return { ok: true, group: { displayName, displayNameKey: displayName.trim().toLowerCase(), externalId: externalId ?? null, memberIds: members === undefined || members === null ? null : [...new Set(members.map((member) => member.value))] } };
}

const parseAttributes = (row: ScimUserRow): Doc => {
  try {
    const value: unknown = JSON.parse(row.attributes);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
};

/** The User as SCIM answers it (`groups`: the groups it is in). */
export function userJson(row: ScimUserRow, base: string, groups: ReadonlyArray<{ group_id: string; display_name: string }> = []): Doc {
  const { nameFormatted, emails, ...attributes } = parseAttributes(row);
  const enterprise = attributes[ENTERPRISE_USER_SCHEMA];
  const name = { ...(row.given_name !== null && { givenName: row.given_name }), ...(row.family_name !== null && { familyName: row.family_name }), ...(typeof nameFormatted === 'string' && { formatted: nameFormatted }) };
  return {
    schemas: enterprise === undefined ? [CORE_USER_SCHEMA] : [CORE_USER_SCHEMA, ENTERPRISE_USER_SCHEMA],
    id: row.id,
    ...(row.external_id !== null && { externalId: row.external_id }),
    userName: row.user_name,
    ...(Object.keys(name).length > 0 && { name }),
    ...(row.display_name !== null && { displayName: row.display_name }),
    emails: Array.isArray(emails) && emails.length > 0 ? emails : [{ value: row.email, type: 'work', primary: true }],
    active: row.active === 1,
    ...attributes,
    groups: groups.map((group) => ({ value: group.group_id, display: group.display_name, $ref: `${base}/Groups/${group.group_id}` })),
    meta: { resourceType: 'User', created: isoTime(row.created_at), lastModified: isoTime(row.updated_at), location: `${base}/Users/${row.id}` },
  };
}

/** The document a User PATCH applies to: its JSON without what the server owns. */
export function patchableUser(row: ScimUserRow): Doc {
  const { schemas: _schemas, id: _id, meta: _meta, groups: _groups, ...doc } = userJson(row, '');
  return doc;
}

export function groupJson(row: GroupRow, base: string, members: ReadonlyArray<{ scim_user_id: string; user_name: string; display_name: string | null }>): Doc {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...(row.external_id !== null && { externalId: row.external_id }),
    displayName: row.display_name,
    members: members.map((member) => ({ value: member.scim_user_id, display: member.display_name ?? member.user_name, $ref: `${base}/Users/${member.scim_user_id}` })),
    meta: { resourceType: 'Group', created: isoTime(row.created_at), lastModified: isoTime(row.updated_at), location: `${base}/Groups/${row.id}` },
  };
}
