import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import type { SessionsExports } from '../sessions/feature.ts';
import type { TotpExports, TotpUnit } from '../totp/feature.ts';
import type { UsersUnit } from '../users/feature.ts';
import { type CoreRepositories, SigninCore } from './core.ts';
import { SigninDevicesRepository } from './device-repository.ts';
import { SIGNIN_ERRORS } from './errors.ts';
import { GrantRepository } from './grant-repository.ts';
import { type SigninObservers, signinMetrics } from './metrics.ts';
import { createSigninTickets } from './migrations/2026-11-25-0014-signin-tickets.ts';
import { signinRoutes } from './routes.ts';
import { SigninThrottle } from './throttle.ts';
import { SigninAttemptsRepository } from './throttle-repository.ts';
import { SigninTicketsRepository } from './ticket-repository.ts';

export type { SigninObservers } from './metrics.ts';

export interface ThrottleUnit {
  attempts: SigninAttemptsRepository;
  /** The accounts' known devices, which follow an account's email key. */
  devices: SigninDevicesRepository;
}

export interface SigninUnit {
  signins: GrantRepository;
  tickets: SigninTicketsRepository;
}

/**
 * The sign-in throttle: failed attempts by account, address and device, shared by every way of
 * proving a password (sign-in, re-authentication, TOTP codes). Built before the features that
 * count attempts, and before the core, which takes the second factor from one of them.
 */
export const throttleFeature = feature({
  name: 'throttle',
  repositories: (db, { postgres }): ThrottleUnit => ({
    attempts: new SigninAttemptsRepository(db),
    devices: new SigninDevicesRepository(db, { rowLocks: postgres }),
  }),
  build(kernel: Kernel<Config, ThrottleUnit & KernelUnit, unknown>, _needs: unknown) {
    return {
      throttle: new SigninThrottle({
        attempts: kernel.repositories.attempts,
        devices: kernel.repositories.devices,
        policy: kernel.config.throttle,
        now: kernel.now,
      }),
    };
  },
  housekeeping: ({ throttle }) => throttle.purgeExpired(),
});

export type ThrottleExports = ExportsOf<typeof throttleFeature>;

/**
 * The sign-in core: the second step of a ticketed sign-in (its route and table), the sign-in
 * metrics every method counts with, and the clean-up of expired tickets.
 */
export const signinFeature = feature({
  name: 'signin',
  errors: SIGNIN_ERRORS,
  migrations: { '2026-11-25-0014-signin-tickets': createSigninTickets },
  repositories: (db, { postgres, sinks }): SigninUnit => ({
    signins: new GrantRepository(db, { postgres, sinks }),
    tickets: new SigninTicketsRepository(db),
  }),
  metrics: (registry) => signinMetrics(registry),
  build(
    kernel: Kernel<
      Config,
      CoreRepositories & SigninUnit & UsersUnit & TotpUnit & KernelUnit,
      SigninObservers
    >,
    needs: { throttle: ThrottleExports; sessions: SessionsExports; totp: TotpExports },
  ) {
    const { repositories } = kernel;
    const core = new SigninCore({
      throttle: needs.throttle.throttle,
      signins: repositories.signins,
      tickets: repositories.tickets,
      factorOf: (userId) => repositories.totp.find(userId),
      userById: async (userId) => repositories.users.findById(userId),
      sessions: needs.sessions.sessions,
      transaction: kernel.transaction,
      secondFactor: needs.totp.totp,
      requireVerifiedEmail: kernel.config.requireVerifiedEmail,
      now: kernel.now,
      journal: repositories.journal,
      userIdByAccount: async (account) => (await repositories.users.findByEmailKey(account))?.id,
    });
    /** What every sign-in route counts its attempts with (the sign-in metrics). */
    return { core, metrics: kernel.observe };
  },
  housekeeping: ({ core }) => core.purgeExpired(),
  routes: (app, { own, guard, profile }) =>
    app.register(signinRoutes, { core: own.core, guard, profile, metrics: own.metrics }),
});

export type SigninExports = ExportsOf<typeof signinFeature>;
