import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { signinFailureResponses, type WireProfile } from '../profiles/index.ts';
import type { Authenticator } from '../sessions/guard.ts';
import { SessionComponent, TOKEN_MAX } from '../sessions/index.ts';
import { component, success } from '../shared/schemas.ts';
import type { SigninCore } from '../signin/core.ts';
import type { SigninObservers } from '../signin/feature.ts';
import { signinAnswers } from '../signin/index.ts';
import type { AuthService } from './service.ts';

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

/** Password sign-in's own messages; the rest are the core's (signin/answers.ts). */
const MESSAGES = {
  400: 'The request body must be a JSON object with string fields email and password.',
  401: 'Email or password is incorrect.',
};

export interface AuthRoutesOptions {
  auth: AuthService;
  core: SigninCore;
  guard: Authenticator;
  profile: WireProfile;
  metrics: SigninObservers;
}

/** POST /api/sessions' answer; named per profile since it holds the profile's user. */
export const tokenSessionFor = (profile: WireProfile) =>
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

/** The components these routes add to the document, for the app to register. */
export const authComponents = (profile: WireProfile) => [tokenSessionFor(profile)];

export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (
  app,
  { auth, core, guard, profile, metrics },
) => {
  const answers = signinAnswers(app, {
    method: 'password',
    messages: MESSAGES,
    profile,
    guard,
    metrics,
    deviceTtlSeconds: core.deviceTtlSeconds,
  });
  /** The one sign-in both routes make; failures are thrown as SIGNIN_FAILED for the route's renderer. */
  const signIn = async (
    request: FastifyRequest,
    { email = '', password = '', code }: { email?: string; password?: string; code?: string },
    successStatus: 200 | 201,
  ) => {
    const client = {
      address: request.ip,
      deviceToken: guard.deviceToken(request),
      userAgent: request.headers['user-agent'],
    };
    return answers.settle(request, await auth.signIn({ email, password, code }, client), successStatus);
  };

  app.post(
    '/api/signin',
    {
      onResponse: answers.hooks.onResponse,
      onRequest: answers.hooks.watchHangUp,
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
      config: { renderError: answers.renderError, noStore: true },
    },
    async (request, reply) => answers.withCookie(request, reply, await signIn(request, request.body, 200)),
  );

  app.post(
    '/api/sessions',
    {
      onResponse: answers.hooks.onResponse,
      onRequest: answers.hooks.watchHangUp,
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
          ...signinFailureResponses(false),
        },
      },
      config: { renderError: answers.renderErrorWithMessage, noStore: true },
    },
    async (request, reply) => answers.withToken(reply, await signIn(request, request.body, 201)),
  );
};
