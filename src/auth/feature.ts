import type { Feature } from '../features.ts';
import { authComponents, authRoutes } from './routes.ts';

/** Password sign-in (POST /api/signin, POST /api/sessions) and who is signed in (GET /api/session). */
export const authFeature: Feature = {
  name: 'auth',
  routes: (app, { services, guard, profile, metrics }) =>
    app.register(authRoutes, { auth: services.auth, core: services.core, guard, profile, metrics }),
  components: (profile) => [
    ...(profile.signinSuccessComponent ? [profile.signinSuccessComponent] : []),
    ...authComponents(profile),
  ],
};
