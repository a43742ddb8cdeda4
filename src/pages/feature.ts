import { feature } from '../feature.ts';
import { pagesRoutes } from './routes.ts';

export const pagesFeature = feature({
  name: 'pages',
  routes: (app, { pageTexts }) => app.register(pagesRoutes, { pageTexts }),
});
