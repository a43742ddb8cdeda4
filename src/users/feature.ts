import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { EmailChangeLimits, RegistrationLimits } from '../kernel/limits.ts';
import { Reauthentication } from '../kernel/reauth.ts';
import type { MailExports } from '../mail/feature.ts';
import type { IdentitiesUnit } from '../oauth/feature.ts';
import type { PasskeysUnit } from '../passkeys/feature.ts';
import type { PasswordsExports } from '../passwords/feature.ts';
import type { ThrottleExports, ThrottleUnit } from '../signin/feature.ts';
import type { TotpUnit } from '../totp/feature.ts';
import { reportEmailKeyCollisions } from './collisions.ts';
import { EmailProven } from './email-proven.ts';
import { USERS_ERRORS } from './errors.ts';
import { usersMails } from './mails.ts';
import { addAccountRoles } from './migrations/2026-11-27-0018-account-roles.ts';
import { addUserLocale } from './migrations/2026-11-27-0022-user-locale.ts';
import { normaliseEmailKeys } from './migrations/2026-12-07-0028-email-keys.ts';
import { EmailProofsRepository } from './proof-repository.ts';
import { UsersRepository } from './repository.ts';
import { accountComponentFor, currentSessionFor, usersRoutes } from './routes.ts';
import { type AccountMethodReaders, type AccountRepositories, UsersService } from './service.ts';
import { emailKey } from './user.ts';

export interface UsersUnit {
  users: UsersRepository;
  /** Read by EmailProven alone (users/email-proven.ts, decision 343). */
  emailProofs: EmailProofsRepository;
}

export const usersFeature = feature({
  name: 'users',
  mails: Object.values(usersMails),
  errors: USERS_ERRORS,
  migrations: {
    '2026-11-27-0018-account-roles': addAccountRoles,
    '2026-11-27-0022-user-locale': addUserLocale,
    '2026-12-07-0028-email-keys': normaliseEmailKeys,
  },
  repositories: (db, { postgres, unit }): UsersUnit => ({
    users: new UsersRepository(db, {
      rowLocks: postgres,
      // The known devices of the same transaction (signin/): they follow the account's email key.
      devices: () => (unit() as ThrottleUnit).devices,
    }),
    emailProofs: new EmailProofsRepository(db),
  }),
  build(
    kernel: Kernel<
      Config,
      AccountRepositories & UsersUnit & TotpUnit & PasskeysUnit & IdentitiesUnit & KernelUnit,
      unknown
    >,
    needs: { passwords: PasswordsExports; mail: MailExports; throttle: ThrottleExports },
  ) {
    const { config, repositories, now } = kernel;
    const { passwords } = needs.passwords;
    const { throttle } = needs.throttle;
    const providers = new Map(config.oauth.providers.map((provider) => [provider.id, provider.name]));
    const emailProven = new EmailProven({
      accountMail: needs.mail.accountMail,
      providerName: (id) => providers.get(id) ?? id,
    });
    const reauth = new Reauthentication({
      users: repositories.users,
      attempts: throttle,
      passwords,
      now,
      accountKey: emailKey,
    });
    const limits = {
      registration: new RegistrationLimits({ policy: config.registration, events: repositories.limits, now }),
      emailChange: new EmailChangeLimits({ policy: config.emailChange, events: repositories.limits, now }),
    };
    // What an account's view says of its other sign-in methods: read from their features' repositories.
    const methods: AccountMethodReaders = {
      totpInForce: async (userId) => (await repositories.totp.find(userId))?.confirmed === true,
      passkeyCount: (userId) => repositories.passkeys.count(userId),
      identities: (userId) => repositories.identities.list(userId),
    };
    const users = new UsersService({
      users: repositories.users,
      passwords,
      transaction: kernel.transaction,
      accountMail: needs.mail.accountMail,
      mail: needs.mail.mail,
      attempts: throttle,
      reauth,
      limits,
      methods,
      emailProven,
    });
    return { users, emailProven, reauth, limits, methods };
  },
  routes: (app, { own, guard, profile, config }) =>
    app.register(usersRoutes, { users: own.users, guard, profile, lookup: config.userLookup }),
  components: (profile) => [profile.userComponent, currentSessionFor(profile), accountComponentFor(profile)],
  background: ({ own, schema, log }) => reportEmailKeyCollisions(own.users, schema, log),
  housekeeping: ({ limits }) => Promise.all([limits.registration.purge(), limits.emailChange.purge()]),
});

export type UsersExports = ExportsOf<typeof usersFeature>;
