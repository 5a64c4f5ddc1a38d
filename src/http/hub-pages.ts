/**
 * The hub pages every module's pages link back to: the sign-in page, the sign-out confirmation and
 * the dashboard. The pages module serves them; this shared-layer file names them once, so that no
 * other module spells the pages module's routes (templates read them as `it.paths`, web/render.ts).
 */
export const HUB_PAGES = Object.freeze({
  signIn: '/auth/signin',
  signOut: '/auth/signout',
  dashboard: '/dashboard',
});

export type HubPages = typeof HUB_PAGES;
