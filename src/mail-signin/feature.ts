import type { Feature } from '../features.ts';
import { createMailSignin } from './migrations/2026-11-27-0023-mail-signin.ts';
import { mailSigninPageTexts } from './page-texts.ts';
import { mailSigninRoutes } from './routes.ts';

/** Sign-in by a link or a code in a mail: its asks, its verify routes, and the clean-up of what expired. */
export const mailSigninFeature: Feature = {
  name: 'mail-signin',
  migrations: { '2026-11-27-0023-mail-signin': createMailSignin },
  routes: (app, { services, guard, profile, metrics, config }) =>
    app.register(mailSigninRoutes, {
      mailSignin: services.mailSignin,
      core: services.core,
      guard,
      profile,
      metrics,
      redirects: { publicUrl: config.publicUrl, corsOrigins: config.corsOrigins },
      // For an email with no account yet: the language its mail (and the account) is made in.
      localeOf: (acceptLanguage) => services.mail.templates.localeFor(acceptLanguage),
    }),
  housekeeping: ({ mailSignin }) => mailSignin.purge(),
  pageTexts: mailSigninPageTexts,
};
