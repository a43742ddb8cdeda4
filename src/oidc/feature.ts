import type { IncomingMessage, ServerResponse } from 'node:http';
import middie from '@fastify/middie';
import { purgeInRounds } from '../db/purge.ts';
import type { Feature } from '../features.ts';
import { languageHeaders, pageLocale } from '../pages/i18n.ts';
import { labelRoute } from '../plugins/pipeline.ts';
import { AppError } from '../shared/errors.ts';
import type { AddressLimits } from '../users/limits.ts';
import { interactionRoutes } from './interactions.ts';
import { createOidc } from './migrations/2026-11-25-0017-oidc.ts';
import { createOidcLoginBaselines } from './migrations/2026-12-07-0025-oidc-login-baselines.ts';
import { errorPage } from './pages.ts';
import { INTERACTION_PATH, OIDC_PREFIX, OidcHost } from './provider.ts';
import { sessionTokenRoutes } from './session-token.ts';

/**
 * What the provider's own answers carry (they are written by oidc-provider, past Fastify's hooks):
 * scripts only from Usher or the hash oidc-provider adds for its form_post page, no framing, no
 * Referer. No form-action: its sign-out form and form_post page go on to the apps' addresses.
 */
const PROVIDER_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  [
    'content-security-policy',
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  ],
];

const INTERACTION_SUFFIX = INTERACTION_PATH.slice(OIDC_PREFIX.length);

/**
 * oidc-provider (Koa) believes X-Forwarded-* from anyone once `proxy` is on, where Fastify believes
 * them only from the addresses of TRUST_PROXY. The provider is given Fastify's verdict instead
 * (middie copies the request's protocol and address onto the raw request; the host is the
 * Host header, as the issuer is PUBLIC_URL whatever the request says): a client that
 * reaches Usher directly cannot pass itself off as https or as another host.
 */
function trustedForwarding(req: IncomingMessage): void {
  const judged = req as IncomingMessage & { protocol?: string; ip?: string };
  for (const name of [
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-forwarded-for',
    'x-forwarded-port',
    'forwarded',
  ])
    delete req.headers[name];
  if (judged.protocol) req.headers['x-forwarded-proto'] = judged.protocol;
  if (judged.ip) req.headers['x-forwarded-for'] = judged.ip;
}

/** The provider's endpoints (under OIDC_PREFIX) as the metrics' `route` label: a bounded set. */
const AUTHORIZATION = `${OIDC_PREFIX}/auth`;
const PUSHED_REQUEST = `${OIDC_PREFIX}/request`;
const ROUTES = new Set(
  [
    '/.well-known/openid-configuration',
    '/auth',
    '/token',
    '/token/introspection',
    '/token/revocation',
    '/me',
    '/jwks',
    '/request',
    '/session/end',
    '/session/end/confirm',
    '/session/end/success',
  ].map((path) => `${OIDC_PREFIX}${path}`),
);

/** The route label of a URL under the provider (its prefix stripped by middie). */
function routeOf(url: string): string {
  const query = url.indexOf('?');
  const path = `${OIDC_PREFIX}${query === -1 ? url : url.slice(0, query)}`;
  if (ROUTES.has(path)) return path;
  // The library's resume step, back from Usher's interaction pages.
  if (/^\/oidc\/auth\/[^/]+$/.test(path)) return `${OIDC_PREFIX}/auth/:uid`;
  return `${OIDC_PREFIX}/*`;
}

/**
 * Past an address's budget: 429 with Retry-After, before the provider stores anything. A browser's
 * authorization request gets a page; a client's pushed request gets JSON in OAuth's shape.
 */
function tooMany(req: IncomingMessage, res: ServerResponse, route: string, error: AppError): void {
  res.statusCode = 429;
  for (const [name, value] of Object.entries(error.headers ?? {})) res.setHeader(name, value);
  if (route === PUSHED_REQUEST) {
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify({ error: 'too_many_requests', error_description: error.message }));
    return;
  }
  const locale = pageLocale(req.headers['accept-language']);
  languageHeaders(
    { getHeader: (name) => res.getHeader(name), header: (name, value) => res.setHeader(name, value) },
    locale,
  );
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(errorPage(locale, 'too_many_requests', error.message));
}

