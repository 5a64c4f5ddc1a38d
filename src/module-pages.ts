/**
 * The contract's slots for a module's part of a page another module serves (re-exported by
 * module.ts): a section of its own HTML (`pageSections`), or a link to a page of its own at a named
 * place of that page (`pageLinks`). The page serving them knows neither the module nor its routes:
 * it renders what the slot holds for each of its places.
 */
import { escapeHtml } from './i18n/translator.ts';
import type { PageContext } from './web/page-context.ts';

/**
 * The pages of other modules a module may add a section to (`organization`: one organization's
 * page, for its members; `admin-organization`: the administrators' page of one organization).
 */
export type SectionedPage = 'dashboard' | 'admin-user' | 'signin' | 'mfa-prompt' | 'organization' | 'admin-organization';

/**
 * The dashboard's groups, in the order of its navigation (in-page links, no script): every section
 * lands in one (`PageSection.group`). Profile: who the person is (and leaving); security: how they
 * sign in (password, providers, second factors, trusted browsers); sessions: where they are signed
 * in; organizations: those they belong to; apps: what acts for them (connected apps, keys).
 */
export const DASHBOARD_GROUPS = ['profile', 'security', 'sessions', 'organizations', 'apps'] as const;
export type DashboardGroup = (typeof DASHBOARD_GROUPS)[number];

/**
 * A module's part of a page another module serves: the account dashboard (what the user manages
 * of the module's: their second factors, say), or the administrators' page of one user (what an
 * administrator may see or reset). It renders its own HTML with its own template (web/render.ts,
 * escaped there); its forms post to its own routes.
 */
export interface PageSection {
  readonly page: SectionedPage;
  /** On the dashboard: the group it is shown in, under that group's navigation link; `profile` when left out. */
  readonly group?: DashboardGroup;
  /** Its HTML, or null to show nothing for this user. */
  render(context: PageSectionContext): Promise<string | null>;
  /**
   * Same-origin scripts it needs (its own route serves them), loaded at the end of the page
   * under a per-response CSP nonce, with `connect-src 'self'`; every other page runs no script.
   */
  readonly scripts?: readonly string[];
}

export interface PageSectionContext {
  /** Whom the page is about: on the dashboard (and an organization's page), the signed-in user; on the second-factor page, the user signing in; null on the sign-in page and the administrators' page of an organization. */
  readonly userId: string | null;
  /** On an organization's page: the organization (the section judges what the user's role there lets them see); on the administrators' page of one, that organization. */
  readonly organizationId?: string;
  /**
   * The page's request context (web/page-context.ts): its language and brand, the CSRF token for
   * the section's forms, and the signed-in viewer (the administrator, on the admin pages; null on
   * the sign-in and second-factor pages). Render the section with it.
   */
  readonly page: PageContext;
  /** The sign-in and second-factor pages: where to go once signed in, already judged (a path of ours, or a URL on one of TRUSTED_ORIGINS). */
  readonly callbackUrl?: string;
}

/**
 * The sections' HTML for one page, in list order (and by dashboard group, `grouped`), leaving out those with nothing to show, and the
 * scripts of those shown (the page loads them under its context's nonce).
 */
export async function renderPageSections(sections: readonly PageSection[], context: PageSectionContext): Promise<{ html: string[]; scripts: string[]; grouped: Record<DashboardGroup, string[]> }> {
  const rendered = await Promise.all(sections.map(async (section) => ({ section, html: await section.render(context) })));
  const shown = rendered.filter((entry): entry is { section: PageSection; html: string } => entry.html !== null);
  const grouped = Object.fromEntries(DASHBOARD_GROUPS.map((group) => [group, shown.filter((entry) => (entry.section.group ?? 'profile') === group).map((entry) => entry.html)])) as Record<DashboardGroup, string[]>;
  return { html: shown.map((entry) => entry.html), scripts: [...new Set(shown.flatMap((entry) => entry.section.scripts ?? []))], grouped };
}

