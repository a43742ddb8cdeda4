import type { Feature } from '../features.ts';
import { recoveryPageTexts } from './page-texts.ts';
import { AcceptedComponent, recoveryRoutes } from './routes.ts';

export const recoveryFeature: Feature = {
  name: 'recovery',
  routes: (app, { services, guard }) =>
    app.register(recoveryRoutes, {
      recovery: services.recovery,
      guard,
      deviceTtlSeconds: services.core.deviceTtlSeconds,
    }),
  components: () => [AcceptedComponent],
  housekeeping: ({ recovery }) => recovery.purge(),
  pageTexts: recoveryPageTexts,
};
