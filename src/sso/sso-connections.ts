/**
 * Managing an organization's SSO connections: create (a SAML connection gets its own SP keys and
 * reads the IdP's metadata, from XML or from a URL fetched under the outbound rules; an OIDC one
 * stores its client secret sealed), change, delete, list. Every change is audited
 * (`sso.connection_created|updated|deleted`), with ids and names only, never a key or a secret.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import { randomId } from '../lib/random.ts';
import { checkWebhookUrl, type TargetPolicy } from '../http/outbound/target-rules.ts';
import * as store from './sso.store.ts';
import { fetchIdpMetadata, parseIdpMetadata, type MetadataResult } from './idp-metadata.ts';
import { newSpKeys } from './sp-keys.ts';
import { samlEndpoints, type SamlConnection } from './saml-sp.ts';
import type { SecretSeal } from './sso-secrets.ts';
import type { OidcRpConnection } from './oidc-rp.ts';
import type { DocumentFetch } from '../http/outbound/fetcher.ts';
import { OIDC_DEFAULT_MAPPING, SAML_DEFAULT_MAPPING, toConnection, type Connection, type ConnectionChanges, type ConnectionInput, type ConnectionSettings } from './sso.model.ts';

export type ConnectionResult =
  | { ok: true; connection: Connection }
  | { ok: false; reason: 'ORGANIZATION_NOT_FOUND' | 'SSO_CONNECTION_NOT_FOUND' }
  | { ok: false; reason: 'SSO_INVALID_CONNECTION'; message: string };

export function createSsoConnections(deps: {
  db: Db;
  clock: Clock;
  authUrl: string;
  audit: AuditService;
  seal: SecretSeal;
  /** The outbound rules for IdP metadata and OIDC issuers. */
  policy: TargetPolicy;
  fetch: DocumentFetch;
  organizationExists: (organizationId: string) => Promise<boolean>;
}) {
  const { db, clock, authUrl, audit, seal, policy } = deps;

  async function readMetadata(input: { idpMetadataXml?: string | undefined; idpMetadataUrl?: string | undefined }): Promise<MetadataResult | null> {
    if (input.idpMetadataXml !== undefined) return parseIdpMetadata(input.idpMetadataXml);
    if (input.idpMetadataUrl === undefined) return null;
    const checked = checkWebhookUrl(input.idpMetadataUrl, policy);
    if (!checked.ok) return { ok: false, message: `idpMetadataUrl: ${checked.message}` };
    return fetchIdpMetadata(deps.fetch, input.idpMetadataUrl);
  }

  const invalid = (message: string): ConnectionResult => ({ ok: false, reason: 'SSO_INVALID_CONNECTION', message });

  async function record(type: 'sso.connection_created' | 'sso.connection_updated' | 'sso.connection_deleted', connection: Connection, source: AuditSource, more: Record<string, unknown> = {}, on: Db = db) {
    const details = { connectionId: connection.id, organizationId: connection.organizationId, protocol: connection.protocol, name: connection.name, ...more };
    await audit.record({ type, userId: null, source, details }, { db: on });
  }

  return {
    /** `options.id`: the id a setup link reserved (its SP values were shown before the connection existed). */
    async create(organizationId: string, input: ConnectionInput, source: AuditSource, options: { id?: string } = {}): Promise<ConnectionResult> {
      if (!(await deps.organizationExists(organizationId))) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
      const id = options.id ?? randomId();
      const now = clock();
      const common = { mapping: { ...(input.protocol === 'saml' ? SAML_DEFAULT_MAPPING : OIDC_DEFAULT_MAPPING), ...input.mapping }, groupRoles: input.groupRoles ?? [] };
      let settings: ConnectionSettings;
      let box: string;
      if (input.protocol === 'saml') {
        const metadata = await readMetadata(input);
        if (metadata === null) return invalid('A SAML connection needs the IdP’s metadata: idpMetadataXml or idpMetadataUrl.');
        if (!metadata.ok) return invalid(metadata.message);
        const keys = await newSpKeys(samlEndpoints(authUrl, id).entityId, now);
        settings = {
          ...common,
          saml: {
            idpEntityId: metadata.idp.entityId,
            idpSsoUrl: metadata.idp.ssoUrl,
            idpCertificates: metadata.idp.certificates,
            metadataUrl: input.idpMetadataXml === undefined ? (input.idpMetadataUrl ?? null) : null,
            spSigningCert: keys.signing.certificate,
            spEncryptionCert: keys.encryption.certificate,
          },
        };
        box = seal.seal({ spSigningKey: keys.signing.privateKey, spEncryptionKey: keys.encryption.privateKey }, id);
      } else {
        const checked = checkWebhookUrl(input.issuer, policy);
        if (!checked.ok) return invalid(`issuer: ${checked.message}`);
        settings = { ...common, oidc: { issuer: input.issuer.replace(/\/$/, ''), clientId: input.clientId } };
        box = seal.seal({ clientSecret: input.clientSecret }, id);
      }
      const row: store.ConnectionRow = {
        id,
        organization_id: organizationId,
        name: input.name,
        protocol: input.protocol,
        enforce: input.enforce === true ? 1 : 0,
        idp_initiated: input.protocol === 'saml' && input.idpInitiated === true ? 1 : 0,
        default_role: input.defaultRole ?? 'MEMBER',
        settings: JSON.stringify(settings),
        secret_box: box,
        created_at: now,
        updated_at: now,
      };
      const connection = toConnection(row);
      await db.transaction().execute(async (trx) => {
        await store.insertConnection(trx, row);
        await record('sso.connection_created', connection, source, { enforce: connection.enforce, idpInitiated: connection.idpInitiated }, trx);
      });
      return { ok: true, connection };
    },

    async update(id: string, changes: ConnectionChanges, source: AuditSource): Promise<ConnectionResult> {
      const row = await store.findConnection(db, id);
      if (row === undefined) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
      const current = toConnection(row);
      const settings: ConnectionSettings = { ...current.settings, mapping: { ...current.settings.mapping, ...changes.mapping }, groupRoles: changes.groupRoles ?? current.settings.groupRoles };
      let box = row.secret_box;
      if (changes.idpMetadataXml !== undefined || changes.idpMetadataUrl !== undefined) {
        if (settings.saml === undefined) return invalid('Only a SAML connection has IdP metadata.');
        const metadata = await readMetadata(changes);
        if (metadata === null || !metadata.ok) return invalid(metadata?.message ?? 'No metadata.');
        settings.saml = { ...settings.saml, idpEntityId: metadata.idp.entityId, idpSsoUrl: metadata.idp.ssoUrl, idpCertificates: metadata.idp.certificates, metadataUrl: changes.idpMetadataUrl ?? null };
      }
      if (changes.clientSecret !== undefined) {
        if (settings.oidc === undefined) return invalid('Only an OpenID Connect connection has a client secret.');
        box = seal.seal({ ...seal.open(row.secret_box, id), clientSecret: changes.clientSecret }, id);
      }
      if (changes.idpInitiated === true && current.protocol !== 'saml') return invalid('Only a SAML connection takes IdP-initiated sign-ins.');
      const updated: store.ConnectionRow = {
        ...row,
        name: changes.name ?? row.name,
        enforce: changes.enforce === undefined ? row.enforce : changes.enforce ? 1 : 0,
        idp_initiated: changes.idpInitiated === undefined ? row.idp_initiated : changes.idpInitiated ? 1 : 0,
        default_role: changes.defaultRole ?? row.default_role,
        settings: JSON.stringify(settings),
        secret_box: box,
        updated_at: Math.max(clock(), Number(row.updated_at) + 1),
      };
      const connection = toConnection(updated);
      const changed = Object.keys(changes).filter((key) => changes[key as keyof ConnectionChanges] !== undefined).map((key) => (key === 'clientSecret' ? 'clientSecret' : key));
      await db.transaction().execute(async (trx) => {
        const { id: _id, organization_id: _org, created_at: _created, ...rest } = updated;
        await store.updateConnection(trx, id, rest);
        await record('sso.connection_updated', connection, source, { changed: changed.join(',') }, trx);
      });
      return { ok: true, connection };
    },

    async delete(id: string, source: AuditSource): Promise<{ ok: true } | { ok: false; reason: 'SSO_CONNECTION_NOT_FOUND' }> {
      const row = await store.findConnection(db, id);
      if (row === undefined) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
      await db.transaction().execute(async (trx) => {
        if (await store.deleteConnection(trx, id)) await record('sso.connection_deleted', toConnection(row), source, {}, trx);
      });
      return { ok: true };
    },

    async get(id: string): Promise<Connection | null> {
      if (id.length === 0 || id.length > 32) return null;
      const row = await store.findConnection(db, id);
      return row === undefined ? null : toConnection(row);
    },

    /** How many connections exist (the sign-in page shows "Continue with SSO" once there is one). */
    count: (): Promise<number> => store.countConnections(db),

    async list(organizationId?: string): Promise<Connection[]> {
      return (await store.listConnections(db, organizationId)).map(toConnection);
    },

    /** The connection with its SP keys, for the SAML service provider; null when it is not SAML. */
    async samlConnection(connection: Connection): Promise<SamlConnection | null> {
      const row = await store.findConnection(db, connection.id);
      if (row === undefined || connection.settings.saml === undefined) return null;
      const secrets = seal.open(row.secret_box, connection.id);
      if (secrets.spSigningKey === undefined || secrets.spEncryptionKey === undefined) return null;
      return { id: connection.id, idpInitiated: connection.idpInitiated, saml: connection.settings.saml, secrets: { spSigningKey: secrets.spSigningKey, spEncryptionKey: secrets.spEncryptionKey } };
    },

    /** The connection with its client secret, for the OIDC relying party; null when it is not OIDC. */
    async oidcConnection(connection: Connection): Promise<OidcRpConnection | null> {
      const row = await store.findConnection(db, connection.id);
      if (row === undefined || connection.settings.oidc === undefined) return null;
      const { clientSecret } = seal.open(row.secret_box, connection.id);
      if (clientSecret === undefined) return null;
      return { id: connection.id, updatedAt: connection.updatedAt, issuer: connection.settings.oidc.issuer, clientId: connection.settings.oidc.clientId, clientSecret };
    },
  };
}

export type SsoConnections = ReturnType<typeof createSsoConnections>;
