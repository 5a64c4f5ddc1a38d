/**
 * Test helpers: a real SAML identity provider built on `samlify` (a devDependency, used only here)
 * with its own keys, and a stand-in for the verified-domains service.
 *
 * samlify asks for an XML schema validator before it parses any SAML message; this test IdP
 * parses none (the AuthnRequest's ID is read by hand below) and only builds and signs responses,
 * so it is given samlify's documented no-op validator (`setSchemaValidator`), in tests only.
 */
import { inflateRawSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import * as samlify from 'samlify';
import { defineModule, type GatehouseModule } from '../module.ts';
import { MODULES } from '../modules.ts';
import { newSpKeys, type SpKeyPair } from './sp-keys.ts';
import type { VerifiedDomainLookup } from './sso-signin.ts';

samlify.setSchemaValidator({ validate: async () => 'skipped in tests: the test IdP parses no SAML message' });

const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

export interface AssertionFields {
  /** Raw XML text of the NameID (a test may put a comment in it). */
  nameIdXml: string;
  attributes?: Record<string, string[]>;
  inResponseTo?: string | null;
  audience?: string;
  recipient?: string;
  destination?: string;
  notBefore?: Date;
  notOnOrAfter?: Date;
  assertionId?: string;
  issuer?: string;
}

export interface TestIdp {
  entityId: string;
  metadata: string;
  keys: SpKeyPair;
  /** The AuthnRequest's ID and RelayState of the IdP URL our SP redirected to. */
  readRequest(location: string): { id: string; relayState: string | null };
  /** A signed (and, with `encrypt`, encrypted) SAMLResponse for the SP of `spMetadata`. */
  respond(spMetadata: string, fields: AssertionFields, options?: { signAssertion?: boolean; encrypt?: boolean }): Promise<string>;
  /** The same response XML, unsigned. */
  unsignedXml(spMetadata: string, fields: AssertionFields): string;
}

const escapeXml = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
export const samlId = () => `_${randomBytes(16).toString('hex')}`;

function spEndpoints(spMetadata: string): { entityId: string; acsUrl: string } {
  const entityId = /entityID="([^"]+)"/.exec(spMetadata)?.[1] ?? '';
  const acsUrl = /AssertionConsumerService[^>]*Location="([^"]+)"/.exec(spMetadata)?.[1] ?? '';
  return { entityId, acsUrl };
}

function responseXml(idpEntityId: string, sp: { entityId: string; acsUrl: string }, fields: AssertionFields, responseId: string): string {
  const now = new Date();
  const notBefore = (fields.notBefore ?? new Date(now.getTime() - 30_000)).toISOString();
  const notOnOrAfter = (fields.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000)).toISOString();
  const inResponseTo = fields.inResponseTo ?? null;
  const irt = inResponseTo === null ? '' : ` InResponseTo="${escapeXml(inResponseTo)}"`;
  const issuer = escapeXml(fields.issuer ?? idpEntityId);
  const attributes = Object.entries(fields.attributes ?? {})
    .map(([name, values]) => `<saml:Attribute Name="${escapeXml(name)}">${values.map((value) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(value)}</saml:AttributeValue>`).join('')}</saml:Attribute>`)
    .join('');
  return (
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${responseId}" Version="2.0" IssueInstant="${now.toISOString()}" Destination="${escapeXml(fields.destination ?? sp.acsUrl)}"${irt}>` +
    `<saml:Issuer>${issuer}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" ID="${fields.assertionId ?? samlId()}" Version="2.0" IssueInstant="${now.toISOString()}">` +
    `<saml:Issuer>${issuer}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${fields.nameIdXml}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${notOnOrAfter}" Recipient="${escapeXml(fields.recipient ?? sp.acsUrl)}"${irt}/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}"><saml:AudienceRestriction><saml:Audience>${escapeXml(fields.audience ?? sp.entityId)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="${samlId()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    (attributes === '' ? '' : `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>`) +
    `</saml:Assertion></samlp:Response>`
  );
}

export async function startTestIdp(entityId = `https://idp-${randomBytes(4).toString('hex')}.test/metadata`): Promise<TestIdp> {
  const { signing: keys } = await newSpKeys(entityId, Date.now());
  const settings = {
    entityID: entityId,
    privateKey: keys.privateKey,
    signingCert: keys.certificate,
    singleSignOnService: [{ Binding: REDIRECT, Location: `${new URL(entityId).origin}/sso` }],
    nameIDFormat: ['urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'],
  };
  const plainIdp = samlify.IdentityProvider(settings);
  const encryptingIdp = samlify.IdentityProvider({ ...settings, isAssertionEncrypted: true, dataEncryptionAlgorithm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm', keyEncryptionAlgorithm: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p' } as Parameters<typeof samlify.IdentityProvider>[0]);
  return {
    entityId,
    metadata: plainIdp.getMetadata(),
    keys,
    readRequest(location) {
      const url = new URL(location);
      const request = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
      return { id: /\sID="([^"]+)"/.exec(request)?.[1] ?? '', relayState: url.searchParams.get('RelayState') };
    },
    async respond(spMetadata, fields, options = {}) {
      // Our metadata leaves WantAssertionsSigned out (either signature will do): a test asking for an assertion signature adds it.
      const metadata = options.signAssertion === true ? spMetadata.replace(/<((?:\w+:)?SPSSODescriptor) /, '<$1 WantAssertionsSigned="true" ') : spMetadata;
      const sp = samlify.ServiceProvider({ metadata });
      const idp = options.encrypt === true ? encryptingIdp : plainIdp;
      const id = samlId();
      const xml = responseXml(entityId, spEndpoints(spMetadata), fields, id);
      const response = await idp.createLoginResponse(sp, { extract: { request: { id: fields.inResponseTo ?? '' } } } as never, 'post', { email: '' }, { customTagReplacement: () => ({ id, context: xml }), encryptThenSign: options.encrypt === true });
      return (response as { context: string }).context;
    },
    unsignedXml(spMetadata, fields) {
      return responseXml(entityId, spEndpoints(spMetadata), fields, samlId());
    },
  };
}

/**
 * A stand-in for the verified-domains module (`orgDomains.findVerifiedForEmail`): the domains a test
 * marks verified, without DNS. It takes the org-domains module's place in the list (`modulesWith`).
 */
export function testDomainsModule(verified: Map<string, string>): GatehouseModule {
  const lookup: VerifiedDomainLookup = {
    async findVerifiedForEmail(email) {
      const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
      const organizationId = verified.get(domain);
      return organizationId === undefined ? null : { organizationId, domain, verifiedAt: 0 };
    },
  };
  return defineModule({ name: 'test-domains', provide: () => ({ orgDomains: lookup }) as never });
}

/** The module list with `stand-in` in place of the org-domains module (else just before the SSO module). */
export function modulesWith(standIn: GatehouseModule): GatehouseModule[] {
  const hasDomains = MODULES.some((module) => module.name === 'org-domains');
  return MODULES.flatMap((module) => {
    if (module.name === 'org-domains') return [standIn];
    return module.name === 'sso' && !hasDomains ? [standIn, module] : [module];
  });
}
