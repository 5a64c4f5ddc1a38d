/**
 * A session's device as a person reads it ("Chrome on Linux", "Safari on iOS") instead of a raw
 * User-Agent header. The header is parsed by bowser (its browser and OS tables are maintained
 * there); what it does not recognise (a CLI, a script) is named by its first product token
 * ("curl"). The header is the client's own claim: this labels, it proves nothing. Browser, system
 * and product names are names, the same in every language; only the sentence around them
 * ("{browser} on {system}") comes from the catalogs.
 */
import type Bowser from 'bowser';
import type { Translator } from '../i18n/translator.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import { ENGLISH_SESSION_TEXTS } from './session-texts.ts';

const MAX_UA_LENGTH = 512;
const MAX_PRODUCT_LENGTH = 40;

/** bowser's tables (about 70 KB of code) are loaded at the first header to label, not at start: idle memory is a budget (perf/analysis.md). */
const loadBowser = onFirstUse<typeof Bowser>(import.meta.url, 'bowser');

/** What a User-Agent header tells: a browser (on a system, when that is known too), or only a product token. */
export type Device = { browser: string; system: string | null } | { product: string };

export function parseDevice(userAgent: string | null): Device | null {
  if (userAgent === null || userAgent.trim() === '') return null;
  const header = userAgent.slice(0, MAX_UA_LENGTH);
  let browser = '';
  let system = '';
  try {
    const parsed = loadBowser().parse(header);
    browser = parsed.browser.name ?? '';
    system = parsed.os.name ?? '';
  } catch {
    // An unparsable header is named by its product token below.
  }
  if (browser !== '') return { browser, system: system === '' ? null : system };
  // "curl/8.5.0 …" -> "curl"; only a plain token, never arbitrary text of the header's choosing at length.
  const product = /^([A-Za-z][\w.-]*)/.exec(header.trim())?.[1];
  return product === undefined ? null : { product: product.slice(0, MAX_PRODUCT_LENGTH) };
}

/** The device in `i18n`'s language ("Chrome on Linux", "Chrome unter Linux"), or null when the header names nothing. */
export function deviceLabel(userAgent: string | null, i18n: Pick<Translator, 't'> = ENGLISH_SESSION_TEXTS): string | null {
  const device = parseDevice(userAgent);
  if (device === null) return null;
  if ('product' in device) return device.product;
  return device.system === null ? device.browser : i18n.t('sessions.device.browserOnSystem', { browser: device.browser, system: device.system });
}
