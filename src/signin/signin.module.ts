/** The sign-in pipeline every first factor ends in; its steps come from the modules that declare them. */
import { defineModule } from '../module.ts';
import { createSignInPipeline, type SignInPipeline } from './signin-pipeline.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    signInPipeline: SignInPipeline;
  }
}

export const signInModule = defineModule({
  name: 'signin',
  provide: ({ services, clock, config, signInSteps }) => ({
    signInPipeline: createSignInPipeline({
      users: services.users,
      sessions: services.sessions,
      audit: services.audit,
      clock,
      requireEmailVerification: config.accounts.requireEmailVerification,
      steps: signInSteps,
    }),
  }),
});
