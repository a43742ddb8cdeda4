import type { Feature } from '../features.ts';
import { authComponents, authRoutes } from './routes.ts';

/** Password sign-in: POST /api/signin (the documented one) and POST /api/sessions (a token). */
export const authFeature: Feature = {
  name: 'auth',
  routes: (app, { services, guard, profile, metrics }) =>
    app.register(authRoutes, { auth: services.auth, core: services.core, guard, profile, metrics }),
  components: (profile) => [
    ...(profile.signinSuccessComponent ? [profile.signinSuccessComponent] : []),
    ...authComponents(profile),
  ],
};
