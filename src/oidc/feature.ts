import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Config } from '../config.ts';
import { purgeInRounds } from '../db/purge.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { AddressLimits } from '../kernel/limits.ts';
import { labelRoute } from '../plugins/pipeline.ts';
import { HSTS } from '../plugins/security-headers.ts';
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
import { INTERACTION_PATH, OIDC_PREFIX, OidcHost, type RequestHandler } from './provider.ts';
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

const FORWARDING = [
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-for',
  'x-forwarded-port',
  'forwarded',
];

/**
 * oidc-provider (Koa) believes X-Forwarded-* from anyone once `proxy` is on, where Fastify believes
 * them only from the addresses of TRUST_PROXY. The provider is given Fastify's verdict instead
 * (the request's protocol and address as Fastify judged them; the host is the Host header, as the
 * issuer is PUBLIC_URL whatever the request says): a client that reaches Usher directly cannot
 * pass itself off as https or as another host. The address is also kept on the raw request, where
 * the storage budgets read it (adapter.ts).
 */
function trustedForwarding(req: IncomingMessage, protocol: string, ip: string): void {
  // Deleted only where present: a deletion turns the headers object into a slow dictionary for
  // every later read of it (the provider reads a dozen).
  for (const name of FORWARDING) if (req.headers[name] !== undefined) delete req.headers[name];
  req.headers['x-forwarded-proto'] = protocol;
  req.headers['x-forwarded-for'] = ip;
  (req as IncomingMessage & { ip?: string }).ip = ip;
}

/**
 * The URL below the provider's prefix, as the provider (mounted there) must see it: the rest of the
 * path after its first segment (the router matched that segment as `oidc`, percent-encoded or
 * not), with the query, and `/` when nothing is left.
 */
function belowPrefix(url: string): string {
  let end = 1;
  while (end < url.length && url[end] !== '/' && url[end] !== '?') end++;
  const rest = url.slice(end);
  return rest.startsWith('/') ? rest : `/${rest}`;
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
 * The route label of a URL under the provider (its prefix stripped), found as
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
 * Usher as an OpenID Connect provider (issue 28): oidc-provider mounted under /oidc, Usher's login
 * and consent pages, and POST /api/session/token.
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

    /** Hands a request to the provider, which writes the answer past Fastify's reply. */
    const handOn = (request: FastifyRequest, reply: FastifyReply, url: string, rest: string) => {
      return (handler: RequestHandler) => {
        const req = request.raw;
        trustedForwarding(req, request.protocol, request.ip);
        // Discovery and the endpoints are built from the request's host: always PUBLIC_URL's, never
        // what a client wrote in Host (which a cache in front could then hand to everyone).
        req.headers.host = publicHost;
        // As a mounted application sees its request: oidc-provider finds its mount path from the two.
        (req as IncomingMessage & { originalUrl?: string }).originalUrl = url;
        req.url = rest;
        reply.hijack();
        handler(req, reply.raw).catch((err: unknown) => {
          request.log.error({ err }, 'oidc: the provider failed to answer');
          if (!reply.raw.headersSent) {
            reply.raw.statusCode = 500;
            reply.raw.end();
          } else reply.raw.destroy();
        });
      };
    };

    /**
     * The provider's requests, from this route's own onRequest hook: after the app-wide ones (the
     * request id, the refusals while shutting down or before the schema is ready), before Fastify
     * reads a body (the provider reads its own). No other route runs anything for it. What the
     * provider writes carries what Usher's answers carry: the request id, its security headers
     * (HSTS over https), and the access line and metrics written when the answer is sent.
     */
    const toProvider = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const url = request.raw.url ?? '/';
      const rest = belowPrefix(url);
      // Usher's own pages under the provider's path are routes of their own, found before this
      // one; any other path under theirs is no page (not found, as any unknown path).
      if (rest.startsWith(`${INTERACTION_SUFFIX}/`)) {
        labelRoute(request.raw, 'unmatched');
        reply.callNotFound();
        return;
      }
      labelRoute(request.raw, routeOf(rest), url);
      const res = reply.raw;
      res.setHeader('x-request-id', request.id);
      if (request.protocol === 'https') res.setHeader('strict-transport-security', HSTS);
      for (const [name, value] of PROVIDER_HEADERS) res.setHeader(name, value);
      res.setHeader('cache-control', 'no-store');
      if (!host.available) {
        reply.hijack();
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
      const forward = handOn(request, reply, url, rest);
      const ready = host.readyHandler();
      if (ready) forward(ready);
      // Building the provider or checking its keys failed (the database): Usher's error answer.
      else host.handler().then(forward, done);
    };
    for (const url of [OIDC_PREFIX, `${OIDC_PREFIX}/*`])
      app.all(url, { onRequest: toProvider, schema: { hide: true } }, (_request, reply) => {
        // Never reached: the hook above answers every request.
        reply.callNotFound();
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
