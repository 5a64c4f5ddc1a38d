/**
 * A session's device as a person reads it ("Chrome on Linux", "Safari on iOS") instead of a raw
 * User-Agent header. The header is parsed by bowser (its browser and OS tables are maintained
 * there); what it does not recognise (a CLI, a script) is named by its first product token
 * ("curl"). The header is the client's own claim: this labels, it proves nothing.
 */
import Bowser from 'bowser';

const MAX_UA_LENGTH = 512;
const MAX_PRODUCT_LENGTH = 40;

export function deviceLabel(userAgent: string | null): string | null {
  if (userAgent === null || userAgent.trim() === '') return null;
  const header = userAgent.slice(0, MAX_UA_LENGTH);
  let browser = '';
  let os = '';
  try {
    const parsed = Bowser.parse(header);
    browser = parsed.browser.name ?? '';
    os = parsed.os.name ?? '';
  } catch {
    // An unparsable header is named by its product token below.
  }
  if (browser !== '' && os !== '') return `${browser} on ${os}`;
  if (browser !== '') return browser;
  // "curl/8.5.0 …" -> "curl"; only a plain token, never arbitrary text of the header's choosing at length.
  const product = /^([A-Za-z][\w.-]*)/.exec(header.trim())?.[1];
  return product === undefined ? null : product.slice(0, MAX_PRODUCT_LENGTH);
}
