import type { Feature } from '../features.ts';
import { HealthComponent, healthRoutes } from './routes.ts';

export const healthFeature: Feature = {
  name: 'health',
  routes: (app, { database, schema }) => app.register(healthRoutes, { database, schema }),
  components: () => [HealthComponent],
};
