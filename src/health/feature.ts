import { feature } from '../feature.ts';
import { HealthComponent, healthRoutes } from './routes.ts';

export const healthFeature = feature({
  name: 'health',
  routes: (app, { database, schema }) => app.register(healthRoutes, { database, schema }),
  components: () => [HealthComponent],
});
