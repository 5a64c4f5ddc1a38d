/**
 * The enrolment QR code as an inline SVG: no image request, no script, and nothing of the URL in
 * the markup (the text lives only in the modules), so the page can embed it under a CSP that
 * allows no scripts. The manual key is shown beside it for people who cannot scan.
 */
import type * as Uqr from 'uqr';
import { onFirstUse } from '../lib/on-first-use.ts';

/** The QR encoder is loaded at the first enrolment, not at start (idle memory is a budget: perf/analysis.md). */
const loadUqr = onFirstUse<typeof Uqr>(import.meta.url, 'uqr');

/**
 * Medium error correction (15 %) survives a glare or a smudged screen at a modest size, and a
 * quiet zone of four modules is what the QR standard asks for, so scanners find the code on a
 * page of any colour. The SVG has a viewBox and no width or height: the page sizes it.
 */
const QR_OPTIONS = { ecc: 'M', border: 4 } as const;

/** The otpauth:// URL as a QR code in SVG markup. */
export function otpauthQrSvg(otpauthUrl: string): string {
  return loadUqr().renderSVG(otpauthUrl, QR_OPTIONS);
}