/**
 * Usher as an OpenID Connect provider (issue 28): oidc-provider mounted under /oidc with
 * @fastify/middie, Usher's login and consent pages, and POST /api/session/token.
 */
export const oidcFeature: Feature = {
  name: 'oidc',
  migrations: {
    '2026-11-25-0017-oidc': createOidc,
    '2026-12-07-0025-oidc-login-baselines': createOidcLoginBaselines,
  },
  housekeeping: async ({ oidc, limits }) => {
    const now = Date.now();
    // Expired rows in short statements, a bounded number per run (db/purge.ts).
    await Promise.all([
      purgeInRounds((limit) => oidc.models.deleteExpired(now, limit)),
      limits.oidcAuthorization.purge(),
      limits.oidcPushedRequest.purge(),
    ]);
    await purgeInRounds((limit) => oidc.baselines.deleteExpired(now, limit));
  },
  routes: async (app, { services, guard, config, log }) => {
    const { oidc, sessions, users, limits } = services;
    const publicHost = new URL(config.publicUrl).host;
    const now = services.now;
    const host = new OidcHost({
      settings: {
        issuer: `${config.publicUrl}${OIDC_PREFIX}`,
        resources: config.oidc.resources,
        accessTokenTtlSeconds: config.oidc.accessTokenTtlSeconds,
        proxy: config.trustProxy.length > 0,
      },
      keys: oidc.keys,
      clients: oidc.clients,
      consents: oidc.consents,
      stores: { models: oidc.models },
      userById: async (id) => users.find(id),
      rolesOf: (id) => users.rolesOf(id),
      browserSession: (cookie) => guard.browserSession(cookie),
      endBrowserSession: async (cookie) => {
        const session = await guard.browserSession(cookie);
        if (session) await sessions.end(session);
      },
      now,
      log: log.child({ component: 'oidc' }),
    });
    if (!oidc.keys.available)
      log.warn(
        'ENCRYPTION_KEY is not set: the OpenID Connect provider (/oidc) answers 503 on PostgreSQL until it is',
      );

    const budgets: Record<string, AddressLimits> = {
      [AUTHORIZATION]: limits.oidcAuthorization,
      [PUSHED_REQUEST]: limits.oidcPushedRequest,
    };

    await app.register(middie);
    app.use(OIDC_PREFIX, (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => {
      // Usher's own pages under the provider's path are Fastify routes.
      if (req.url?.startsWith(`${INTERACTION_SUFFIX}/`)) return next();
      const route = routeOf(req.url ?? '/');
      labelRoute(req, route);
      trustedForwarding(req);
      // Discovery and the endpoints are built from the request's host: always PUBLIC_URL's, never
      // what a client wrote in Host (which a cache in front could then hand to everyone).
      req.headers.host = publicHost;
      for (const [name, value] of PROVIDER_HEADERS) res.setHeader(name, value);
      res.setHeader('cache-control', 'no-store');
      if (!host.available) {
        res.statusCode = 503;
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.end(
          JSON.stringify({
            error: 'UNAVAILABLE',
            message: 'The OpenID Connect provider is not available: ENCRYPTION_KEY is not set.',
          }),
        );
        return;
      }
      const budget = budgets[route];
      if (!budget || (req.method !== 'GET' && req.method !== 'POST')) {
        host.handle(req, res).catch(next);
        return;
      }
      const address = (req as IncomingMessage & { ip?: string }).ip ?? req.socket.remoteAddress ?? '';
      budget
        .take(address)
        .then(
          () => host.handle(req, res),
          (error: unknown) => {
            if (!(error instanceof AppError) || error.statusCode !== 429) throw error;
            tooMany(req, res, route, error);
          },
        )
        .catch(next);
    });

    await app.register(interactionRoutes, {
      host,
      sessions,
      clients: oidc.clients,
      consents: oidc.consents,
      baselines: oidc.baselines,
      browserSession: (cookie) => guard.browserSession(cookie),
      now,
    });
    await app.register(sessionTokenRoutes, { host, guard, sessions, now });
  },
};
