import { Type } from 'typebox';
import type { App } from '../shared/fastify.ts';
import { errorBody, SERVER_ERRORS } from '../shared/schemas.ts';
import type { Authenticator } from './guard.ts';
import type { SessionService } from './service.ts';

/** The caller's own session: ending it. */
export function sessionsRoutes(app: App, sessions: SessionService, guard: Authenticator): void {
  app.post(
    '/api/signout',
    {
      schema: {
        summary: 'End the current session (cookie or Bearer token)',
        response: { 204: Type.Null(), default: errorBody('FORBIDDEN', ...SERVER_ERRORS) },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      // Idempotent: signing out without a (valid) session still clears the cookie and answers 204.
      const session = await guard.session(request);
      if (session) await sessions.end(session.tokenHash);
      guard.clearCookie(request, reply);
      return reply.code(204).send(null);
    },
  );
}
