import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ErrorRenderer } from '../plugins/errors.ts';
import type { Metrics, SigninOutcomeLabel } from '../plugins/metrics.ts';
import type { WireProfile } from '../profiles/index.ts';
import type { Authenticator } from '../sessions/guard.ts';
import { AppError } from '../shared/errors.ts';
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
  if (statusCode === 403) return 'Confirm your email address first: follow the link in the mail we sent you.';
  if (statusCode >= 500) return 'Sign-in is unavailable right now; try again later.';
  return 'The request body must be a JSON object with string fields email and password.';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The account a sign-in attempt was about, when it has one: for the audit line. */
    signinUserId: bigint | null;
  }
}

/** The audit label of a sign-in attempt, from how it was answered. */
function outcomeOf(statusCode: number): SigninOutcomeLabel {
  if (statusCode === 200 || statusCode === 201) return 'success';
  if (statusCode === 401) return 'failure';
  if (statusCode === 429) return 'throttled';
  if (statusCode === 403) return 'unverified';
  return statusCode >= 500 ? 'unavailable' : 'invalid';
}

export interface AuthRoutesOptions {
  auth: AuthService;
  guard: Authenticator;
  profile: WireProfile;
  metrics: Pick<Metrics, 'signin'>;
}

export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (
  app,
  { auth, guard, profile, metrics },
) => {
  app.decorateRequest('signinUserId', null);

  // Every attempt, however it ended (judged, throttled, unreadable, the database down), gets one
  // metric and one audit line here, once it has been answered.
  const audit = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const outcome = outcomeOf(reply.statusCode);
    metrics.signin(outcome);
    request.log.info(
      {
        event: 'signin',
        outcome,
        status: reply.statusCode,
        userId: request.signinUserId === null ? undefined : String(request.signinUserId),
        address: request.ip,
      },
      'sign-in attempt',
    );
    done();
  };

  // Every failure on this route, whatever raised it, is SIGNIN_FAILED in the profile's shape.
  const renderError: ErrorRenderer = (f) => ({
    statusCode: f.statusCode,
    body: profile.signinFailure(signinMessage(f.statusCode)),
  });

  app.post(
    '/api/signin',
    {
      onResponse: audit,
      schema: {
        summary: 'Sign in with email and password',
        body: SigninBody,
        response: { 200: profile.signinSuccessSchema, default: profile.signinFailureSchema },
      },
      config: { renderError, noStore: true },
    },
    async (request, reply) => {
      const { email = '', password = '' } = request.body;
      const outcome = await auth.signIn({
        email,
        password,
        address: request.ip,
        userAgent: request.headers['user-agent'],
      });
      if (outcome.ok) request.signinUserId = outcome.user.id;
      else if (outcome.reason !== 'throttled') request.signinUserId = outcome.userId ?? null;
      if (!outcome.ok) {
        if (outcome.reason === 'throttled') {
          throw new AppError('SIGNIN_FAILED', signinMessage(429), 429, {
            'retry-after': String(outcome.retryAfterSeconds),
          });
        }
        if (outcome.reason === 'unverified') throw new AppError('SIGNIN_FAILED', signinMessage(403), 403);
        throw new AppError('SIGNIN_FAILED', signinMessage(401));
      }
      // The documented body is unchanged; the session rides in the cookie (or is read back as a
      // Bearer token by clients that cannot keep cookies).
      guard.setCookie(request, reply, outcome.started.token);
      return profile.signinSuccess(outcome.user);
    },
  );
};
