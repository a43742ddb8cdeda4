import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ErrorRenderer } from '../plugins/errors.ts';
import type { Metrics } from '../plugins/metrics.ts';
import { SIGNIN_NOTES, type WireProfile } from '../profiles/index.ts';
import { type Authenticator, currentSession, DEVICE_HEADER } from '../sessions/guard.ts';
import { SessionComponent, sessionBody, TOKEN_MAX } from '../sessions/schemas.ts';
import { AppError } from '../shared/errors.ts';
import { component, failures, success } from '../shared/schemas.ts';
import { decorateSigninRequests, signinAudit, signinFailureStatus } from './audit.ts';
import type { AuthService, SigninOutcome } from './service.ts';

// Unused fields are ignored (CONTRACT), but a field that is there must be a string: no coercion.
const credentialFields = {
  email: Type.Optional(Type.String({ description: 'Absent counts as an empty string.' })),
  password: Type.Optional(Type.String({ description: 'Absent counts as an empty string.', writeOnly: true })),
  code: Type.Optional(
    Type.String({
      description:
        'For accounts with two-step sign-in: a current 6-digit TOTP code or one unused recovery code. ' +
        'Without a good one, the right password is answered 401 with `Usher-Second-Factor: totp`.',
      writeOnly: true,
    }),
  ),
};
const SigninBody = Type.Object(credentialFields, { additionalProperties: true });
/** The device token, for clients without cookies (browsers send the device cookie instead). */
const SigninHeaders = Type.Object({
  'usher-device': Type.Optional(
    Type.String({
      // The 16 KiB header limit stops anything longer; a value of the wrong form is ignored, not refused.
      maxLength: 16_384,
      description:
        'The device token an earlier sign-in of this client to the account handed out (`Usher-Device` response ' +
        "header of POST /api/sessions): the attempt is then judged by this client's own failures. Ignored when " +
        'it is not one the account knows.',
    }),
  ),
});
const TokenSigninBody = SigninBody;

/** Names the factor a sign-in still needs; only sent once the password was right. */
export const SECOND_FACTOR_HEADER = 'usher-second-factor';
const SECOND_FACTOR_MESSAGE =
  'A code is needed: send a current code from your authenticator app, or a recovery code, in `code`.';

/** One message per kind of failure; none of them says whether the email has an account. */
function signinMessage(statusCode: number, headers: Readonly<Record<string, string>> = {}): string {
  if (headers[SECOND_FACTOR_HEADER] !== undefined) return SECOND_FACTOR_MESSAGE;
  if (statusCode === 401) return 'Email or password is incorrect.';
  if (statusCode === 429) return 'Too many sign-in attempts; try again later.';
  if (statusCode === 403) return 'Confirm your email address first: follow the link in the mail we sent you.';
  if (statusCode === 413) return 'The request body is larger than a sign-in needs.';
  if (statusCode === 415) return 'The request body must be JSON (Content-Type: application/json).';
  if (statusCode >= 500) return 'Sign-in is unavailable right now; try again later.';
  return 'The request body must be a JSON object with string fields email and password.';
}

export interface AuthRoutesOptions {
  auth: AuthService;
  guard: Authenticator;
  profile: WireProfile;
  metrics: Pick<Metrics, 'signin' | 'signedIn'>;
}

type Success = Extract<SigninOutcome, { ok: true }>;

/** POST /api/sessions' answer; named per profile since it holds the profile's user. */
const tokenSessionFor = (profile: WireProfile) =>
  component(
    'TokenSession',
    Type.Object(
      {
        token: Type.String({
          maxLength: TOKEN_MAX,
          pattern: '^[A-Za-z0-9_-]+$',
          description: 'The session token, for `Authorization: Bearer …`; shown this once.',
        }),
        session: SessionComponent.ref,
        user: profile.userSchema,
      },
      { additionalProperties: false, description: 'A session started for a client without cookies.' },
    ),
  );

/** GET /api/session's answer. */
const currentSessionFor = (profile: WireProfile) =>
  component(
    'CurrentSession',
    Type.Object(
      { user: profile.userSchema, session: SessionComponent.ref },
      { additionalProperties: false, description: 'Who is signed in, and the session making the request.' },
    ),
  );

/** The components these routes add to the document, for the app to register. */
export const authComponents = (profile: WireProfile) => [
  tokenSessionFor(profile),
  currentSessionFor(profile),
];

