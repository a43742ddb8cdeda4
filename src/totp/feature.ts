import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import type { MailExports } from '../mail/feature.ts';
import type { PasswordsExports } from '../passwords/feature.ts';
import type { ThrottleExports } from '../signin/feature.ts';
import type { UsersUnit } from '../users/feature.ts';
import { TOTP_ERRORS } from './errors.ts';
import { totpMails } from './mails.ts';
import { TotpRepository } from './repository.ts';
import { RecoveryCodesComponent, TotpSetupComponent, totpRoutes } from './routes.ts';
import { type TotpRepositories, TotpService } from './service.ts';

export interface TotpUnit {
  totp: TotpRepository;
}

export const totpFeature = feature({
  name: 'totp',
  mails: Object.values(totpMails),
  errors: TOTP_ERRORS,
  repositories: (db, { postgres }): TotpUnit => ({ totp: new TotpRepository(db, { rowLocks: postgres }) }),
  build(
    kernel: Kernel<Config, TotpRepositories & UsersUnit & KernelUnit, unknown>,
    needs: { passwords: PasswordsExports; mail: MailExports; throttle: ThrottleExports },
  ) {
    const { repositories } = kernel;
    return {
      totp: new TotpService({
        totp: repositories.totp,
        users: repositories.users,
        passwords: needs.passwords.passwords,
        attempts: needs.throttle.throttle,
        transaction: kernel.transaction,
        accountMail: needs.mail.accountMail,
        mail: needs.mail.mail,
        key: kernel.sealingKey,
        now: kernel.now,
      }),
    };
  },
  routes: (app, { own }) => app.register(totpRoutes, { totp: own.totp }),
  components: () => [TotpSetupComponent, RecoveryCodesComponent],
});

export type TotpExports = ExportsOf<typeof totpFeature>;
