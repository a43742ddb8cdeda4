import type { Feature } from '../features.ts';
import { PasskeyComponent, passkeyRoutes } from './routes.ts';

export const passkeysFeature: Feature = {
  name: 'passkeys',
  routes: (app, { services, guard, profile, metrics }) =>
    app.register(passkeyRoutes, {
      passkeys: services.passkeys,
      core: services.core,
      guard,
      profile,
      metrics,
    }),
  components: () => [PasskeyComponent],
  housekeeping: ({ passkeys, limits }) =>
    Promise.all([passkeys.purgeExpired(), limits.passkeyOptions.purge()]),
};
