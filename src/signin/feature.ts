import type { Feature } from '../features.ts';
import { createSigninTickets } from './migrations/2026-11-25-0014-signin-tickets.ts';
import { signinRoutes } from './routes.ts';

/** The sign-in core's own route: the second step of a ticketed sign-in. */
export const signinFeature: Feature = {
  name: 'signin',
  migrations: { '2026-11-25-0014-signin-tickets': createSigninTickets },
  routes: (app, { services, guard, profile, metrics }) =>
    app.register(signinRoutes, { core: services.core, guard, profile, metrics }),
};
