import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../shared/errors.ts';
import { errorBody, SERVER_ERRORS } from '../shared/schemas.ts';
import { type Authenticator, currentSession } from './guard.ts';
import { SESSION_ID_PATTERN, SessionListItemSchema } from './schemas.ts';
import type { SessionService } from './service.ts';

/** The caller's own sessions: listing and ending them. */
export interface SessionsRoutesOptions {
  sessions: SessionService;
  guard: Authenticator;
}

// No pattern here: a malformed id is answered in the handler exactly like an unknown one, rather
// than by the schema's generic not-found body.
const SessionIdParams = Type.Object({
  id: Type.String({ description: 'A session id from GET /api/sessions (32 hex digits).' }),
});
const SESSION_ID = new RegExp(SESSION_ID_PATTERN);

// Another user's session is answered like an unknown one, so a caller cannot learn which ids
// exist (or that anyone else is signed in).
const sessionNotFound = () => new AppError('NOT_FOUND', 'You have no session with that id.');

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

  app.get(
    '/api/sessions',
    {
      schema: {
        summary: "Your live sessions, newest first ('current' marks this one)",
        response: {
          200: Type.Array(SessionListItemSchema),
          default: errorBody('UNAUTHENTICATED', ...SERVER_ERRORS),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) =>
      (await sessions.list(currentSession(request))).map((s) => ({
        id: s.id,
        createdAt: s.createdAt.toISOString(),
        lastSeenAt: s.lastSeenAt.toISOString(),
        expiresAt: s.expiresAt.toISOString(),
        current: s.current,
        userAgent: s.userAgent,
      })),
  );

  app.delete(
    '/api/sessions/:id',
    {
      schema: {
        summary: 'End one of your sessions (on every instance at once)',
        params: SessionIdParams,
        response: {
          204: Type.Null(),
          default: errorBody('UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', ...SERVER_ERRORS),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      const session = currentSession(request);
      const { id } = request.params;
      if (!SESSION_ID.test(id) || !(await sessions.endById(session, id))) throw sessionNotFound();
      if (id === session.id) guard.clearCookie(request, reply);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/sessions',
    {
      schema: {
        summary: 'End all your sessions but this one',
        response: {
          204: Type.Null(),
          default: errorBody('UNAUTHENTICATED', 'FORBIDDEN', ...SERVER_ERRORS),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      await sessions.endOthers(currentSession(request));
      return reply.code(204).send(null);
    },
  );
};
