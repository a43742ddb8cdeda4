import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { addSessionMethods } from './migrations/2026-11-25-0016-session-methods.ts';
import { SessionsRepository } from './repository.ts';
import { sessionsRoutes } from './routes.ts';
import { SessionComponent, SessionListItemComponent } from './schemas.ts';
import { SessionService } from './service.ts';

export interface SessionsUnit {
  sessions: SessionsRepository;
}

export const sessionsFeature = feature({
  name: 'sessions',
  migrations: { '2026-11-25-0016-session-methods': addSessionMethods },
  repositories: (db): SessionsUnit => ({ sessions: new SessionsRepository(db) }),
  build(kernel: Kernel<Config, SessionsUnit & KernelUnit, unknown>, _needs: unknown) {
    return {
      sessions: new SessionService({
        sessions: kernel.repositories.sessions,
        policy: kernel.config.session,
        now: kernel.now,
        transaction: kernel.transaction,
      }),
    };
  },
  routes: (app, { own, guard }) => app.register(sessionsRoutes, { sessions: own.sessions, guard }),
  components: () => [SessionComponent, SessionListItemComponent],
  housekeeping: ({ sessions }) => sessions.purgeExpired(),
});

export type SessionsExports = ExportsOf<typeof sessionsFeature>;
