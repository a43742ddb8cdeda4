import type { Config } from '../config.ts';
import { feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { CATALOG_ERRORS } from './errors.ts';
import { CatalogRepository } from './repository.ts';
import { catalogRoutes, ProductComponent, ReviewComponent } from './routes.ts';
import { CatalogService } from './service.ts';

export interface CatalogUnit {
  catalog: CatalogRepository;
}

export const catalogFeature = feature({
  name: 'catalog',
  errors: CATALOG_ERRORS,
  repositories: (db, { postgres }): CatalogUnit => ({ catalog: new CatalogRepository(db, { postgres }) }),
  build(kernel: Kernel<Config, CatalogUnit & KernelUnit, unknown>, _needs: unknown) {
    return {
      catalog: new CatalogService({
        catalog: kernel.repositories.catalog,
        transaction: kernel.transaction,
        limits: kernel.config.catalog,
        now: kernel.now,
      }),
    };
  },
  routes: (app, { own }) => app.register(catalogRoutes, { catalog: own.catalog }),
  components: () => [ProductComponent, ReviewComponent],
});
