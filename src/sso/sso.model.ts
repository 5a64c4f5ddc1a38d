/**
 * What the SSO module deals in: connections (SAML or OpenID Connect), their attribute mapping and
 * group → organization role rules, and the identity an IdP asserts. No I/O.
 */
import { z } from 'zod';
import { isValidRole } from '../users/user.service.ts';
import type { ConnectionRow } from './sso.store.ts';

export type Protocol = 'saml' | 'oidc';

/** Which attributes (SAML attribute names, OIDC claims) carry the address, the name and the groups. */
export interface AttributeMapping {
  email: string;
  name: string;
  groups: string;
}

/** A member of `group` (at the IdP) gets `role` in the organization; the first rule that matches wins. */
export interface GroupRoleRule {
  group: string;
  role: string;
}

export interface SamlSettings {
  idpEntityId: string;
  idpSsoUrl: string;
  /** base64 DER bodies. */
  idpCertificates: string[];
  /** Where the IdP's metadata was read from, if from a URL. */
  metadataUrl: string | null;
  /** Our certificates (PEM): public, shown in our metadata. */
  spSigningCert: string;
  spEncryptionCert: string;
}

export interface OidcSettings {
  issuer: string;
  clientId: string;
}

export interface ConnectionSettings {
  saml?: SamlSettings;
  oidc?: OidcSettings;
  mapping: AttributeMapping;
  groupRoles: GroupRoleRule[];
}

/** What is sealed at rest (sso-secrets.ts). */
export interface SpSecrets {
  spSigningKey: string;
  spEncryptionKey: string;
}

export interface Connection {
  id: string;
  organizationId: string;
  name: string;
  protocol: Protocol;
  /** Passwords, mail links and other providers are refused for the addresses of the organization's verified domains. */
  enforce: boolean;
  /** SAML: responses that answer no request of ours are accepted. Off by default. */
  idpInitiated: boolean;
  defaultRole: string;
  settings: ConnectionSettings;
  createdAt: number;
  updatedAt: number;
}

export const SAML_DEFAULT_MAPPING: AttributeMapping = { email: 'email', name: 'name', groups: 'groups' };
export const OIDC_DEFAULT_MAPPING: AttributeMapping = { email: 'email', name: 'name', groups: 'groups' };

export function toConnection(row: ConnectionRow): Connection {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    protocol: row.protocol === 'oidc' ? 'oidc' : 'saml',
    enforce: Number(row.enforce) === 1,
    idpInitiated: Number(row.idp_initiated) === 1,
    defaultRole: row.default_role,
    settings: JSON.parse(row.settings) as ConnectionSettings,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** Who the IdP says the person is, already mapped. */
export interface AssertedIdentity {
  /** The IdP's stable id for them (NameID, `sub`). */
  subject: string;
  /** Normalised; null when none was given. */
  email: string | null;
  /** The IdP vouches for the address (SAML: always asserted; OIDC: `email_verified`). */
  emailAsserted: boolean;
  name: string | null;
  groups: string[];
}

/** The organization role for someone in `groups`: the first matching rule's, else the connection's default. */
export function roleFor(connection: Pick<Connection, 'defaultRole' | 'settings'>, groups: readonly string[]): string {
  return connection.settings.groupRoles.find((rule) => groups.includes(rule.group))?.role ?? connection.defaultRole;
}

const attributeName = z.string().trim().min(1).max(256);
/** OWNER is never granted by an IdP: ownership moves only by a person's hand. */
const mappedRole = z
  .string()
  .trim()
  .max(32)
  .refine((role) => isValidRole(role) && role !== 'OWNER', 'must be an organization role other than OWNER');

export const mappingInput = z
  .object({ email: attributeName.optional(), name: attributeName.optional(), groups: attributeName.optional() })
  .describe('Which SAML attributes or OIDC claims carry the address, the name and the groups');

export const groupRolesInput = z.array(z.object({ group: z.string().trim().min(1).max(256), role: mappedRole })).max(50).describe('Group → organization role rules, first match wins');

const common = {
  name: z.string().trim().min(1).max(200),
  enforce: z.boolean().optional().describe('Refuse passwords, mail links and other providers for the addresses of the organization’s verified domains'),
  defaultRole: mappedRole.optional().describe('The role of a member no group rule matches (default MEMBER)'),
  mapping: mappingInput.optional(),
  groupRoles: groupRolesInput.optional(),
};

export const samlInput = z.object({
  protocol: z.literal('saml'),
  ...common,
  idpInitiated: z.boolean().optional().describe('Accept responses that answer no request of ours (default false)'),
  idpMetadataXml: z.string().max(256 * 1024).optional().describe('The IdP’s metadata document'),
  idpMetadataUrl: z.url().max(2048).optional().describe('Where to fetch the IdP’s metadata (under the outbound rules)'),
});

export const oidcInput = z.object({
  protocol: z.literal('oidc'),
  ...common,
  issuer: z.url().max(2048),
  clientId: z.string().trim().min(1).max(512),
  clientSecret: z.string().min(1).max(2048),
});

export const connectionInput = z.discriminatedUnion('protocol', [samlInput, oidcInput]);
export type ConnectionInput = z.infer<typeof connectionInput>;

export const connectionChanges = z.object({
  name: common.name.optional(),
  enforce: z.boolean().optional(),
  idpInitiated: z.boolean().optional(),
  defaultRole: common.defaultRole,
  mapping: mappingInput.optional(),
  groupRoles: groupRolesInput.optional(),
  idpMetadataXml: samlInput.shape.idpMetadataXml,
  idpMetadataUrl: samlInput.shape.idpMetadataUrl,
  clientSecret: z.string().min(1).max(2048).optional(),
});
export type ConnectionChanges = z.infer<typeof connectionChanges>;
