/**
 * E-mail and password: hashing, the password policy, sign-in (a first factor of the sign-in
 * pipeline) with its brute-force throttle, sign-up, and the bootstrap of the first ADMIN.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule, type RouteContext } from '../module.ts';
import { CREDENTIALS_ERRORS } from './credentials.errors.ts';
import { credentialsConfigSection } from './credentials.config.ts';
import { deriveSecretKey } from '../lib/derive-key.ts';
import { createPasswordHasher, type PasswordHasher } from './password-hasher.ts';
import { createStoredHashParametersJob } from './stored-hash-parameters.ts';
import { createSignInThrottle, type SignInThrottle } from './signin-throttle.ts';
import { createPasswordRefusalLimits } from './password-refusals.ts';
import { createCredentialsService, type CredentialsService } from './credentials.service.ts';
import { createSignupService, type SignupService } from './signup.service.ts';
import { apiSignInRoutes, browserSignInRoutes } from './signin.routes.ts';
import { passwordFactorKind } from './password-factor.ts';
import { signupRoutes } from './signup.routes.ts';
import { CREDENTIALS_PUBLIC_EVENTS } from './credentials.public-events.ts';
import { credentialsMail } from './credentials.mail.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    hasher: PasswordHasher;
    /** Keeps the unknown-address dummy hash costing what stored hashes cost. */
    storedHashParameters: ReturnType<typeof createStoredHashParametersJob>;
    credentials: CredentialsService;
    signup: SignupService;
    /** Brute-force limits on secrets tried against an account: passwords here, second-factor codes in mfa. */
    signInThrottle: SignInThrottle;
  }
}

const signInRouteOptions = ({ services, csrf, config, clock }: RouteContext) => ({ credentials: services.credentials, sessions: services.sessions, csrf, config, clock });

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['password.changed', 'signup.existing_account', 'user.password_locked'] as const;
type CredentialsAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends CredentialsAuditEvents {}
}

export const credentialsModule = defineModule({
  name: 'credentials',
  openApiTags: [
    { name: 'auth', description: 'Sign-in with e-mail and password, sign-up and e-mail verification.' },
  ],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => credentialsMail,
  config: credentialsConfigSection,
  errors: CREDENTIALS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: CREDENTIALS_PUBLIC_EVENTS,
  async provide({ db, config, clock, logger, services, modules }) {
    const { users, sessions, audit, mail, actionTokens, rateLimiters, signInPipeline, verification } = services;
    const signInThrottle = createSignInThrottle({ limiters: rateLimiters, rateLimits: config.rateLimits, throttle: config.signinThrottle, clock, hashQueueTimeoutMs: config.passwords.queueTimeoutMs, db });
    const hasher = await createPasswordHasher({ ...config.passwords, dummySelectionKey: deriveSecretKey(config.authSecret, 'dummy-hash-selection'), schemes: modules.flatMap((module) => module.passwordHashSchemes ?? []) });
    const credentials = createCredentialsService({
      users,
      sessions,
      hasher,
      policy: { minLength: config.passwords.minLength, maxLength: config.passwords.maxLength, minScore: config.passwords.minScore },
      audit,
      pipeline: signInPipeline,
      db,
      mail,
      actionTokens,
      clock,
      throttle: signInThrottle,
      passwordRefusals: createPasswordRefusalLimits({ limiters: rateLimiters, rateLimits: config.rateLimits, clock }),
      accountSources: modules.flatMap((module) => module.passwordAccountSources?.(config) ?? []),
    });
    return {
      hasher,
      signInThrottle,
      storedHashParameters: createStoredHashParametersJob({ users, hasher, logger }),
      credentials,
      signup: createSignupService({ db, allowSignup: config.accounts.allowSignup, credentials, users, verification, mail, audit }),
    };
  },
  jobs: ({ storedHashParameters }) => [storedHashParameters],
  // Whether the account has a password, never its hash (which goes with the user's row).
  userData: ({ users }) => ({
    async export(userId) {
      const credentials = await users.findCredentialsById(userId);
      return credentials && { password: { isSet: credentials.passwordHash !== null, lockedAt: credentials.passwordLockedAt } };
    },
  }),
  firstFactors: ({ users }) => [passwordFactorKind(users)],
  routes: [
    { scope: 'api', register: (app, context) => app.register(apiSignInRoutes, signInRouteOptions(context)) },
    { scope: 'browser', register: (app, context) => app.register(browserSignInRoutes, signInRouteOptions(context)) },
    { scope: 'browser', register: (app, { services }) => app.register(signupRoutes, { signup: services.signup, limits: services.limits }) },
  ],
});
