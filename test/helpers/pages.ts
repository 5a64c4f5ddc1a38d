/** Checks for server-rendered pages in `app.inject()` tests: the page headers and what a browser would submit. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
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

/** The `'sha256-…'` CSP source of an inline script's text. */
export function scriptHashSource(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * A 200 HTML page with the headers every page has (strict CSP, no framing, no caching), no inline
 * style, the shared layout, and a control for every label. Scripts: none, same-origin files (a
 * module's, e.g. the passkey ceremony) under this response's CSP nonce, or an inline script whose
 * exact text the CSP allows by its hash (the password fields' one); never `'unsafe-inline'`.
 */
export function assertHtmlPage(response: LightMyRequestResponse, label: string, status = 200): void {
  assert.equal(response.statusCode, status, label);
  assert.equal(response.headers['content-type'], 'text/html; charset=utf-8', label);
  const csp = String(response.headers['content-security-policy']);
  for (const directive of ["default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"]) {
    assert.ok(csp.includes(directive), `${label}: CSP has ${directive}`);
  }
  const scriptSrc = /(?:^|;\s*)script-src ([^;]*)/.exec(csp)?.[1] ?? '';
  assert.doesNotMatch(scriptSrc, /unsafe-inline|unsafe-eval|\*|https?:/, `${label}: script-src allows only a nonce or hashes`);
  const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(scriptSrc)?.[1];
  const hashes: string[] = scriptSrc.match(/'sha256-[A-Za-z0-9+/=]+'/g) ?? [];
  if (nonce === undefined && hashes.length === 0) assert.equal(scriptSrc, "'none'", `${label}: CSP has script-src 'none'`);
  const inline = [...response.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
  for (const [tag, attributes, text] of inline) {
    if (text === '') {
      assert.match(tag, /^<script src="\/[^/"][^"]*" nonce="[^"]+" defer><\/script>$/, `${label}: only same-origin script files: ${tag}`);
      assert.ok(tag.includes(`nonce="${nonce}"`), `${label}: the script carries this response's nonce`);
    } else {
      assert.doesNotMatch(attributes!, /\ssrc=|\snonce=/, `${label}: an inline script is allowed by its hash alone`);
      assert.ok(hashes.includes(scriptHashSource(text!)), `${label}: the CSP allows the inline script by its hash`);
    }
  }
  assert.equal(inline.length, [...response.body.matchAll(/<script\b/gi)].length, `${label}: every script element is closed`);
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
