import { HUB_PAGES } from './hub-pages.ts';

export const SIGN_IN_PAGE = HUB_PAGES.signIn;

/**
 * The sign-in page, told where to come back to. `/` stays literal in the query (readable, and
 * the page reads the value back through toCallbackUrl); without a path, sign-in lands on the
 * dashboard.
 */
export function signInRedirect(callbackPath?: string): string {
  if (callbackPath === undefined) return SIGN_IN_PAGE;
  return `${SIGN_IN_PAGE}?callbackUrl=${encodeURIComponent(callbackPath).replaceAll('%2F', '/')}`;
}
