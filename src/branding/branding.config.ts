/**
 * The branding module's section: what the hosted pages and the mails show as the deployment's own.
 *
 *   BRAND_NAME                 the name in titles, the header, the footer and the mails (default Gatehouse)
 *   BRAND_LOGO_FILE            an SVG, PNG or WebP logo (a path; relative ones are under DATA_DIR), served by Gatehouse
 *   BRAND_LOGO_URL             or a logo already served on Gatehouse's own origin (a path, or a URL on AUTH_URL's
 *                              origin): pages make no request to another origin
 *   BRAND_PRIMARY_COLOR        #rrggbb for buttons and links in the light theme; refused unless white button text on it
 *                              meets WCAG AA (4.5:1)
 *   BRAND_PRIMARY_COLOR_DARK   the same for the dark theme; refused unless the dark theme's button text on it and it on
 *                              the dark surface meet AA. Unset: the dark theme keeps its own accent
 *   BRAND_STYLESHEET           a CSS file (path; relative ones under DATA_DIR) loaded after Gatehouse's own
 *   SUPPORT_EMAIL, SUPPORT_URL where the error page sends people when a problem persists
 */
import { existsSync, statSync } from 'node:fs';
import { extname, isAbsolute, resolve } from 'node:path';
import type { ConfigSection } from '../config.ts';
import { nameProblem } from '../users/name.ts';
import { AA_CONTRAST, contrastRatio, parseHexColor, toHex } from './contrast.ts';

declare module '../config.ts' {
  interface Config {
    readonly branding: BrandingConfig;
  }
}

export interface BrandingConfig {
  readonly name: string;
  /** A file Gatehouse serves, or a same-origin URL; null: the name alone. */
  readonly logo: { readonly file: string; readonly type: string } | { readonly url: string } | null;
  readonly primaryColor: string | null;
  readonly primaryColorDark: string | null;
  readonly stylesheetFile: string | null;
  readonly supportEmail: string | null;
  readonly supportUrl: string | null;
}

export const DEFAULT_BRAND_NAME = 'Gatehouse';
const MAX_BRAND_NAME_LENGTH = 60;
/** Larger than any logo needs; the file is held in memory to be served. */
export const MAX_BRAND_FILE_BYTES = 512 * 1024;
const LOGO_TYPES: Readonly<Record<string, string>> = { '.svg': 'image/svg+xml', '.png': 'image/png', '.webp': 'image/webp' };
const WHITE: [number, number, number] = [255, 255, 255];
/** The dark theme's button text and surface (gatehouse.css). */
const DARK_ACCENT_TEXT: [number, number, number] = [0x0d, 0x12, 0x20];
const DARK_SURFACE: [number, number, number] = [0x1b, 0x20, 0x29];
const EMAIL = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;]+$/;

function brandFile(name: string, value: string | undefined, dataDir: string, types: Readonly<Record<string, string>>, problems: string[]): { file: string; type: string } | null {
  if (value === undefined) return null;
  const file = isAbsolute(value) ? value : resolve(dataDir, value);
  const type = types[extname(file).toLowerCase()];
  if (type === undefined) {
    problems.push(`${name} must be a ${Object.keys(types).join(', ')} file (got "${value.slice(0, 200)}")`);
    return null;
  }
  if (!existsSync(file) || !statSync(file).isFile()) {
    problems.push(`${name}: no such file ${file}`);
    return null;
  }
  if (statSync(file).size > MAX_BRAND_FILE_BYTES) problems.push(`${name}: ${file} is larger than ${MAX_BRAND_FILE_BYTES / 1024} KiB`);
  return { file, type };
}

