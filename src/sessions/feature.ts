import type { Feature } from '../features.ts';
import { addSessionMethods } from './migrations/2026-11-25-0016-session-methods.ts';
import { sessionsRoutes } from './routes.ts';
import { SessionComponent, SessionListItemComponent } from './schemas.ts';

export const sessionsFeature: Feature = {
  name: 'sessions',
  migrations: { '2026-11-25-0016-session-methods': addSessionMethods },
  routes: (app, { services, guard }) => app.register(sessionsRoutes, { sessions: services.sessions, guard }),
  components: () => [SessionComponent, SessionListItemComponent],
  housekeeping: ({ sessions }) => sessions.purgeExpired(),
};
