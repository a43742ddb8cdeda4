// The OpenAPI 3.1 document, generated from the route schemas (so it cannot drift from what is
// validated and serialised), at GET /openapi.json, and a browsable Swagger UI at /docs served from
// the npm package's own assets: no CDN, so it works offline.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import type { Profile } from '../config.ts';
import { SESSION_COOKIE, SESSION_SECURITY } from '../sessions/guard.ts';

export const DOCS_PREFIX = '/docs';

/** The document's tags, in the order the docs page shows them: operations (probes, metrics) last. */
const TAGS = [
  { name: 'users', description: 'Look up, register, change and delete users.' },
  {
    name: 'sessions',
    description: 'Sign in (password, TOTP code, passkey), who am I, list and revoke sessions.',
  },
  { name: 'account recovery', description: 'Password reset and email verification through mailed links.' },
  { name: 'second factors', description: 'Two-step sign-in with a TOTP app, and passkeys.' },
  {
    name: 'products and reviews',
    description: 'Products and their nested reviews: the REST collection conventions.',
  },
  { name: 'rest probe', description: 'The profile B probe of SPEC 4.2.' },
  { name: 'operations', description: 'Liveness, readiness and Prometheus metrics, for operators.' },
] as const;
type Tag = (typeof TAGS)[number]['name'];

/** Groups operations in the document by the first path segment that names a feature. */
function tagFor(url: string): Tag {
  if (url.startsWith('/api/users')) return 'users';
  if (url.startsWith('/api/sign') || url.startsWith('/api/session')) return 'sessions';
  if (url.startsWith('/api/password') || url.startsWith('/api/email')) return 'account recovery';
  if (url.startsWith('/api/mfa') || url.startsWith('/api/passkeys')) return 'second factors';
  if (url.startsWith('/api/products')) return 'products and reviews';
  if (url === '/rest') return 'rest probe';
  return 'operations';
}

/**
 * Must be registered before any route: @fastify/swagger collects routes as they are added. A
 * route that needs a session (config.auth) is documented with the session security schemes.
 */
export const openApiPlugin = fp<{ profile: Profile }>(
  async (app, { profile }) => {
    await app.register(swagger, {
      transform: ({ schema, url, route }) => ({
        schema: {
          ...schema,
          tags: [tagFor(url)],
          ...(route.config?.auth === 'session' ? { security: SESSION_SECURITY } : {}),
        },
        url,
      }),
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Usher',
          version: '0.1.0',
          description:
            `User lookup, registration, sign-in and sessions, plus products with nested reviews. This server runs ` +
            `profile ${profile.toUpperCase()}, which fixes the wire format of the documented endpoints ` +
            '(GET /api/users/{id}, GET /api/users, POST /api/signin, POST /rest). Every failure has a top-level ' +
            '`error` code; the codes each route can answer with are listed under its responses.',
        },
        tags: TAGS.filter((t) => t.name !== 'rest probe' || profile === 'b').map((t) => ({ ...t })),
        components: {
          securitySchemes: {
            sessionCookie: {
              type: 'apiKey',
              in: 'cookie',
              name: SESSION_COOKIE,
              description: 'Set by POST /api/signin (HttpOnly; SameSite=Lax).',
            },
            bearerToken: {
              type: 'http',
              scheme: 'bearer',
              description:
                'The same session token, for clients that do not keep cookies: POST /api/sessions gives one.',
            },
          },
        },
      },
    });
  },
  { name: 'usher-openapi' },
);

/** GET /openapi.json and the browsable docs at /docs; registered after every route. */
export const docsPlugin = fp(
  async (app) => {
    app.get('/openapi.json', { schema: { hide: true }, config: { usesDatabase: false } }, async () =>
      app.swagger(),
    );
    await app.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // Swagger UI's own strict CSP (hashes of its inline code) replaces the JSON one on these pages.
      staticCSP: true,
      uiConfig: { deepLinking: true, defaultModelsExpandDepth: 0 },
    });
  },
  { name: 'usher-docs', dependencies: ['usher-openapi'] },
);
