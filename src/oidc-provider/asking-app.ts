/**
 * Which app an authorization request's sign-in is for (the contract's `askingApps`): the sign-in
 * and second-factor pages are reached with a callback URL into the interaction
 * (`/oidc/interaction/<uid>`); the interaction names the client, shown by its registered name (or
 * its metadata document's) and the host it sends people back to.
 */
import type { AskingAppFinder } from '../module.ts';
import type { OidcProviderService } from './oidc-provider.service.ts';
import { INTERACTION_PATH } from './provider-routes.ts';

const INTERACTION_URL = new RegExp(`^${INTERACTION_PATH}/([A-Za-z0-9_-]{1,128})$`);

function hostOf(url: unknown): string | null {
  if (typeof url !== 'string') return null;
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

export function interactionAskingApp(oidc: OidcProviderService): AskingAppFinder {
  return {
    async find(callbackUrl) {
      const uid = INTERACTION_URL.exec(callbackUrl)?.[1];
      if (uid === undefined) return null;
      // Read by its id alone (the interaction's cookie is for its own path): an ended or unknown one is none.
      const interaction = await (await oidc.provider()).Interaction.find(uid).catch(() => undefined);
      const clientId = interaction?.params.client_id;
      if (typeof clientId !== 'string') return null;
      const client = await oidc.describeClient(clientId);
      if (client === null) return null;
      return { name: client.name, host: client.host ?? hostOf(interaction?.params.redirect_uri) };
    },
  };
}
