import type { Feature } from '../features.ts';
import { TOTP_ERRORS } from './errors.ts';
import { RecoveryCodesComponent, TotpSetupComponent, totpRoutes } from './routes.ts';

export const totpFeature: Feature = {
  name: 'totp',
  errors: TOTP_ERRORS,
  routes: (app, { services }) => app.register(totpRoutes, { totp: services.totp }),
  components: () => [TotpSetupComponent, RecoveryCodesComponent],
};
