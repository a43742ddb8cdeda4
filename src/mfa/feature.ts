import type { Feature } from '../features.ts';
import { mfaRoutes, RecoveryCodesComponent, TotpSetupComponent } from './routes.ts';

export const mfaFeature: Feature = {
  name: 'mfa',
  routes: (app, { services }) => app.register(mfaRoutes, { totp: services.totp }),
  components: () => [TotpSetupComponent, RecoveryCodesComponent],
};
