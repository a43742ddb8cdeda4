import type { Feature } from '../features.ts';
import { currentSessionFor, sessionsRoutes } from './routes.ts';
import { SessionComponent, SessionListItemComponent } from './schemas.ts';

export const sessionsFeature: Feature = {
  name: 'sessions',
  routes: (app, { services, guard, profile }) =>
    app.register(sessionsRoutes, { sessions: services.sessions, guard, users: profile }),
  components: (profile) => [SessionComponent, SessionListItemComponent, currentSessionFor(profile)],
  housekeeping: ({ sessions }) => sessions.purgeExpired(),
};
