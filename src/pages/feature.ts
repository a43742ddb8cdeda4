import type { Feature } from '../features.ts';
import { pagesRoutes } from './routes.ts';

export const pagesFeature: Feature = {
  name: 'pages',
  routes: (app, { pageTexts }) => app.register(pagesRoutes, { pageTexts }),
};
