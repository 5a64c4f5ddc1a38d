/**
 * The SSO module's browser and identity-provider endpoints are in the OpenAPI document (they were
 * hidden from it): each under the `sso` tag, with its parameters, body, redirect or metadata answer,
 * and the generic answers the document adds (rate limits on the two that store a request). The
 * document as a whole is linted by src/http/openapi.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { OPENAPI_PATH } from '../app.ts';

interface BodySchema {
  properties?: Record<string, unknown>;
  required?: string[];
  /** A body that may be left out: the object, or null. */
  anyOf?: BodySchema[];
}

interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: Record<string, { schema: BodySchema }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
  security?: unknown[];
}

describe('the SSO endpoints in the OpenAPI document', () => {
  let database: TestDatabase;
  let t: TestApp;
  let paths: Record<string, Record<string, Operation>>;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database);
    const answer = await t.app.inject({ method: 'GET', url: OPENAPI_PATH });
    assert.equal(answer.statusCode, 200);
    paths = answer.json().paths;
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  const operation = (path: string, method: string): Operation => {
    const found = paths[path]?.[method];
    assert.ok(found, `${method.toUpperCase()} ${path} is documented`);
    assert.deepEqual(found.tags, ['sso']);
    assert.ok((found.description ?? '').length > 0, `${method.toUpperCase()} ${path} is described`);
    assert.deepEqual(found.security, [], 'anyone may call it: no Gatehouse credential');
    assert.deepEqual(found.parameters?.map((parameter) => `${parameter.in}:${parameter.name}`), ['path:connectionId']);
    return found;
  };

  it('documents starting a sign-in: a form with the callback and CSRF token, a 303, rate limited', () => {
    const start = operation('/sso/{connectionId}/start', 'post');
    assert.ok(start.responses['303']);
    assert.ok(start.responses['403'], 'CSRF_FAILED');
    assert.ok(start.responses['429'], 'RATE_LIMIT_OAUTH_PER_IP');
    const schema = Object.values(start.requestBody?.content ?? {})[0]?.schema;
    const fields = schema?.properties ?? schema?.anyOf?.find((variant) => variant.properties !== undefined)?.properties ?? {};
    assert.deepEqual(Object.keys(fields).sort(), ['callbackUrl', 'csrfToken']);
  });

  it('documents the SAML assertion consumer service: a form post of SAMLResponse, a 303, no CSRF token, rate limited', () => {
    const acs = operation('/sso/saml/{connectionId}/acs', 'post');
    const form = acs.requestBody?.content['application/x-www-form-urlencoded'];
    assert.ok(form, 'the IdP posts a form');
    assert.deepEqual(form.schema.required, ['SAMLResponse']);
    assert.ok(acs.responses['303']);
    assert.ok(acs.responses['429']);
    assert.equal(acs.responses['403'], undefined, 'no CSRF check: the signature protects it');
  });

  it('documents the OpenID Connect callback (a 303) and the SP metadata (SAML metadata XML, or 404)', () => {
    assert.ok(operation('/sso/oidc/{connectionId}/callback', 'get').responses['303']);
    const metadata = operation('/sso/saml/{connectionId}/metadata', 'get');
    assert.ok(metadata.responses['200']?.content?.['application/samlmetadata+xml']);
    assert.ok(metadata.responses['404']?.content?.['application/json']);
  });
});
