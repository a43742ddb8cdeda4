import type { Feature } from '../features.ts';
import { RecoveryCodesComponent, TotpSetupComponent, totpRoutes } from './routes.ts';

export const totpFeature: Feature = {
  name: 'totp',
  routes: (app, { services }) => app.register(totpRoutes, { totp: services.totp }),
  components: () => [TotpSetupComponent, RecoveryCodesComponent],
};
