import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { Type } from 'typebox';
import { ReauthBody } from '../kernel/reauth.ts';
import { signinFailureResponses, type WireProfile } from '../profiles/index.ts';
import { type Authenticator, currentSession } from '../sessions/index.ts';
import { BODY_LIMITS } from '../shared/body-limits.ts';
import { AppError } from '../shared/errors.ts';
import {
  BODY_ERRORS,
  bodyOptional,
  component,
  failures,
  noContent,
  success,
  Timestamp,
} from '../shared/schemas.ts';
import { invalid } from '../shared/text.ts';
import type { SigninCore } from '../signin/core.ts';
import type { SigninObservers } from '../signin/feature.ts';
import { signinAnswers } from '../signin/index.ts';
import { checkName, NAME_MAX, toUser } from '../users/index.ts';
import { PASSKEY_LIST_MAX, type PasskeyService, RegistrationRefused } from './service.ts';

export interface PasskeyRoutesOptions {
  passkeys: PasskeyService;
  guard: Authenticator;
  profile: WireProfile;
  metrics: SigninObservers;
  core: Pick<SigninCore, 'deviceTtlSeconds'>;
}

const PASSKEY_ID = /^[0-9a-f]{32}$/;

export const PasskeyComponent = component(
  'Passkey',
  Type.Object(
    {
      id: Type.String({
        pattern: PASSKEY_ID.source,
        maxLength: 32,
        description: "The passkey's public id (32 hex digits), for DELETE; not the WebAuthn credential id.",
      }),
      name: Type.String({
        maxLength: NAME_MAX,
        description: 'A label chosen at registration ("Passkey" by default).',
      }),
      createdAt: Timestamp(),
    },
    { additionalProperties: false, description: 'One of your passkeys.' },
  ),
);
const PasskeySchema = PasskeyComponent.ref;

// The browser's JSON (base64url for binary fields). Loose on purpose: the WebAuthn library checks
// the content, and on sign-in every wrong credential must be the same 401, not a schema's 400.
const credentialSchema = (description: string) =>
  Type.Object(
    {
      // Bounds far above any real credential (ids are at most 1023 bytes).
      id: Type.Optional(Type.String({ maxLength: 2048, description: 'The credential id, base64url.' })),
      rawId: Type.Optional(Type.String({ maxLength: 2048, description: 'The same id, base64url.' })),
      type: Type.Optional(Type.String({ maxLength: 32, description: '"public-key"' })),
      response: Type.Optional(Type.Object({}, { additionalProperties: true })),
    },
    { additionalProperties: true, description },
  );

const OptionsSchema = (description: string) =>
  Type.Object(
    { challenge: Type.String({ maxLength: 128, pattern: '^[A-Za-z0-9_-]+$', description: 'base64url' }) },
    { additionalProperties: true, description },
  );

const RegisterBody = Type.Object(
  {
    credential: credentialSchema("The RegistrationResponseJSON of navigator.credentials.create()'s result."),
    name: Type.Optional(
      Type.String({
        maxLength: NAME_MAX,
        description: `1 to ${NAME_MAX} characters after trimming; "Passkey" if absent.`,
      }),
    ),
  },
  { additionalProperties: false },
);

const SigninBody = Type.Object(
  {
    credential: Type.Optional(
      credentialSchema("The AuthenticationResponseJSON of navigator.credentials.get()'s result."),
    ),
  },
  { additionalProperties: true },
);

const PasskeyIdParams = Type.Object({
  id: Type.String({
    pattern: PASSKEY_ID.source,
    maxLength: 32,
    description: 'A passkey id from GET /api/passkeys (32 hex digits).',
  }),
});

const view = (p: { id: string; name: string; createdAt: Date }) => ({
  id: p.id,
  name: p.name,
  createdAt: p.createdAt.toISOString(),
});

/** Passkey sign-in's own messages; the rest are the core's (signin/answers.ts). */
const MESSAGES = {
  400: 'The request body must be a JSON object with the credential in "credential".',
  401: 'The passkey could not be verified; ask for new options and try again.',
};

const CROSS_SITE = { FORBIDDEN: 'The session cookie was sent cross-site.' } as const;

const passkeyNotFound = () => new AppError('NOT_FOUND', 'You have no passkey with that id.');

