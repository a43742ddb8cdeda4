import { Type } from 'typebox';
import type { ErrorRenderer } from '../plugins/errors.ts';
import type { Metrics } from '../plugins/metrics.ts';
import type { WireProfile } from '../profiles/index.ts';
import type { Authenticator } from '../sessions/guard.ts';
import type { SessionService } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import type { App } from '../shared/fastify.ts';
import { errorBody, SERVER_ERRORS } from '../shared/schemas.ts';
import type { AuthService } from './service.ts';

// Unused fields are ignored (CONTRACT), but a field that is there must be a string: no coercion.
const SigninBody = Type.Object(
  {
    email: Type.Optional(Type.String({ description: 'Absent counts as an empty string.' })),
    password: Type.Optional(
      Type.String({ description: 'Absent counts as an empty string.', writeOnly: true }),
    ),
  },
  { additionalProperties: true },
);

/** One message per kind of failure; none of them says whether the email has an account. */
function signinMessage(statusCode: number): string {
  if (statusCode === 401) return 'Email or password is incorrect.';
  if (statusCode === 429) return 'Too many sign-in attempts; try again later.';
  if (statusCode >= 500) return 'Sign-in is unavailable right now; try again later.';
  return 'The request body must be a JSON object with string fields email and password.';
}

export function authRoutes(
  app: App,
  auth: AuthService,
  sessions: SessionService,
  guard: Authenticator,
  profile: WireProfile,
  metrics: Pick<Metrics, 'signin'>,
): void {
  // Every failure on this route, whatever raised it, is SIGNIN_FAILED in the profile's shape.
  const renderError: ErrorRenderer = (f, request) => {
    // Attempts the handler never saw (unreadable bodies, outages) are counted and logged here.
    if (f.statusCode !== 401 && f.statusCode !== 429) {
      const outcome = f.statusCode >= 500 ? 'unavailable' : 'invalid';
      metrics.signin(outcome);
      request.log.info(
        { event: 'signin', outcome, status: f.statusCode, address: request.ip },
        'sign-in attempt',
      );
    }
    return { statusCode: f.statusCode, body: profile.signinFailure(signinMessage(f.statusCode)) };
  };

  app.post(
    '/api/signin',
    {
      schema: {
        summary: 'Sign in with email and password',
        body: SigninBody,
        response: { 200: profile.signinSuccessSchema, default: profile.signinFailureSchema },
      },
      config: { renderError, noStore: true },
    },
    async (request, reply) => {
      const { email = '', password = '' } = request.body;
      const outcome = await auth.signIn(email, password, request.ip);
      metrics.signin(outcome.ok ? 'success' : outcome.reason === 'throttled' ? 'throttled' : 'failure');
      request.log.info(
        {
          event: 'signin',
          outcome: outcome.ok ? 'success' : outcome.reason === 'throttled' ? 'throttled' : 'failure',
          userId: outcome.ok
            ? String(outcome.user.id)
            : outcome.reason === 'credentials' && outcome.userId
              ? String(outcome.userId)
              : undefined,
          address: request.ip,
        },
        'sign-in attempt',
      );
      if (!outcome.ok) {
        if (outcome.reason === 'throttled') {
          throw new AppError('SIGNIN_FAILED', signinMessage(429), 429, {
            'retry-after': String(outcome.retryAfterSeconds),
          });
        }
        throw new AppError('SIGNIN_FAILED', signinMessage(401));
      }
      // The documented body is unchanged; the session rides in the cookie (or is read back as a
      // Bearer token by clients that cannot keep cookies).
      guard.setCookie(request, reply, outcome.token);
      return profile.signinSuccess(outcome.user);
    },
  );

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
