import { feature } from '../feature.ts';
import { RestSupportComponent, restRoutes } from './routes.ts';

/** Profile B's probe of SPEC 4.2; profile A serves no such route. */
export const restFeature = feature({
  name: 'rest',
  routes: async (app, { profile }) => {
    if (profile.serves.restProbe) await app.register(restRoutes);
  },
  components: () => [RestSupportComponent],
});
