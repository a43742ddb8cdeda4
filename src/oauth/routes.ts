import { fastifyCookie } from '@fastify/cookie';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { tokenSessionFor } from '../auth/index.ts';
import type { Config } from '../config.ts';
import { safeRedirect } from '../kernel/redirects.ts';
import type { WireProfile } from '../profiles/index.ts';
import { signinFailureResponses } from '../profiles/index.ts';
import { type Authenticator, currentSession } from '../sessions/index.ts';
import type { ActiveSession } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import { PROVIDER_ID } from '../shared/ids.ts';
import { failures, noContent, success } from '../shared/schemas.ts';
import { invalid } from '../shared/text.ts';
import type { SigninCore } from '../signin/core.ts';
import type { SigninObservers } from '../signin/feature.ts';
import { signinAnswers } from '../signin/index.ts';
import { IDENTITY_ID, IdentitySchema, identityView, toUser } from '../users/index.ts';
import type { Provider } from './providers.ts';
import { OAuthRefusal, type OAuthService, STATE_TTL_MS } from './service.ts';

export interface OAuthRoutesOptions {
  oauth: OAuthService;
  guard: Authenticator;
  profile: WireProfile;
  metrics: SigninObservers;
  core: Pick<SigninCore, 'deviceTtlSeconds'>;
  config: Pick<Config, 'publicUrl' | 'corsOrigins' | 'session'>;
}

/** The cookie that binds a sign-in under way to the browser that started it. */
export const BINDING_COOKIE = 'usher_oauth';
const BINDING_PATH = '/api/oauth';

const ProviderParams = Type.Object({
  provider: Type.String({ maxLength: 32, description: 'A provider id from GET /api/oauth/providers.' }),
});

/** The native route's own messages; the rest are the core's (signin/answers.ts). */
const MESSAGES = {
  400: 'The request body must be a JSON object with string fields provider (the id of a configured OpenID Connect provider) and idToken (nonce and code optional).',
  401: 'The ID token does not check out: its signature, issuer, audience, expiry or nonce.',
};

/** The native route's refusals (no person is at a provider there to cancel: never OAUTH_DENIED). */
const REFUSAL_MESSAGES: Record<Exclude<OAuthRefusal['code'], 'OAUTH_DENIED'>, string> = {
  OAUTH_FAILED: 'The provider sign-in failed; try again, or sign in another way.',
  ACCOUNT_EXISTS:
    'An account has this email, but it is not verified on both sides: sign in the usual way, then link the provider from your account.',
  IDENTITY_TAKEN: 'This provider account is linked to another account.',
  SIGNUP_CLOSED: 'No account has this identity, and new accounts cannot be made through a provider.',
};

