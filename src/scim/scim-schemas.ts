/**
 * The SCIM schema URNs and the discovery documents (RFC 7643 §5–7, RFC 7644 §4):
 * ServiceProviderConfig, ResourceTypes and Schemas, describing what this server does and the
 * attributes it keeps. Pure data, given the base URL.
 */
export const CORE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const SPC_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** The enterprise extension's attributes kept (RFC 7643 §4.3). */
export const ENTERPRISE_ATTRIBUTES = ['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager'] as const;
/** The core User attributes kept besides those with columns (userName, name, displayName, emails, active, externalId). */
export const EXTRA_USER_ATTRIBUTES = ['nickName', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone', 'profileUrl', 'phoneNumbers', 'addresses'] as const;

type Attribute = Record<string, unknown>;
const attr = (name: string, more: Attribute = {}): Attribute => ({
  name,
  type: 'string',
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...more,
});
const complex = (name: string, subAttributes: Attribute[], more: Attribute = {}) => attr(name, { type: 'complex', subAttributes, ...more });
const multi = (name: string, extra: Attribute[] = []) =>
  complex(name, [attr('value'), attr('display'), attr('type'), attr('primary', { type: 'boolean' }), ...extra], { multiValued: true });

function userSchema(): Attribute {
  return {
    id: CORE_USER_SCHEMA,
    name: 'User',
    description: 'A member of the organization',
    attributes: [
      attr('userName', { required: true, uniqueness: 'server', description: 'Unique per organization, compared case-insensitively; the e-mail address when no work address is given' }),
      complex('name', [attr('formatted'), attr('familyName'), attr('givenName')]),
      attr('displayName'),
      ...EXTRA_USER_ATTRIBUTES.filter((name) => name !== 'phoneNumbers' && name !== 'addresses').map((name) => attr(name)),
      attr('active', { type: 'boolean' }),
      multi('emails'),
      multi('phoneNumbers'),
      complex('addresses', ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((name) => attr(name)).concat(attr('primary', { type: 'boolean' })), { multiValued: true }),
      complex('groups', [attr('value', { mutability: 'readOnly' }), attr('display', { mutability: 'readOnly' })], { multiValued: true, mutability: 'readOnly' }),
    ],
    meta: { resourceType: 'Schema', location: `/Schemas/${CORE_USER_SCHEMA}` },
  };
}

function enterpriseSchema(): Attribute {
  return {
    id: ENTERPRISE_USER_SCHEMA,
    name: 'EnterpriseUser',
    description: 'Enterprise User',
    attributes: [
      ...ENTERPRISE_ATTRIBUTES.filter((name) => name !== 'manager').map((name) => attr(name)),
      complex('manager', [attr('value'), attr('displayName', { mutability: 'readOnly' })]),
    ],
    meta: { resourceType: 'Schema', location: `/Schemas/${ENTERPRISE_USER_SCHEMA}` },
  };
}

function groupSchema(): Attribute {
  return {
    id: GROUP_SCHEMA,
    name: 'Group',
    description: "A group of the organization's members; groups may map to organization roles",
    attributes: [
      attr('displayName', { required: true, uniqueness: 'server' }),
      complex('members', [attr('value', { mutability: 'immutable' }), attr('display', { mutability: 'readOnly' }), attr('type', { mutability: 'immutable' })], { multiValued: true }),
    ],
    meta: { resourceType: 'Schema', location: `/Schemas/${GROUP_SCHEMA}` },
  };
}

/** Every schema, with its absolute location. */
export function schemas(base: string): Attribute[] {
  return [userSchema(), enterpriseSchema(), groupSchema()].map((schema) => ({ ...schema, schemas: [SCHEMA_SCHEMA], meta: { ...(schema.meta as Attribute), location: `${base}${(schema.meta as Attribute).location as string}` } }));
}

export function resourceTypes(base: string): Attribute[] {
  return [
    { schemas: [RESOURCE_TYPE_SCHEMA], id: 'User', name: 'User', endpoint: '/Users', description: 'User Account', schema: CORE_USER_SCHEMA, schemaExtensions: [{ schema: ENTERPRISE_USER_SCHEMA, required: false }], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` } },
    { schemas: [RESOURCE_TYPE_SCHEMA], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'Group', schema: GROUP_SCHEMA, schemaExtensions: [], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` } },
  ];
}

export function serviceProviderConfig(base: string, maxResults: number, documentationUri: string): Attribute {
  return {
    schemas: [SPC_SCHEMA],
    documentationUri,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      { type: 'oauthbearertoken', name: 'Bearer token', description: "The organization's SCIM token, in the Authorization header: Bearer gatehouse_scim_…", primary: true },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}