/**
 * The places of other modules' pages where a module may put a link (`pageLinks`), each shown as
 * the page shows its own links there:
 * - `signin.below-password`: under the sign-in form's password field, a hint ("Forgot password?");
 * - `signin.below-form`: at the end of the sign-in page, a hint each ("New here? Create an account.");
 * - `dashboard.header`: the dashboard's header, a secondary button each, before "Sign out";
 * - `dashboard.below-password-form`: under the dashboard's change-password form, a hint.
 * A place no page has stops the start.
 */
export const PAGE_LINK_PLACES = ['signin.below-password', 'signin.below-form', 'dashboard.header', 'dashboard.below-password-form'] as const;
export type PageLinkPlace = (typeof PAGE_LINK_PLACES)[number];

interface PageLinkPart {
  readonly place: PageLinkPlace;
  /** Where it goes among the place's links, smallest first (list order among equals). */
  readonly order: number;
  /** Whether this request shows it (for the viewer's roles, or the code the page shows); always, when left out. */
  shownWhen?(context: PageLinkContext): boolean;
}

/** A link to a page of the module's own: the page draws it. */
export interface PageHrefLink extends PageLinkPart {
  readonly href: `/${string}`;
  /**
   * Its text, a key of the module's own messages: with `<link>…</link>` in it, those words link
   * (a sentence: "New here? <link>Create an account</link>."); without, the whole text does.
   */
  readonly message: string;
}

/**
 * A small part of its own HTML in place of a link (a button in a form that posts to its own
 * route, with `page.csrfToken`): rendered with its own template, escaped there.
 */
export interface PageRenderedLink extends PageLinkPart {
  render(context: PageLinkContext): string;
}

/** A module's link at a named place of another module's page (`pageLinks`). */
export type PageLink = PageHrefLink | PageRenderedLink;

/** What a link is judged and rendered with. */
export interface PageLinkContext {
  /** The page's request context: its language, CSRF token and viewer. */
  readonly page: PageContext;
  /** The roles of the signed-in user the page is shown to; none when nobody is signed in. */
  readonly roles: readonly string[];
  /** The error code the page shows (the sign-in form's EMAIL_NOT_VERIFIED, say), or null. */
  readonly code: string | null;
}

/**
 * The HTML of a place's links shown for this request, in their order (`collectPageLinks` sorted
 * them). `className`: the class the place gives its anchors (a button's, in a header).
 */
export function renderPageLinks(links: readonly PageLink[], context: PageLinkContext, look: { readonly className?: string } = {}): string[] {
  const { i18n } = context.page;
  return links
    .filter((link) => link.shownWhen?.(context) ?? true)
    .map((link) => {
      if (!('href' in link)) return link.render(context);
      const anchor = (text: string) => `<a${look.className === undefined ? '' : ` class="${escapeHtml(look.className)}"`} href="${escapeHtml(link.href)}">${text}</a>`;
      let isSentence = false;
      const sentence = i18n.html(link.message, {}, {
        link: (text) => {
          isSentence = true;
          return anchor(text);
        },
      });
      return isSentence ? sentence : anchor(escapeHtml(i18n.t(link.message)));
    });
}

/**
 * The app asking a person to sign in, shown as "to continue to <name> (<host>)" under the sign-in
 * and second-factor pages' heading. `host`: where it lives (its redirect's host, or the host that
 * vouches for it), or null when unknown.
 */
export interface AskingApp {
  readonly name: string;
  readonly host: string | null;
}

/**
 * A module's way of telling which app a sign-in's callback URL leads back to (`askingApps`): the
 * OpenID provider knows its authorization requests' interaction URLs, say. Null when the URL is not
 * one of its own, or it no longer knows it. The pages ask each in turn, knowing none of them.
 */
export interface AskingAppFinder {
  find(callbackUrl: string): Promise<AskingApp | null>;
}

/** The first finder's answer for `callbackUrl` (already judged by `toCallbackUrl`), or null. */
export async function findAskingApp(finders: readonly AskingAppFinder[], callbackUrl: string): Promise<AskingApp | null> {
  for (const finder of finders) {
    const app = await finder.find(callbackUrl);
    if (app !== null) return app;
  }
  return null;
}
