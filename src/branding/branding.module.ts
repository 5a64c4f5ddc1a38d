/**
 * Branding: the deployment's name, logo, colours, stylesheet and support contacts on every hosted
 * page (and the name in the mails: the mail module reads `config.branding`). The brand's files are
 * served by Gatehouse under versioned URLs, so pages load nothing from another origin; the colours
 * become a small stylesheet of CSS variables (the pages' CSP allows no inline style). Contrast is
 * checked when the configuration is read (branding.config.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { defineModule } from '../module.ts';
import type { Brand } from '../web/brand.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import { brandingConfigSection, DEFAULT_BRAND_NAME, type BrandingConfig } from './branding.config.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    brand: BrandService;
  }
}

/** A file the brand serves: its bytes, type and the version its URL carries. */
interface BrandAsset {
  readonly path: string;
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
  readonly version: string;
}

export interface BrandService {
  /** What the layout shows. */
  readonly page: Brand;
  /** The files to serve, by path. */
  readonly assets: ReadonlyMap<string, BrandAsset>;
}

export const BRAND_ASSETS_PATH = '/assets/brand';

function asset(name: string, body: Buffer, type: string): BrandAsset {
  const version = createHash('sha256').update(body).digest('base64url').slice(0, 16);
  return { path: `${BRAND_ASSETS_PATH}/${name}?v=${version}`, body, type, etag: `"${version}"`, version };
}

/** The theme: Gatehouse's accent replaced, in the light theme and (when given) the dark one. */
function themeCss(config: BrandingConfig): string | null {
  const rules: string[] = [];
  if (config.primaryColor !== null) rules.push(`:root { --accent: ${config.primaryColor}; --accent-text: #ffffff; }`);
  if (config.primaryColorDark !== null) rules.push(`@media (prefers-color-scheme: dark) { :root { --accent: ${config.primaryColorDark}; --accent-text: #0d1220; } }`);
  return rules.length === 0 ? null : `${rules.join('\n')}\n`;
}

export function createBrandService(config: BrandingConfig): BrandService {
  const assets = new Map<string, BrandAsset>();
  const add = (name: string, body: Buffer, type: string) => {
    const made = asset(name, body, type);
    assets.set(`${BRAND_ASSETS_PATH}/${name}`, made);
    return made.path;
  };
  const theme = themeCss(config);
  const stylesheets = [
    ...(theme === null ? [] : [add('theme.css', Buffer.from(theme), 'text/css; charset=utf-8')]),
    ...(config.stylesheetFile === null ? [] : [add('custom.css', readFileSync(config.stylesheetFile), 'text/css; charset=utf-8')]),
  ];
  const logo = config.logo;
  const logoUrl = logo === null ? null : 'url' in logo ? logo.url : add('logo', readFileSync(logo.file), logo.type);
  const isCustom = config.name !== DEFAULT_BRAND_NAME || logo !== null || stylesheets.length > 0;
  return {
    page: Object.freeze({ name: config.name, logoUrl, stylesheets, supportEmail: config.supportEmail, supportUrl: config.supportUrl, isCustom }),
    assets,
  };
}

export const brandingModule = defineModule({
  name: 'branding',
  config: brandingConfigSection,
  provide: ({ config }) => ({ brand: createBrandService(config.branding) }),
  routes: [
    {
      scope: 'api',
      register: async (app, { services }) => {
        for (const [path, file] of services.brand.assets) {
          app.get(path, { config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) }, schema: { hide: true } }, async (request, reply) => {
            const { v } = (request.query ?? {}) as { v?: unknown };
            void reply.headers({
              // The pages' URLs carry the version (a new file is a new URL): those are kept for good.
              // Asked for without it, or with an old one, the answer must be checked again next time.
              'cache-control': v === file.version ? 'public, max-age=31536000, immutable' : 'no-cache',
              etag: file.etag,
              'x-content-type-options': 'nosniff',
              // An SVG opened on its own must not run script on our origin.
              'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
            });
            if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
            return reply.type(file.type).send(file.body);
          });
        }
      },
    },
    {
      scope: 'browser',
      register: async (app, { services }) => {
        // After the i18n module's hook, which made `request.language` (module order).
        app.addHook('onRequest', (request, _reply, done) => {
          if (request.language !== null && request.language !== undefined) request.language.brand = services.brand.page;
          done();
        });
      },
    },
  ],
});
