/** Checks for server-rendered pages in `app.inject()` tests: the page headers and what a browser would submit. */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';

/** The value of a hidden input, as the browser would submit it. */
export function hiddenValue(html: string, name: string): string {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(html);
  assert.ok(match, `hidden field ${name} in the page`);
  return unescapeHtml(match[1]!);
}

/** Undoes the template's escaping of text and attribute values. */
export function unescapeHtml(text: string): string {
  return text.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

/**
 * A 200 HTML page with the headers every page has (strict CSP, no framing, no caching), no inline
 * script or style, the shared layout, and a control for every label. Scripts: none, or only
 * same-origin files (a module's, e.g. the passkey ceremony) under this response's CSP nonce.
 */
export function assertHtmlPage(response: LightMyRequestResponse, label: string, status = 200): void {
  assert.equal(response.statusCode, status, label);
  assert.equal(response.headers['content-type'], 'text/html; charset=utf-8', label);
  const csp = String(response.headers['content-security-policy']);
  for (const directive of ["default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"]) {
    assert.ok(csp.includes(directive), `${label}: CSP has ${directive}`);
  }
  const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
  if (nonce === undefined) assert.ok(csp.includes("script-src 'none'"), `${label}: CSP has script-src 'none'`);
  const scripts = [...response.body.matchAll(/<script\b[^>]*>/gi)].map(([tag]) => tag);
  for (const tag of scripts) {
    assert.match(tag, /^<script src="\/[^/"][^"]*" nonce="[^"]+" defer>$/, `${label}: only same-origin script files: ${tag}`);
    assert.ok(tag.includes(`nonce="${nonce}"`), `${label}: the script carries this response's nonce`);
  }
  assert.doesNotMatch(response.body.replace(/<script\b[^>]*><\/script>/gi, ''), /<script/i, `${label}: no inline script`);
  assert.equal(response.headers['x-frame-options'], 'DENY', label);
  // Not no-referrer: with it, browsers send `Origin: null` on the page's form posts (CSRF_FAILED).
  assert.equal(response.headers['referrer-policy'], 'same-origin', label);
  assert.equal(response.headers['x-content-type-options'], 'nosniff', label);
  assert.equal(response.headers['cache-control'], 'no-store', label);
  assert.doesNotMatch(response.body, /<style/i, `${label}: no style element`);
  // Inside tags only: escaped text may well read `onerror=`.
  assert.doesNotMatch(response.body, /<[a-z][^>]*\sstyle\s*=/i, `${label}: no style attribute`);
  assert.doesNotMatch(response.body, /<[a-z][^>]*\son[a-z]+\s*=/i, `${label}: no event handler attribute`);
  assert.match(response.body, /<link rel="stylesheet" href="\/assets\/gatehouse\.css">/, `${label}: the shared layout`);
  // Every label names an existing control.
  for (const [, target] of response.body.matchAll(/<label for="([^"]+)">/g)) {
    assert.match(response.body, new RegExp(`id="${target}"`), `${label}: label for ${target}`);
  }
}