export const passkeyRoutes: FastifyPluginAsyncTypebox<PasskeyRoutesOptions> = async (
  app,
  { passkeys, guard, profile, metrics, core },
) => {
  const answers = signinAnswers(app, {
    method: 'passkey',
    messages: MESSAGES,
    profile,
    guard,
    metrics,
    deviceTtlSeconds: core.deviceTtlSeconds,
  });

  app.post(
    '/api/passkeys/register/options',
    {
      schema: {
        summary: 'Options for navigator.credentials.create(): a new passkey for you',
        operationId: 'passkeyRegistrationOptions',
        description:
          'PublicKeyCredentialCreationOptions as JSON (binary fields base64url). The challenge is good once, for 5 minutes, on any instance; your passkeys are in excludeCredentials.',
        response: {
          200: success(OptionsSchema('PublicKeyCredentialCreationOptionsJSON'), 'The options.'),
          ...failures(['UNAUTHENTICATED', 'FORBIDDEN'], { notes: CROSS_SITE }),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => {
      const session = currentSession(request);
      return passkeys.registrationOptions(toUser(session.owner), session.createdAt);
    },
  );

  app.post(
    '/api/passkeys/register',
    {
      bodyLimit: BODY_LIMITS.account,
      schema: {
        summary: 'Register the passkey the browser created from the options',
        operationId: 'registerPasskey',
        description:
          'Needs a sign-in of the last 10 minutes; a notice is mailed to the account. A credential that does ' +
          'not verify against a live challenge is 400 VALIDATION_FAILED (`credential: …`).',
        body: RegisterBody,
        response: {
          201: success(PasskeySchema, 'Registered.'),
          ...failures(['UNAUTHENTICATED', 'FORBIDDEN', ...BODY_ERRORS], {
            notes: CROSS_SITE,
          }),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request, reply) => {
      const session = currentSession(request);
      const name = request.body.name === undefined ? undefined : checkName(request.body.name);
      try {
        const created = await passkeys.register(
          toUser(session.owner),
          session.createdAt,
          request.body.credential as unknown as RegistrationResponseJSON,
          name,
        );
        reply.code(201);
        return view(created);
      } catch (error) {
        if (error instanceof RegistrationRefused) throw invalid('credential', error.message);
        throw error;
      }
    },
  );

  app.get(
    '/api/passkeys',
    {
      schema: {
        summary: 'Your passkeys, oldest first',
        operationId: 'listPasskeys',
        description: `At most ${PASSKEY_LIST_MAX}.`,
        response: {
          200: success(Type.Array(PasskeySchema, { maxItems: PASSKEY_LIST_MAX }), 'Your passkeys.'),
          ...failures(['UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => (await passkeys.list(currentSession(request).userId)).map(view),
  );

  app.delete(
    '/api/passkeys/:id',
    {
      schema: {
        summary: 'Remove one of your passkeys: it cannot sign in any more',
        operationId: 'deletePasskey',
        description:
          "Another user's passkey is unknown (404). Needs a sign-in of the last 10 minutes or your present " +
          'password in `currentPassword` (the body is optional): otherwise 403 FORBIDDEN; a wrong one is 400 ' +
          'VALIDATION_FAILED (`currentPassword: …`) and counts in the sign-in throttle (429 SIGNIN_FAILED once ' +
          "it holds the account). A notice is mailed to the account's address.",
        params: PasskeyIdParams,
        body: ReauthBody,
        response: {
          204: noContent('Removed.'),
          ...failures(['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', ...BODY_ERRORS, ['SIGNIN_FAILED', 429]], {
            notes: {
              FORBIDDEN:
                'A cookie sent cross-site, or a sign-in over 10 minutes old without `currentPassword`.',
              NOT_FOUND: 'You have no passkey with that id.',
              SIGNIN_FAILED: 'Wrong present passwords (`currentPassword`) have throttled the account.',
            },
          }),
        },
      },
      preValidation: bodyOptional,
      config: { auth: 'session', noStore: true, notFound: passkeyNotFound },
    },
    async (request, reply) => {
      const { id } = request.params;
      // Another user's passkey is answered like an unknown one.
      if (
        !PASSKEY_ID.test(id) ||
        !(await passkeys.delete(currentSession(request), id, request.body.currentPassword, {
          address: request.ip,
        }))
      )
        throw passkeyNotFound();
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/signin/passkey/options',
    {
      schema: {
        summary: 'Options for navigator.credentials.get(): sign in with a passkey',
        operationId: 'passkeySigninOptions',
        description:
          'PublicKeyCredentialRequestOptions as JSON, with an empty allowCredentials (discoverable passkeys). The challenge is good once, for 5 minutes, on any instance. Each ask stores a challenge, so asks are limited per client address (PASSKEY_OPTIONS_MAX_PER_ADDRESS per 15 minutes; then 429 TOO_MANY_REQUESTS).',
        response: {
          200: success(OptionsSchema('PublicKeyCredentialRequestOptionsJSON'), 'The options.'),
          ...failures(['TOO_MANY_REQUESTS'], {
            notes: {
              TOO_MANY_REQUESTS:
                'Too many options asked from this client address (PASSKEY_OPTIONS_MAX_PER_ADDRESS, 100 per 15 minutes by default).',
            },
          }),
        },
      },
      config: { noStore: true },
    },
    async (request) => passkeys.signinOptions({ address: request.ip }),
  );

  app.post(
    '/api/signin/passkey',
    {
      onRequest: answers.hooks.watchHangUp,
      onResponse: answers.hooks.onResponse,
      schema: {
        summary: 'Sign in with a passkey',
        operationId: 'signInWithPasskey',
        description:
          "The success body and session cookie of POST /api/signin, in the profile's shape. Any credential that does not verify (unknown, deleted, wrong signature, used or expired challenge, a counter that did not grow) is 401 SIGNIN_FAILED. No TOTP code is asked: a passkey with user verification is two factors already.",
        body: SigninBody,
        response: {
          200: success(profile.signinSuccessSchema, 'Signed in; the session cookie is set.', 'Set-Cookie'),
          ...signinFailureResponses(profile.name === 'a', {
            SIGNIN_FAILED: {
              400: 'The body is not a JSON object with the credential in `credential`.',
              401: 'The credential does not verify: unknown, removed, a wrong signature, a used or expired challenge.',
              429: 'Too many failed sign-ins from this address (all methods count together); try again after Retry-After seconds.',
              503: 'The database does not answer.',
            },
          }),
        },
      },
      config: { renderError: answers.renderError, noStore: true },
    },
    async (request, reply) => {
      const credential = request.body.credential;
      if (credential === undefined) throw new AppError('SIGNIN_FAILED', MESSAGES[401], 401);
      const outcome = await passkeys.signIn(credential as unknown as AuthenticationResponseJSON, {
        address: request.ip,
        userAgent: request.headers['user-agent'],
      });
      return answers.withCookie(request, reply, answers.settle(request, outcome, 200));
    },
  );
};
