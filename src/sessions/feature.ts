import type { Feature } from '../features.ts';
import { sessionsRoutes } from './routes.ts';
import { SessionComponent, SessionListItemComponent } from './schemas.ts';

export const sessionsFeature: Feature = {
  name: 'sessions',
  routes: (app, { services, guard }) => app.register(sessionsRoutes, { sessions: services.sessions, guard }),
  components: () => [SessionComponent, SessionListItemComponent],
  housekeeping: ({ sessions }) => sessions.purgeExpired(),
};