export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (
  app,
  { auth, guard, profile, metrics },
) => {
  decorateSigninRequests(app);
  const audit = signinAudit(metrics);

  /**
   * The one sign-in both routes make: the same checks, throttle and session, whatever the route
   * then does with it. Failures are thrown as SIGNIN_FAILED for the route's renderer to shape.
   */
  const signIn = async (
    request: FastifyRequest,
    body: { email?: string | undefined; password?: string | undefined; code?: string | undefined },
    successStatus: number,
  ): Promise<Success> => {
    const { email = '', password = '', code } = body;
    const outcome = await auth.signIn({
      email,
      password,
      code,
      address: request.ip,
      deviceToken: guard.deviceToken(request),
      userAgent: request.headers['user-agent'],
    });
    if (outcome.ok) {
      request.signinUserId = outcome.user.id;
      request.signinMethod = outcome.method;
    } else if (outcome.reason !== 'throttled') request.signinUserId = outcome.userId ?? null;
    // Judged: recorded now, whether or not the client is still there for the answer.
    audit.record(request, outcome.ok ? successStatus : signinFailureStatus(outcome.reason));
    if (!outcome.ok) {
      if (outcome.reason === 'throttled') {
        throw new AppError('SIGNIN_FAILED', signinMessage(429), 429, {
          'retry-after': String(outcome.retryAfterSeconds),
        });
      }
      if (outcome.reason === 'unverified') throw new AppError('SIGNIN_FAILED', signinMessage(403), 403);
      if (outcome.reason === 'second-factor') {
        throw new AppError('SIGNIN_FAILED', SECOND_FACTOR_MESSAGE, 401, { [SECOND_FACTOR_HEADER]: 'totp' });
      }
      throw new AppError('SIGNIN_FAILED', signinMessage(401));
    }
    return outcome;
  };

  // Every failure on /api/signin, whatever raised it, is SIGNIN_FAILED in the profile's shape.
  const renderSigninError: ErrorRenderer = (f) => ({
    statusCode: f.statusCode,
    body: profile.signinFailure(signinMessage(f.statusCode, f.headers)),
  });
  // POST /api/sessions is not a documented endpoint: its failures carry a message in both profiles.
  const failuresWithMessage = failures(
    [400, 401, 403, 413, 415, 429, 500, 503].map((status) => ['SIGNIN_FAILED', status] as const),
    {
      everyRoute: false,
      headers: { 401: ['Usher-Second-Factor'] },
      notes: SIGNIN_NOTES,
    },
  );
  const renderTokenSigninError: ErrorRenderer = (f) => ({
    statusCode: f.statusCode,
    body: { error: 'SIGNIN_FAILED', message: signinMessage(f.statusCode, f.headers) },
  });

  app.post(
    '/api/signin',
    {
      onResponse: audit.onResponse,
      onRequest: audit.watchHangUp,
      schema: {
        summary: 'Sign in with email and password',
        operationId: 'signIn',
        description:
          'Checks the credentials (and a TOTP code for accounts with two-step sign-in) and starts a session ' +
          'held in an HttpOnly cookie; the body is the documented one (SPEC 4.1). Attempts are throttled per ' +
          'account and per client address.',
        body: SigninBody,
        headers: SigninHeaders,
        response: {
          200: success(profile.signinSuccessSchema, 'Signed in; the session cookie is set.', 'Set-Cookie'),
          ...profile.signinFailures,
        },
      },
      config: { renderError: renderSigninError, noStore: true },
    },
    async (request, reply) => {
      const { user, started, deviceToken } = await signIn(request, request.body, 200);
      // The documented body is unchanged; the session rides in the cookie (or is read back as a
      // Bearer token by clients that cannot keep cookies).
      guard.setCookie(request, reply, started.token);
      if (deviceToken) guard.setDeviceCookie(request, reply, deviceToken, auth.deviceTtlSeconds);
      return profile.signinSuccess(user);
    },
  );

  app.post(
    '/api/sessions',
    {
      onResponse: audit.onResponse,
      onRequest: audit.watchHangUp,
      schema: {
        summary: 'Sign in for a token, without a cookie (apps, servers, the docs page)',
        operationId: 'createSession',
        description:
          'The same checks and throttle as POST /api/signin. The token goes in `Authorization: Bearer …`; ' +
          'no cookie is set. Failures are SIGNIN_FAILED with a message, in both profiles.',
        body: TokenSigninBody,
        headers: SigninHeaders,
        response: {
          201: success(
            tokenSessionFor(profile).ref,
            'Signed in: the token, the session and the user.',
            'Usher-Device',
          ),
          ...failuresWithMessage,
        },
      },
      config: { renderError: renderTokenSigninError, noStore: true },
    },
    async (request, reply) => {
      const { user, started, deviceToken } = await signIn(request, request.body, 201);
      // No cookie here: the client keeps the device token and sends it back in the same header.
      if (deviceToken) reply.header(DEVICE_HEADER, deviceToken);
      reply.code(201);
      return { token: started.token, session: sessionBody(started.session), user: profile.user(user) };
    },
  );

  app.get(
    '/api/session',
    {
      schema: {
        summary: 'Who is signed in: the user and the session making the request',
        operationId: 'getCurrentSession',
        description:
          'The user and session behind the cookie or Bearer token; a page view of a signed-in user.',
        response: {
          200: success(currentSessionFor(profile).ref, 'The signed-in user and this session.'),
          ...failures(['UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    // Not async: the session check has run, so the answer goes out in this turn (no promise).
    (request) => {
      const session = currentSession(request);
      return { user: profile.user(auth.signedInUser(session)), session: sessionBody(session) };
    },
  );
};
