import type { Feature } from '../features.ts';
import { catalogRoutes, ProductComponent, ReviewComponent } from './routes.ts';

export const catalogFeature: Feature = {
  name: 'catalog',
  routes: (app, { services }) => app.register(catalogRoutes, { catalog: services.catalog }),
  components: () => [ProductComponent, ReviewComponent],
};
