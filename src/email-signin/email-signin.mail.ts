/** The email-signin module's mail: a one-time sign-in (or sign-up) link and code (files in mail/, texts `email-signin.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /** A sign-in link and its code for an account (`signin`), or, while ALLOW_SIGNUP, for an address with none (`signup`): secrets until used. */
    'email-signin': { name: string | null; purpose: 'signin' | 'signup'; linkUrl: string; code: string; expiresInMinutes: number };
  }
}

export const emailSignInMail = defineMailTemplates({
  'email-signin': {
    dir: join(import.meta.dirname, 'mail'),
    subject: (data, { i18n, brandName }) =>
      data.purpose === 'signup' ? i18n.t('email-signin.mail.email-signin.signupSubject', { brand: brandName }) : i18n.t('email-signin.mail.email-signin.subject', { brand: brandName }),
    model: (data, { i18n }) => ({ expiresIn: i18n.duration(data.expiresInMinutes * 60), isSignup: data.purpose === 'signup' }),
  },
});
