import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import type { MailExports } from '../mail/feature.ts';
import type { PasswordsExports } from '../passwords/feature.ts';
import type { SigninExports, ThrottleExports } from '../signin/feature.ts';
import type { UsersExports } from '../users/feature.ts';
import { RECOVERY_ERRORS } from './errors.ts';
import { recoveryMails } from './mails.ts';
import { recoveryPageTexts } from './page-texts.ts';
import { ResetRequestsRepository } from './repository.ts';
import { AcceptedComponent, recoveryRoutes } from './routes.ts';
import { type RecoveryRepositories, RecoveryService } from './service.ts';

export interface RecoveryUnit {
  /** Forgot-password asks, sent in the background (recovery/asks.ts). */
  requests: ResetRequestsRepository;
}

export const recoveryFeature = feature({
  name: 'recovery',
  mails: Object.values(recoveryMails),
  errors: RECOVERY_ERRORS,
  repositories: (db): RecoveryUnit => ({ requests: new ResetRequestsRepository(db) }),
  build(
    kernel: Kernel<Config, RecoveryRepositories & RecoveryUnit & KernelUnit, unknown>,
    needs: {
      passwords: PasswordsExports;
      throttle: ThrottleExports;
      mail: MailExports;
      users: UsersExports;
      signin: SigninExports;
    },
  ) {
    const recovery = new RecoveryService({
      repositories: kernel.repositories,
      transaction: kernel.transaction,
      passwords: needs.passwords.passwords,
      throttle: needs.throttle.throttle,
      accountMail: needs.mail.accountMail,
      mail: needs.mail.mail,
      emailProven: needs.users.emailProven,
      policy: kernel.config.passwordReset,
      now: kernel.now,
    });
    // Forgot-password asks become mail in the delivery round, before what is due is sent.
    needs.mail.beforeDelivery(() => recovery.processRequests());
    return { recovery };
  },
  routes: (app, { own, needs, guard }) =>
    app.register(recoveryRoutes, {
      recovery: own.recovery,
      guard,
      deviceTtlSeconds: needs.signin.core.deviceTtlSeconds,
    }),
  components: () => [AcceptedComponent],
  housekeeping: ({ recovery }) => recovery.purge(),
  pageTexts: recoveryPageTexts,
});

/** The asks' repository, which mail sign-in keeps its own asks in (another kind). */
export { ResetRequestsRepository } from './repository.ts';

export type RecoveryExports = ExportsOf<typeof recoveryFeature>;
