/** Single-use tokens mailed to people (password reset, e-mail verification), stored hashed. */
import { defineModule } from '../module.ts';
import { TOKENS_ERRORS } from './tokens.errors.ts';
import * as actionTokens from './migrations/0005-action-tokens.ts';
import { createActionTokens, type ActionTokens } from './action-tokens.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    actionTokens: ActionTokens;
  }
}

export const tokensModule = defineModule({
  name: 'tokens',
  migrations: { '0005-action-tokens': actionTokens },
  errors: TOKENS_ERRORS,
  provide: ({ clock }) => ({ actionTokens: createActionTokens({ clock }) }),
  // The links mailed to a user (their rows go with the user's, on cascade).
  userData: ({ actionTokens }, { db }) => ({ export: async (userId) => ({ actionTokens: await actionTokens.listOf(db, userId) }) }),
});
