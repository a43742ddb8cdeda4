import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errorBody, SERVER_ERRORS } from '../shared/schemas.ts';
import type { Authenticator } from './guard.ts';
import type { SessionService } from './service.ts';

/** The caller's own session: ending it. */
export interface SessionsRoutesOptions {
  sessions: SessionService;
  guard: Authenticator;
}

export const sessionsRoutes: FastifyPluginAsyncTypebox<SessionsRoutesOptions> = async (
  app,
  { sessions, guard },
) => {
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
};
