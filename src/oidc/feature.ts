import type { IncomingMessage, ServerResponse } from 'node:http';
import middie from '@fastify/middie';
import type { Config } from '../config.ts';
import { purgeInRounds } from '../db/purge.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { AddressLimits } from '../kernel/limits.ts';
import { labelRoute } from '../plugins/pipeline.ts';
import type { SessionsExports } from '../sessions/feature.ts';
import type { UsersExports } from '../users/feature.ts';
import { OidcLoginBaselinesRepository } from './baseline-repository.ts';
import { OidcClientsRepository, OidcConsentsRepository } from './client-repository.ts';
import { ClientRegistry } from './clients.ts';
import { interactionRoutes } from './interactions.ts';
import { OidcKeysRepository } from './key-repository.ts';
import { KeyRing } from './keys.ts';
import { createOidc } from './migrations/2026-11-25-0017-oidc.ts';
import { createOidcLoginBaselines } from './migrations/2026-12-07-0025-oidc-login-baselines.ts';
import { OidcModelsRepository } from './model-repository.ts';
import { oidcPageTexts } from './page-texts.ts';
import { INTERACTION_PATH, OIDC_PREFIX, OidcHost } from './provider.ts';
import { sessionTokenRoutes } from './session-token.ts';

export interface OidcUnit {
  /** What apps signed in through Usher's provider hold: revoked with a password change or reset. */
  appAccess: OidcModelsRepository;
  clients: OidcClientsRepository;
  keys: OidcKeysRepository;
}

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

/**
 * The route label of a URL under the provider (its prefix stripped by middie), found as
 * oidc-provider's router finds the route: ASCII letters in any case, one trailing `/` dropped
 * (HEAD is answered by the GET route), so `/oidc/AUTH/` is `/oidc/auth`.
 */
function routeOf(url: string): string {
  const query = url.indexOf('?');
  let path = query === -1 ? url : url.slice(0, query);
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  path = `${OIDC_PREFIX}${path.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())}`;
  if (ROUTES.has(path)) return path;
  // The library's resume step, back from Usher's interaction pages.
  if (/^\/oidc\/auth\/[^/]+$/.test(path)) return `${OIDC_PREFIX}/auth/:uid`;
  return `${OIDC_PREFIX}/*`;
}

/**
 * Usher as an OpenID Connect provider (issue 28): oidc-provider mounted under /oidc with
 * @fastify/middie, Usher's login and consent pages, and POST /api/session/token.
 */
export const oidcFeature = feature({
  name: 'oidc',
  migrations: {
    '2026-11-25-0017-oidc': createOidc,
    '2026-12-07-0025-oidc-login-baselines': createOidcLoginBaselines,
  },
  repositories: (db): OidcUnit => ({
    appAccess: new OidcModelsRepository(db),
    clients: new OidcClientsRepository(db),
    keys: new OidcKeysRepository(db),
  }),
  build(
    kernel: Kernel<Config, OidcUnit & KernelUnit, unknown>,
    _needs: { users: UsersExports; sessions: SessionsExports },
  ) {
    const { config, database, repositories, now } = kernel;
    const budget = (
      policy: Config['oidcLimits']['authorizations'],
      scope: 'oidc-authorization' | 'oidc-pushed-request',
      message: string,
    ) => new AddressLimits({ policy, events: repositories.limits, now, scope, message });
    return {
      clients: new ClientRegistry({
        clients: repositories.clients,
        transaction: kernel.transaction,
        key: kernel.sealingKey,
        now,
      }),
      keys: new KeyRing({
        keys: repositories.keys,
        transaction: kernel.transaction,
        key: kernel.sealingKey,
        now,
      }),
      models: repositories.appAccess,
      consents: new OidcConsentsRepository(database.db),
      /** What a browser had when an interaction wanting a new sign-in began (prompt=login). */
      baselines: new OidcLoginBaselinesRepository(database.db),
      limits: {
        /** Authorization requests (each may store an interaction). */
        authorization: budget(
          config.oidcLimits.authorizations,
          'oidc-authorization',
          'Too many authorization requests from this address; try again later.',
        ),
        /** Pushed authorization requests (each stores the request). */
        pushed: budget(
          config.oidcLimits.pushed,
          'oidc-pushed-request',
          'Too many pushed authorization requests from this address; try again later.',
        ),
      },
    };
  },
  pageTexts: oidcPageTexts,
  housekeeping: async (oidc) => {
    const now = Date.now();
    // Expired rows in short statements, a bounded number per run (db/purge.ts).
    await Promise.all([
      purgeInRounds((limit) => oidc.models.deleteExpired(now, limit)),
      oidc.limits.authorization.purge(),
      oidc.limits.pushed.purge(),
    ]);
    await purgeInRounds((limit) => oidc.baselines.deleteExpired(now, limit));
  },
  routes: async (app, { own: oidc, needs, guard, config, log, now, pageTexts }) => {
    const { sessions } = needs.sessions;
    const { users } = needs.users;
    const publicHost = new URL(config.publicUrl).host;
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
      // Charged where the provider stores a new row, whatever the path's spelling (adapter.ts).
      budgets: oidc.limits,
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

    await app.register(middie);
    app.use(OIDC_PREFIX, (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => {
      // Usher's own pages under the provider's path are Fastify routes.
      if (req.url?.startsWith(`${INTERACTION_SUFFIX}/`)) return next();
      labelRoute(req, routeOf(req.url ?? '/'));
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
      host.handle(req, res).catch(next);
    });

    await app.register(interactionRoutes, {
      host,
      sessions,
      clients: oidc.clients,
      consents: oidc.consents,
      baselines: oidc.baselines,
      browserSession: (cookie) => guard.browserSession(cookie),
      now,
      pageTexts,
    });
    await app.register(sessionTokenRoutes, { host, guard, sessions, now });
  },
});

export type OidcExports = ExportsOf<typeof oidcFeature>;
