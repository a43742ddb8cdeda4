import type { Feature } from '../features.ts';
import { CATALOG_ERRORS } from './errors.ts';
import { catalogRoutes, ProductComponent, ReviewComponent } from './routes.ts';

export const catalogFeature: Feature = {
  name: 'catalog',
  errors: CATALOG_ERRORS,
  routes: (app, { services }) => app.register(catalogRoutes, { catalog: services.catalog }),
  components: () => [ProductComponent, ReviewComponent],
};
