/** How long a setup link lives (sso-setup.service.ts): declared apart, for the routes and pages that offer the choice at start. */
export const SETUP_LINK_DEFAULT_DAYS = 7;
export const SETUP_LINK_MAX_DAYS = 30;