const NativeBody = Type.Object(
  {
    provider: Type.String({
      maxLength: 32,
      description: 'The provider id (not github: it has no ID tokens).',
    }),
    idToken: Type.String({
      maxLength: 16384,
      writeOnly: true,
      description: "The ID token from the platform's SDK.",
    }),
    nonce: Type.Optional(
      Type.String({
        maxLength: 512,
        description: "The nonce the app gave the SDK, compared with the token's exactly.",
      }),
    ),
    code: Type.Optional(
      Type.String({
        maxLength: 64,
        writeOnly: true,
        description: 'A TOTP or recovery code, for accounts with TOTP.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** A form POST from a provider holds a code, a state and a few short fields. */
const FORM_LIMIT = 16 * 1024;

const unknownProvider = () =>
  new AppError('NOT_FOUND', 'No provider has that id: see GET /api/oauth/providers.');
const reauthenticate = () =>
  new AppError(
    'REAUTHENTICATION_REQUIRED',
    'Sign in again first: this needs a sign-in of the last 10 minutes.',
  );

export const oauthRoutes: FastifyPluginAsyncTypebox<OAuthRoutesOptions> = async (
  app,
  { oauth, guard, profile, metrics, core, config },
) => {
  const answers = signinAnswers(app, {
    method: 'oauth',
    messages: MESSAGES,
    profile,
    guard,
    metrics,
    deviceTtlSeconds: core.deviceTtlSeconds,
  });
  const providerOf = (id: string): Provider => {
    const provider = oauth.providers.get(id);
    if (!provider) throw unknownProvider();
    return provider;
  };
  const fresh = (session: ActiveSession) => oauth.isFresh(session.createdAt);
  const secure = (request: FastifyRequest) =>
    config.session.cookieSecure === 'always' || request.protocol === 'https';
  /** A refusal is logged with its reason, and audited as a sign-in unless it was a link's. */
  const refused = (request: FastifyRequest, provider: Provider, error: OAuthRefusal, signin: boolean) => {
    request.signinUserId = error.userId ?? null;
    if (signin) answers.record(request, refusalStatus(error.code));
    request.log.info(
      { provider: provider.id, code: error.code, reason: error.reason },
      'provider sign-in refused',
    );
  };
  const bindingOf = (request: FastifyRequest) => {
    const header = request.headers.cookie;
    return header ? fastifyCookie.parse(header)[BINDING_COOKIE] : undefined;
  };

  app.get(
    '/api/oauth/providers',
    {
      schema: {
        summary: 'The providers you can sign in with, for drawing the buttons',
        operationId: 'listOAuthProviders',
        description:
          'No session needed. Each provider is a link to GET /api/oauth/{id}/start for a browser (a button per provider).',
        response: {
          200: success(
            Type.Array(
              Type.Object(
                {
                  id: Type.String({ pattern: PROVIDER_ID.source, maxLength: 32 }),
                  name: Type.String({ maxLength: 64, description: "The button's text (OAUTH_X_NAME)." }),
                },
                { additionalProperties: false },
              ),
              { maxItems: 64 },
            ),
            'The configured providers, in OAUTH_PROVIDERS order (empty when none).',
          ),
          ...failures([]),
        },
      },
    },
    async () => oauth.providers.list().map((p) => ({ id: p.id, name: p.settings.name })),
  );

  app.get(
    '/api/oauth/:provider/start',
    {
      schema: {
        summary: 'Start a sign-in (or a link) with a provider: a redirect to it',
        operationId: 'startOAuth',
        description:
          'A browser navigation, not a fetch: 302 to the provider with state, nonce and PKCE (S256). The state is ' +
          'kept server-side, single-use, for 10 minutes, bound to this browser by an HttpOnly cookie. `redirectTo` ' +
          'is a path on PUBLIC_URL or a URL on an origin of CORS_ORIGINS (default /account); anything else is 400 and ' +
          'never a redirect. `intent=link` needs a session signed in within 10 minutes. A provider that cannot be ' +
          'reached sends the browser back to redirectTo with ?error=OAUTH_FAILED.',
        params: ProviderParams,
        querystring: Type.Object(
          {
            redirectTo: Type.Optional(
              // Refused past 2,048 characters as VALIDATION_FAILED, with every other bad target; the
              // schema's bound only keeps absurd queries out.
              Type.String({
                maxLength: 8192,
                description: 'Where to go afterwards (at most 2,048 characters).',
              }),
            ),
            intent: Type.Optional(
              Type.Union([Type.Literal('signin'), Type.Literal('link')], { default: 'signin' }),
            ),
          },
          { additionalProperties: true },
        ),
        response: {
          302: noContent('To the provider; sets the usher_oauth cookie.', 'Location', 'Set-Cookie'),
          303: noContent(
            'Back to redirectTo with ?error=OAUTH_FAILED: the provider cannot be reached.',
            'Location',
          ),
          ...failures(
            [
              'VALIDATION_FAILED',
              'INVALID_QUERY',
              'NOT_FOUND',
              'UNAUTHENTICATED',
              'FORBIDDEN',
              'REAUTHENTICATION_REQUIRED',
              'TOO_MANY_REQUESTS',
            ],
            {
              notes: {
                VALIDATION_FAILED:
                  '`redirectTo` is not a path on PUBLIC_URL or a URL on an origin of CORS_ORIGINS.',
                INVALID_QUERY:
                  '`intent` is neither `signin` nor `link`, or `redirectTo` is over 8,192 characters.',
                NOT_FOUND: 'No provider has that id.',
                UNAUTHENTICATED: '`intent=link` without a session.',
                FORBIDDEN: '`intent=link` started by another site (Sec-Fetch-Site: cross-site or same-site).',
                REAUTHENTICATION_REQUIRED: '`intent=link` with a session signed in over 10 minutes ago.',
                TOO_MANY_REQUESTS:
                  'Too many sign-ins started from this client address (OAUTH_STARTS_MAX_PER_ADDRESS, 300 per 15 minutes by default).',
              },
            },
          ),
        },
      },
      config: { noStore: true, notFound: unknownProvider },
    },
    async (request, reply) => {
      const provider = providerOf(request.params.provider);
      const redirectTo = safeRedirect(request.query.redirectTo ?? '/account', config);
      if (redirectTo === undefined)
        throw invalid('redirectTo', 'must be a path on this service or a URL on an origin of CORS_ORIGINS');
      const intent = request.query.intent ?? 'signin';
      let userId: bigint | undefined;
      if (intent === 'link') {
        // A link starts from Usher's own page: another site must not send a signed-in browser here
        // to link whatever provider account that browser is signed in to (Sec-Fetch-Site: browsers
        // send it on every navigation; a client without it is not a browser another site drives).
        const site = request.headers['sec-fetch-site'];
        if (site === 'cross-site' || site === 'same-site')
          throw new AppError('FORBIDDEN', "A link can only be started from this service's own pages.");
        const session = await guard.session(request);
        if (!session) throw new AppError('UNAUTHENTICATED', 'Sign in first: linking needs your session.');
        if (!fresh(session)) throw reauthenticate();
        userId = session.userId;
      }
      const binding = oauth.binding(bindingOf(request));
      try {
        const url = await oauth.start(provider, { redirectTo, intent, userId, binding, address: request.ip });
        // Lax: it comes back with the provider's top-level GET to the callback (Apple's form POST is
        // turned into one first, below).
        reply.setCookie(BINDING_COOKIE, binding, {
          path: BINDING_PATH,
          httpOnly: true,
          sameSite: 'lax',
          secure: secure(request),
          maxAge: STATE_TTL_MS / 1000,
        });
        return reply.redirect(url.href, 302);
      } catch (error) {
        if (!(error instanceof OAuthRefusal)) throw error;
        request.log.warn({ provider: provider.id, reason: error.reason }, 'provider sign-in could not start');
        return reply.redirect(withError(redirectTo, error.code), 303);
      }
    },
  );

  const callback = async (
    request: FastifyRequest<{ Params: { provider: string } }>,
    reply: FastifyReply,
    response: URLSearchParams,
  ) => {
    const provider = providerOf(request.params.provider);
    const pending = await oauth.takeState(provider, response.get('state'), bindingOf(request));
    if (!pending)
      throw new AppError(
        'INVALID_TOKEN',
        'This sign-in is unknown, already used, expired, or was started in another browser: start it again.',
      );
    // The binding stays: another sign-in started in this browser (another tab) still needs it.
    const target = pending.redirectTo;
    try {
      if (pending.intent === 'link') {
        // Linked to the account that started it, and only while this browser is still signed in to it.
        const session = await guard.session(request);
        if (!session || session.userId !== pending.userId)
          throw new OAuthRefusal('OAUTH_FAILED', 'the session that started the link is gone');
        await oauth.link(provider, response, pending, toUser(session.owner));
        return reply.redirect(target, 303);
      }
      const outcome = await oauth.signIn(
        provider,
        response,
        pending,
        { address: request.ip, userAgent: request.headers['user-agent'] },
        request.headers['accept-language'],
      );
      const settled = answers.settleOrTicket(request, outcome);
      if ('ticket' in settled) return reply.redirect(withTicket(target, settled.ticket), 303);
      answers.withCookie(request, reply, settled);
      return reply.redirect(target, 303);
    } catch (error) {
      if (error instanceof OAuthRefusal) {
        refused(request, provider, error, pending.intent === 'signin');
        return reply.redirect(withError(target, error.code), 303);
      }
      // The core's refusal (throttled, not verified), recorded by settle.
      if (error instanceof AppError && error.code === 'SIGNIN_FAILED')
        return reply.redirect(withError(target, 'SIGNIN_FAILED'), 303);
      throw error;
    }
  };

  app.get(
    '/api/oauth/:provider/callback',
    {
      schema: {
        summary: "The provider's answer: the browser comes back here",
        operationId: 'oauthCallback',
        description:
          "Checks the state and this browser's binding, the `iss` parameter (RFC 9207), the code exchange with " +
          'the PKCE verifier, and the ID token (signature, iss, aud, exp, nonce); then links by (provider, issuer, ' +
          'subject) as CONTRACT "Sign in with a provider" says. Success: the session cookie and 303 to redirectTo; ' +
          'an account with TOTP: 303 to redirectTo#second-factor=<ticket> (POST /api/signin/second-factor). ' +
          'Refusals: 303 to redirectTo?error=<CODE> (OAUTH_FAILED, OAUTH_DENIED, ACCOUNT_EXISTS, IDENTITY_TAKEN, ' +
          'SIGNUP_CLOSED, SIGNIN_FAILED).',
        params: ProviderParams,
        response: {
          303: noContent('To redirectTo, as the description says.', 'Location', 'Set-Cookie'),
          ...failures(['INVALID_TOKEN', 'NOT_FOUND'], {
            notes: {
              INVALID_TOKEN:
                'The state is unknown, already used or expired, or this browser did not start the sign-in (no redirect).',
              NOT_FOUND: 'No provider has that id.',
            },
          }),
        },
      },
      config: { noStore: true, notFound: unknownProvider, secretQuery: true, audited: true },
      onRequest: answers.hooks.watchHangUp,
    },
    async (request, reply) => {
      const query = request.url.indexOf('?');
      return callback(request, reply, new URLSearchParams(query < 0 ? '' : request.url.slice(query + 1)));
    },
  );

  // Apple answers with a cross-site form POST (response_mode=form_post), which no SameSite=Lax
  // cookie comes back with: neither the binding nor the session of a link. It is turned into the
  // same-origin GET above, a top-level navigation that carries both. Only the answer's own fields
  // go on (not Apple's ID token or its `user`: the code brings the ID token again).
  await app.register(async (form) => {
    form.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_LIMIT },
      (_request, body, done) => done(null, new URLSearchParams(body as string)),
    );
    form.post(
      '/api/oauth/:provider/callback',
      {
        schema: {
          summary: "The provider's answer as a form POST (Apple): 303 to the GET callback",
          operationId: 'oauthCallbackPost',
          description:
            "For providers that answer with response_mode=form_post (Apple): the answer's code, state, iss and " +
            'error go on to GET /api/oauth/{provider}/callback, where they are checked.',
          params: ProviderParams,
          response: {
            303: noContent('To GET /api/oauth/{provider}/callback with the answer.', 'Location'),
            ...failures(['NOT_FOUND', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'], {
              notes: { NOT_FOUND: 'No provider has that id.' },
            }),
          },
        },
        config: { noStore: true, notFound: unknownProvider },
      },
      async (request, reply) => {
        const provider = providerOf((request.params as { provider: string }).provider);
        const body = request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
        const answer = new URLSearchParams();
        for (const field of ['code', 'state', 'iss', 'error', 'error_description']) {
          const value = body.get(field);
          if (value !== null) answer.set(field, value);
        }
        return reply.redirect(`${provider.redirectUri}?${answer}`, 303);
      },
    );
  });

  app.post(
    '/api/sessions/oauth',
    {
      onRequest: answers.hooks.watchHangUp,
      onResponse: answers.hooks.onResponse,
      schema: {
        summary: "Sign in for a token with an ID token from the platform's SDK (native apps)",
        operationId: 'createSessionWithIdToken',
        description:
          "The ID token is checked against the provider's published keys: signature, issuer, audience (the client id " +
          'or one of OAUTH_X_AUDIENCES), expiry, and `nonce` when given. The identity rules of the callback apply. ' +
          'The answer is that of POST /api/sessions (the second factor as `code`); a token that does not check out ' +
          'is 401 SIGNIN_FAILED and counts in the address throttle.',
        body: NativeBody,
        response: {
          201: success(
            tokenSessionFor(profile).ref,
            'Signed in: the token, the session and the user.',
            'Usher-Device',
          ),
          ...signinFailureResponses(false, {
            SIGNIN_FAILED: {
              400: 'The body is not a JSON object with string `provider` and `idToken`, or the provider is unknown or has no ID tokens.',
              401: 'The ID token does not check out, or a TOTP code is needed (Usher-Second-Factor: totp) or wrong.',
            },
          }),
          ...failures(['ACCOUNT_EXISTS', 'IDENTITY_TAKEN', 'SIGNUP_CLOSED', 'OAUTH_FAILED'], {
            everyRoute: false,
          }),
        },
      },
      config: {
        // The core's failures as SIGNIN_FAILED with a message; the identity rules' refusals by their code.
        renderError: (failure, request) =>
          failure.code === 'SIGNIN_FAILED' || failure.statusCode !== 409
            ? answers.renderErrorWithMessage(failure, request)
            : { statusCode: 409, body: { error: failure.code, message: failure.message } },
        noStore: true,
      },
    },
    async (request, reply) => {
      const provider = oauth.providers.get(request.body.provider);
      if (provider?.settings.kind !== 'oidc')
        throw new AppError('SIGNIN_FAILED', 'provider: no OpenID Connect provider has that id', 400);
      try {
        const outcome = await oauth.nativeSignIn(
          provider,
          { idToken: request.body.idToken, nonce: request.body.nonce, code: request.body.code },
          { address: request.ip, userAgent: request.headers['user-agent'] },
          request.headers['accept-language'],
        );
        return answers.withToken(reply, answers.settle(request, outcome, 201));
      } catch (error) {
        if (!(error instanceof OAuthRefusal)) throw error;
        refused(request, provider, error, true);
        throw new RefusalError(error.code === 'OAUTH_DENIED' ? 'OAUTH_FAILED' : error.code);
      }
    },
  );

  app.get(
    '/api/identities',
    {
      schema: {
        summary: 'The provider identities linked to your account',
        operationId: 'listIdentities',
        description: 'Each identity signs in to your account; unlink one with DELETE /api/identities/{id}.',
        response: {
          200: success(Type.Array(IdentitySchema, { maxItems: 1000 }), 'Oldest first.'),
          ...failures(['UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => (await oauth.list(currentSession(request).userId)).map(identityView),
  );

  const identityNotFound = () => new AppError('NOT_FOUND', 'You have no linked identity with that id.');
  app.delete(
    '/api/identities/:id',
    {
      schema: {
        summary: 'Unlink a provider identity: it cannot sign in any more',
        operationId: 'deleteIdentity',
        description:
          'Needs a sign-in of the last 10 minutes. Refused (409 LAST_SIGNIN_METHOD) when the account would be left ' +
          "with no password, no passkey and no other identity. Another user's identity is unknown (404). A notice " +
          "is mailed to the account's address.",
        params: Type.Object({
          id: Type.String({ maxLength: 64, description: 'An id from GET /api/identities.' }),
        }),
        response: {
          204: noContent('Unlinked.'),
          ...failures(
            ['UNAUTHENTICATED', 'FORBIDDEN', 'REAUTHENTICATION_REQUIRED', 'NOT_FOUND', 'LAST_SIGNIN_METHOD'],
            {
              notes: {
                FORBIDDEN: 'The session cookie was sent cross-site.',
                NOT_FOUND: 'You have no linked identity with that id.',
              },
            },
          ),
        },
      },
      config: { auth: 'session', noStore: true, notFound: identityNotFound },
    },
    async (request, reply) => {
      const session = currentSession(request);
      const { id } = request.params;
      if (!IDENTITY_ID.test(id)) throw identityNotFound();
      if (!fresh(session)) throw reauthenticate();
      const result = await oauth.unlink(toUser(session.owner), id);
      if (result === 'not-found') throw identityNotFound();
      if (result === 'last-method')
        throw new AppError(
          'LAST_SIGNIN_METHOD',
          'This is the last way to sign in to your account: set a password or add a passkey first.',
        );
      return reply.code(204).send(null);
    },
  );
};

/** A refusal of the native route: its code and message, 409, in both profiles. */
class RefusalError extends AppError {
  constructor(code: Exclude<OAuthRefusal['code'], 'OAUTH_DENIED'>) {
    super(code, REFUSAL_MESSAGES[code], 409);
  }
}

/**
 * The status a refusal is audited as (decision 187): the provider failed or the person cancelled,
 * `invalid`; the account rules refused, `failure`.
 */
const refusalStatus = (code: OAuthRefusal['code']) =>
  code === 'OAUTH_FAILED' || code === 'OAUTH_DENIED' ? 400 : 401;

function withError(target: string, code: string): string {
  const url = new URL(target);
  url.searchParams.set('error', code);
  return url.href;
}

/** The ticket in the fragment: never sent to a server, so never in an access log or a Referer. */
function withTicket(target: string, ticket: string): string {
  const url = new URL(target);
  url.hash = `second-factor=${ticket}`;
  return url.href;
}
