/**
 * What the SSO browser tests share: a served app on a free port (SQLite, the org-domains module
 * asking a stub DNS server on loopback), the samlify test IdP served on loopback (its own origin,
 * answering with `handle`), the IdP's approval form, and axe's serious and critical findings.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSqliteDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { freePort } from '../../test/helpers/process.ts';
import type { Page } from '../../test/helpers/browser.ts';
import { startStubDnsServer, type StubDnsServer } from '../org-domains/test-dns-server.ts';
import { startTestIdp, type TestIdp } from './sso.test-helpers.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface SsoBrowserStack {
  served: TestApp;
  baseURL: string;
  dns: StubDnsServer;
  idp: TestIdp;
  close(): Promise<void>;
}

export async function startSsoBrowserStack(handle: (url: URL, response: ServerResponse) => Promise<void>): Promise<SsoBrowserStack> {
  const idpServer = createServer(async (request, response) => handle(new URL(request.url ?? '/', 'http://idp'), response));
  await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
  const idp = await startTestIdp(`http://127.0.0.1:${(idpServer.address() as AddressInfo).port}/metadata`);
  const database = await createSqliteDatabase();
  const port = await freePort();
  const baseURL = `http://localhost:${port}`;
  const dns = await startStubDnsServer();
  const served = await createTestApp(database, { env: { AUTH_URL: baseURL, DOMAINS_DNS_SERVER: dns.address } });
  await served.app.listen({ port, host: '127.0.0.1' });
  return {
    served,
    baseURL,
    dns,
    idp,
    async close() {
      await served.close();
      await database.drop();
      await new Promise((resolve) => idpServer.close(resolve));
      await dns.close();
    },
  };
}

/** The IdP's page: a form that posts the response to the ACS when its button is pressed. */
export function sendIdpForm(response: ServerResponse, acs: string, samlResponse: string, relayState: string | null): void {
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(
    `<!doctype html><html lang="en"><title>Test IdP</title><form method="post" action="${acs}"><input type="hidden" name="SAMLResponse" value="${samlResponse}">` +
      `${relayState === null ? '' : `<input type="hidden" name="RelayState" value="${relayState.replace(/"/g, '&quot;')}">`}<button type="submit">Approve at the IdP</button></form></html>`,
  );
}

/** The ids of axe's serious and critical findings on the page (WCAG 2.1 A and AA, best practices). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const run = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: Array<{ id: string; impact: string | null }> }> } }).axe;
    return (await run.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })).violations;
  });
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => violation.id);
}
