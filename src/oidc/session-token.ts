// POST /api/session/token: a first-party app that signs in with /api/signin trades its session for
// a JWT access token (RFC 9068) for one of its APIs (OIDC_RESOURCES), the same kind of token the
// provider issues, signed with the same key: an API verifies both from the JWKS alone.
import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { type Authenticator, currentSession } from '../sessions/index.ts';
import type { SessionService } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import { failures, success } from '../shared/schemas.ts';
import { parseRoles } from '../users/index.ts';
import { ACCESS_TOKEN_ALG } from './keys.ts';
import type { OidcHost } from './provider.ts';

/** The `client_id` of a token made from a session: Usher's own API, not a registered client. */
export const SESSION_CLIENT_ID = 'usher';

const TokenBody = Type.Object(
  {
    audience: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'The API the token is for: one of OIDC_RESOURCES, exactly as configured.',
    }),
  },
  { additionalProperties: false },
);

const TokenAnswer = Type.Object(
  {
    accessToken: Type.String({
      maxLength: 4096,
      description: 'A JWT (typ at+jwt) for the audience, signed with ES256.',
    }),
    tokenType: Type.Literal('Bearer'),
    expiresIn: Type.Integer({
      format: 'int32',
      minimum: 30,
      maximum: 86_400,
      description: 'Seconds until it expires (ACCESS_TOKEN_TTL_SECONDS).',
    }),
  },
  { additionalProperties: false },
);

export const sessionTokenRoutes: FastifyPluginAsyncTypebox<{
  host: OidcHost;
  guard: Authenticator;
  sessions: SessionService;
  now: () => number;
}> = async (app, { host, sessions, now }) => {
  const audiences = new Set(host.settings.resources);
  app.post(
    '/api/session/token',
    {
      schema: {
        summary: 'A JWT access token for one of your APIs, from this session',
        operationId: 'sessionToken',
        description:
          'For first-party apps that sign in with POST /api/signin: a JWT access token (RFC 9068: typ at+jwt; iss, sub, ' +
          'aud, exp, iat, jti, client_id "usher", scope, auth_time) for an audience of OIDC_RESOURCES, signed with ' +
          "the provider's current ES256 key: an API verifies it from the JWKS at /oidc/jwks alone. Lifetime " +
          'ACCESS_TOKEN_TTL_SECONDS.',
        body: TokenBody,
        response: {
          200: success(TokenAnswer, 'The token.'),
          ...failures(['VALIDATION_FAILED', 'UNAUTHENTICATED', 'UNAVAILABLE'], {
            notes: {
              VALIDATION_FAILED: 'The audience is not one of OIDC_RESOURCES.',
              UNAVAILABLE: 'The provider has no keys: ENCRYPTION_KEY is not set on PostgreSQL.',
            },
          }),
        },
      },
      config: { auth: 'session', noStore: true },
    },
    async (request) => {
      const session = currentSession(request);
      const { audience } = request.body;
      if (!audiences.has(audience))
        throw new AppError(
          'VALIDATION_FAILED',
          'audience: not one of the APIs this server issues tokens for (OIDC_RESOURCES).',
        );
      if (!host.available)
        throw new AppError(
          'UNAVAILABLE',
          'The OpenID Connect provider is not available: ENCRYPTION_KEY is not set.',
        );
      const { kid, key } = await host.accessTokenKey();
      const { SignJWT } = await import('jose');
      const ttl = host.settings.accessTokenTtlSeconds;
      const issuedAt = Math.floor(now() / 1000);
      const amr = sessions.methodsOf(session);
      const accessToken = await new SignJWT({
        client_id: SESSION_CLIENT_ID,
        scope: 'openid profile email',
        auth_time: Math.floor(session.createdAt.getTime() / 1000),
        ...(amr.length > 0 ? { amr } : {}),
        roles: parseRoles(session.owner.roles),
      })
        .setProtectedHeader({ alg: ACCESS_TOKEN_ALG, typ: 'at+jwt', kid })
        .setIssuer(host.settings.issuer)
        .setSubject(session.userId.toString())
        .setAudience(audience)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ttl)
        .setJti(randomBytes(16).toString('base64url'))
        .sign(key);
      return { accessToken, tokenType: 'Bearer' as const, expiresIn: ttl };
    },
  );
};
