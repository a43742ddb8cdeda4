import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { AddressLimits } from '../kernel/limits.ts';
import type { MailExports } from '../mail/feature.ts';
import type { SigninExports } from '../signin/feature.ts';
import type { UsersExports, UsersUnit } from '../users/feature.ts';
import { passkeysMails } from './mails.ts';
import { PasskeysRepository } from './repository.ts';
import { PasskeyComponent, passkeyRoutes } from './routes.ts';
import { PasskeyService, type PasskeyTransactionRepositories, relyingParty } from './service.ts';

export interface PasskeysUnit {
  passkeys: PasskeysRepository;
}

export const passkeysFeature = feature({
  name: 'passkeys',
  mails: Object.values(passkeysMails),
  repositories: (db, { postgres }): PasskeysUnit => ({
    passkeys: new PasskeysRepository(db, { rowLocks: postgres }),
  }),
  build(
    kernel: Kernel<Config, PasskeyTransactionRepositories & PasskeysUnit & UsersUnit & KernelUnit, unknown>,
    needs: { signin: SigninExports; mail: MailExports; users: UsersExports },
  ) {
    const { config, repositories, now } = kernel;
    const optionsLimit = new AddressLimits({
      policy: config.passkeyOptions,
      events: repositories.limits,
      now,
      scope: 'passkey-options',
      message: 'Too many passkey sign-in options asked from this address; try again later.',
    });
    const passkeys = new PasskeyService({
      passkeys: repositories.passkeys,
      users: repositories.users,
      core: needs.signin.core,
      transaction: kernel.transaction,
      accountMail: needs.mail.accountMail,
      mail: needs.mail.mail,
      reauth: needs.users.reauth,
      relyingParty: relyingParty(config.publicUrl),
      optionsLimit,
      now,
    });
    return { passkeys, optionsLimit };
  },
  routes: (app, { own, needs, guard, profile }) =>
    app.register(passkeyRoutes, {
      passkeys: own.passkeys,
      core: needs.signin.core,
      guard,
      profile,
      metrics: needs.signin.metrics,
    }),
  components: () => [PasskeyComponent],
  housekeeping: ({ passkeys, optionsLimit }) => Promise.all([passkeys.purgeExpired(), optionsLimit.purge()]),
});

export type PasskeysExports = ExportsOf<typeof passkeysFeature>;
