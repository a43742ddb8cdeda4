import type { Feature } from '../features.ts';
import { signinRoutes } from './routes.ts';

/** The sign-in core's own route: the second step of a ticketed sign-in. */
export const signinFeature: Feature = {
  name: 'signin',
  routes: (app, { services, guard, profile, metrics }) =>
    app.register(signinRoutes, { core: services.core, guard, profile, metrics }),
};
