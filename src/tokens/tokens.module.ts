/** Single-use tokens mailed to people (password reset, e-mail verification), stored hashed. */
import { defineModule } from '../module.ts';
import { createActionTokens, type ActionTokens } from './action-tokens.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    actionTokens: ActionTokens;
  }
}

export const tokensModule = defineModule({
  name: 'tokens',
  provide: ({ clock }) => ({ actionTokens: createActionTokens({ clock }) }),
});
