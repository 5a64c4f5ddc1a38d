/** The setup link's pages (sso-setup-pages.routes.ts), named once for the routes that send browsers there. */
export const SETUP_PAGE = '/sso/setup';
export const setupTestPage = (testId: string) => `${SETUP_PAGE}/tests/${encodeURIComponent(testId)}`;
