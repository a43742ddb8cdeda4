import type { Feature } from '../features.ts';
import { SIGNIN_ERRORS } from './errors.ts';
import { signinMetrics } from './metrics.ts';
import { createSigninTickets } from './migrations/2026-11-25-0014-signin-tickets.ts';
import { signinRoutes } from './routes.ts';

/**
 * The sign-in core: the second step of a ticketed sign-in (its route and table), the sign-in
 * metrics every method counts with, and the clean-up of expired tickets and attempts.
 */
export const signinFeature: Feature = {
  name: 'signin',
  errors: SIGNIN_ERRORS,
  migrations: { '2026-11-25-0014-signin-tickets': createSigninTickets },
  metrics: signinMetrics,
  housekeeping: ({ core, throttle }) => Promise.all([core.purgeExpired(), throttle.purgeExpired()]),
  routes: (app, { services, guard, profile, metrics }) =>
    app.register(signinRoutes, { core: services.core, guard, profile, metrics }),
};
