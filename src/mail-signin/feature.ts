import type { Config } from '../config.ts';
import { feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import type { MailExports } from '../mail/feature.ts';
import { ResetRequestsRepository } from '../recovery/feature.ts';
import type { SigninExports } from '../signin/feature.ts';
import type { UsersExports } from '../users/feature.ts';
import { mailSigninMails } from './mails.ts';
import { createMailSignin } from './migrations/2026-11-27-0023-mail-signin.ts';
import { mailSigninPageTexts } from './page-texts.ts';
import { MailSigninsRepository } from './repository.ts';
import { mailSigninRoutes } from './routes.ts';
import { type MailSigninRepositories, MailSigninService } from './service.ts';

export interface MailSigninUnit {
  /** Sign-in link and code asks, sent in the background like forgot-password asks. */
  linkAsks: ResetRequestsRepository;
  codeAsks: ResetRequestsRepository;
  mailSignins: MailSigninsRepository;
}

/** Sign-in by a link or a code in a mail: its asks, its verify routes, and the clean-up of what expired. */
export const mailSigninFeature = feature({
  name: 'mail-signin',
  mails: Object.values(mailSigninMails),
  migrations: { '2026-11-27-0023-mail-signin': createMailSignin },
  repositories: (db, { postgres }): MailSigninUnit => ({
    linkAsks: new ResetRequestsRepository(db, 'email-link'),
    codeAsks: new ResetRequestsRepository(db, 'email-code'),
    mailSignins: new MailSigninsRepository(db, { rowLocks: postgres }),
  }),
  build(
    kernel: Kernel<Config, MailSigninRepositories & MailSigninUnit & KernelUnit, unknown>,
    needs: { signin: SigninExports; mail: MailExports; users: UsersExports },
  ) {
    const { config } = kernel;
    const mailSignin = new MailSigninService({
      repositories: kernel.repositories,
      transaction: kernel.transaction,
      core: needs.signin.core,
      mail: needs.mail.mail,
      emailProven: needs.users.emailProven,
      policy: {
        ...config.passwordReset,
        createsAccounts: config.emailSigninCreatesAccounts,
        publicUrl: config.publicUrl,
      },
      now: kernel.now,
    });
    // Sign-in asks become mail in the delivery round, after forgot-password asks.
    needs.mail.beforeDelivery(() => mailSignin.processRequests());
    return { mailSignin };
  },
  routes: (app, { own, needs, guard, profile, config }) =>
    app.register(mailSigninRoutes, {
      mailSignin: own.mailSignin,
      core: needs.signin.core,
      guard,
      profile,
      metrics: needs.signin.metrics,
      redirects: { publicUrl: config.publicUrl, corsOrigins: config.corsOrigins },
      // For an email with no account yet: the language its mail (and the account) is made in.
      localeOf: (acceptLanguage) => needs.mail.mail.templates.localeFor(acceptLanguage),
    }),
  housekeeping: ({ mailSignin }) => mailSignin.purge(),
  pageTexts: mailSigninPageTexts,
});
