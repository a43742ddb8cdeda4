import type { Feature } from '../features.ts';
import { RECOVERY_ERRORS } from './errors.ts';
import { AcceptedComponent, recoveryRoutes } from './routes.ts';

export const recoveryFeature: Feature = {
  name: 'recovery',
  errors: RECOVERY_ERRORS,
  routes: (app, { services, guard }) =>
    app.register(recoveryRoutes, {
      recovery: services.recovery,
      guard,
      deviceTtlSeconds: services.core.deviceTtlSeconds,
    }),
  components: () => [AcceptedComponent],
  housekeeping: ({ recovery }) => recovery.purge(),
};
