import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../shared/errors.ts';
import { failures, noContent, success } from '../shared/schemas.ts';
import { type Authenticator, currentSession } from './guard.ts';
import { SESSION_ID_PATTERN, SessionListItemComponent } from './schemas.ts';
import { SESSION_LIST_MAX, type SessionService } from './service.ts';

/** The caller's own sessions: listing and ending them. */
export interface SessionsRoutesOptions {
  sessions: SessionService;
  guard: Authenticator;
}

// A malformed id is answered exactly like an unknown one (config.notFound), not by a generic body.
const SessionIdParams = Type.Object({
  id: Type.String({
    pattern: SESSION_ID_PATTERN,
    maxLength: 32,
    description: 'A session id from GET /api/sessions (32 hex digits).',
  }),
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
        operationId: 'signOut',
        description: 'Idempotent: without a (valid) session it still clears the cookie and answers 204.',
        response: {
          204: noContent('Signed out; the session cookie is cleared.', 'Set-Cookie'),
          ...failures(['FORBIDDEN'], {
            notes: { FORBIDDEN: 'The session cookie was sent cross-site.' },
          }),
        },
      },
      config: { noStore: true },
    },
    async (request, reply) => {
      // Idempotent: signing out without a (valid) session still clears the cookie and answers 204.
      const session = await guard.session(request);
      if (session) await sessions.end(session);
      guard.clearCookie(request, reply);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/sessions',
    {
      schema: {
        summary: "Your live sessions, newest first ('current' marks this one)",
        operationId: 'listSessions',
        description: `The ${SESSION_LIST_MAX} newest at most: where you are signed in, to end the ones you do not recognise.`,
        response: {
          200: success(
            Type.Array(SessionListItemComponent.ref, { maxItems: SESSION_LIST_MAX }),
            'Your live sessions.',
          ),
          ...failures(['UNAUTHENTICATED']),
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
        operationId: 'endSession',
        description:
          "Ending the current one also clears its cookie. Another user's session is unknown (404).",
        params: SessionIdParams,
        response: {
          204: noContent('Ended.', 'Set-Cookie'),
          ...failures(['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND'], {
            notes: {
              FORBIDDEN: 'The session cookie was sent cross-site.',
              NOT_FOUND: 'You have no live session with that id.',
            },
          }),
        },
      },
      config: { auth: 'session', noStore: true, notFound: sessionNotFound },
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
        operationId: 'endOtherSessions',
        description: 'Signs you out everywhere else, for example after a device was lost.',
        response: {
          204: noContent('Ended.'),
          ...failures(['UNAUTHENTICATED', 'FORBIDDEN'], {
            notes: { FORBIDDEN: 'The session cookie was sent cross-site.' },
          }),
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
