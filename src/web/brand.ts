/**
 * What the layout shows as the deployment's own (the branding module fills it from BRAND_* and
 * SUPPORT_*; without it, Gatehouse's own): the name, a logo, extra stylesheets (the theme colours,
 * a custom stylesheet) and where to get support. Every URL is on our own origin.
 */
export interface Brand {
  readonly name: string;
  /** A same-origin image URL; null: the name alone. */
  readonly logoUrl: string | null;
  /** Same-origin stylesheets loaded after gatehouse.css, in order. */
  readonly stylesheets: readonly string[];
  readonly supportEmail: string | null;
  readonly supportUrl: string | null;
  /** Any BRAND_* set: the footer then names the brand alone. */
  readonly isCustom: boolean;
}

export const DEFAULT_BRAND: Brand = Object.freeze({ name: 'Gatehouse', logoUrl: null, stylesheets: [], supportEmail: null, supportUrl: null, isCustom: false });