function color(name: string, value: string | undefined, checks: Array<{ against: [number, number, number]; what: string }>, problems: string[]): string | null {
  if (value === undefined) return null;
  const parsed = parseHexColor(value);
  if (parsed === null) {
    problems.push(`${name} must be a colour as #rrggbb (got "${value.slice(0, 40)}")`);
    return null;
  }
  for (const { against, what } of checks) {
    const ratio = contrastRatio(parsed, against);
    if (ratio < AA_CONTRAST) {
      problems.push(`${name} ${toHex(parsed)} gives ${what} a contrast of ${ratio.toFixed(2)}:1; WCAG AA needs ${AA_CONTRAST}:1 (choose a ${against === WHITE ? 'darker' : 'lighter'} colour)`);
      return null;
    }
  }
  return toHex(parsed);
}

/** A same-origin place: a path (never `//host`), or a URL on AUTH_URL's origin. */
function isSameOrigin(value: string, authUrl: string | undefined): boolean {
  if (value.startsWith('/')) return !value.startsWith('//') && !value.startsWith('/\\');
  try {
    return authUrl !== undefined && new URL(value).origin === new URL(authUrl).origin;
  } catch {
    return false;
  }
}

export const brandingConfigSection: ConfigSection = (read, basis, problems) => {
  const dataDir = resolve(read.string('DATA_DIR') ?? './data');
  const name = read.string('BRAND_NAME') ?? DEFAULT_BRAND_NAME;
  const nameIssue = name.length > MAX_BRAND_NAME_LENGTH ? `is longer than ${MAX_BRAND_NAME_LENGTH} characters` : nameProblem(name);
  if (nameIssue !== null) problems.push(`BRAND_NAME ${nameIssue}`);

  const logoFile = brandFile('BRAND_LOGO_FILE', read.string('BRAND_LOGO_FILE'), dataDir, LOGO_TYPES, problems);
  const logoUrl = read.string('BRAND_LOGO_URL');
  if (logoUrl !== undefined && logoFile !== null) problems.push('BRAND_LOGO_FILE and BRAND_LOGO_URL: set one of them');
  if (logoUrl !== undefined && !isSameOrigin(logoUrl, basis.authUrl)) {
    problems.push(`BRAND_LOGO_URL must be on Gatehouse's own origin (a path such as /brand/logo.svg, or a URL on AUTH_URL's origin): pages load nothing from another origin. For a file, use BRAND_LOGO_FILE`);
  }

  const supportEmail = read.string('SUPPORT_EMAIL') ?? null;
  if (supportEmail !== null && (supportEmail.length > 254 || !EMAIL.test(supportEmail))) problems.push('SUPPORT_EMAIL must be an e-mail address');
  const supportUrl = read.string('SUPPORT_URL') ?? null;
  if (supportUrl !== null) {
    let isValid = isSameOrigin(supportUrl, basis.authUrl);
    if (!isValid) {
      try {
        const url = new URL(supportUrl);
        isValid = url.protocol === 'https:' || (url.protocol === 'http:' && !basis.isProduction);
      } catch {
        isValid = false;
      }
    }
    if (!isValid) problems.push(`SUPPORT_URL must be an https URL or a path (got "${supportUrl.slice(0, 200)}")`);
  }

  return {
    branding: {
      name,
      logo: logoFile ?? (logoUrl === undefined ? null : { url: logoUrl }),
      primaryColor: color('BRAND_PRIMARY_COLOR', read.string('BRAND_PRIMARY_COLOR'), [{ against: WHITE, what: 'the white button text (and links on the white surface)' }], problems),
      primaryColorDark: color(
        'BRAND_PRIMARY_COLOR_DARK',
        read.string('BRAND_PRIMARY_COLOR_DARK'),
        [
          { against: DARK_ACCENT_TEXT, what: "the dark theme's button text" },
          { against: DARK_SURFACE, what: 'links on the dark surface' },
        ],
        problems,
      ),
      stylesheetFile: brandFile('BRAND_STYLESHEET', read.string('BRAND_STYLESHEET'), dataDir, { '.css': 'text/css' }, problems)?.file ?? null,
      supportEmail,
      supportUrl,
    },
  };
};
