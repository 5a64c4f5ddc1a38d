/**
 * The sign-in paths (gatehouse-protect/next): GET /auth/signin?returnTo=/path starts a sign-in at
 * Gatehouse, GET /auth/callback finishes it; POST /auth/signout (a form on this app's pages) signs
 * out here and at Gatehouse; POST /auth/backchannel-logout takes Gatehouse's logout tokens.
 */
import { gatehouse } from '../../../lib/gatehouse';

export const { GET, POST } = gatehouse;
