// Usher as an OpenID Connect provider: panva's oidc-provider (OpenID Certified), configured
// tighter than its defaults, storing through Kysely (adapter.ts), with Usher's keys (keys.ts), its
// registered clients (clients.ts) and its own pages (interactions.ts, pages.ts). The provider is
// built on first use and built again when the key set changes: it holds its keys from its start,
// and everything else it knows is in the database, so a new instance takes over seamlessly.
import { createHash, createPrivateKey, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Configuration, KoaContextWithOIDC, default as Provider } from 'oidc-provider';
import { languageHeaders, pageLocale } from '../pages/index.ts';
import type { ActiveSession } from '../sessions/service.ts';
import type { Awaitable } from '../shared/awaitable.ts';
import type { User } from '../users/user.ts';
import { type AdapterStores, type AddressBudget, adapterFactory } from './adapter.ts';
import { PARAMETER_MAX } from './bounds.ts';
import type { OidcConsentsRepository } from './client-repository.ts';
import type { ClientRegistry } from './clients.ts';
import {
  ACCESS_TOKEN_ALG,
  ID_TOKEN_ALG,
  type KeyRing,
  type KeySnapshot,
  REFRESH_INTERVAL_MS,
} from './keys.ts';
import { errorPage, loggedOutPage, logoutPage } from './pages.ts';

/** The language of a page the provider renders: the browser's, with the headers that say so. */
function localeOf(ctx: {
  get(field: string): string;
  set(field: string, value: string): void;
  response: { get(field: string): unknown };
}) {
  const locale = pageLocale(ctx.get('accept-language') || undefined);
  languageHeaders(
    { getHeader: (name) => ctx.response.get(name), header: (name, value) => ctx.set(name, value) },
    locale,
  );
  return locale;
}

/** Where the provider is mounted: its issuer is PUBLIC_URL followed by this. */
export const OIDC_PREFIX = '/oidc';
/** Usher's login and consent pages, under the provider's path. */
export const INTERACTION_PATH = `${OIDC_PREFIX}/interaction`;

export const SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

export interface OidcSettings {
  issuer: string;
  /** OIDC_RESOURCES: audiences of JWT access tokens. */
  resources: readonly string[];
  accessTokenTtlSeconds: number;
  /** TRUST_PROXY is set: X-Forwarded-Proto and -Host are believed, as Fastify believes them. */
  proxy: boolean;
}

export interface OidcHostDeps {
  settings: OidcSettings;
  keys: KeyRing;
  clients: ClientRegistry;
  consents: Pick<OidcConsentsRepository, 'find'>;
  stores: AdapterStores;
  /** Per client address: what authorization requests and pushed requests store (adapter.ts). */
  budgets: { authorization: AddressBudget; pushed: AddressBudget };
  userById(id: bigint): Promise<User | undefined>;
  /** The application's own roles of a user, carried in ID and access tokens as `roles`. */
  rolesOf(id: bigint): Promise<string[]>;
  /** The browser's Usher session, from its cookie. */
  browserSession(cookieHeader: string | undefined): Awaitable<ActiveSession | undefined>;
  /** Ends the browser's Usher session (RP-initiated logout signs the person out of Usher too). */
  endBrowserSession(cookieHeader: string | undefined): Promise<void>;
  now: () => number;
  log: FastifyBaseLogger;
}

type OidcModule = typeof import('oidc-provider');

/** A request as the provider's own middleware sees it (Koa's context). */
type ProviderContext = Parameters<Parameters<Provider['use']>[0]>[0];

/** Answers one request under the provider's path, its URL stripped of the prefix. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The key access tokens are signed with now (the provider's own choice: the first ES256 key). */
export interface SigningKey {
  kid: string;
  key: KeyObject;
}

/** Claims every ID token may carry without consent (oidc-provider's own list). */
const NON_REJECTABLE = new Set(['sub', 'sid', 'auth_time', 'acr', 'amr', 'iss']);

/**
 * What an authorization asks for, as oidc-provider's consent prompt reckons it: its OpenID scopes
 * and claims, each resource's scopes, and all of it as the items a consent is remembered by
 * (`scope`, `resource#scope`).
 */
export function requested(ctx: KoaContextWithOIDC): {
  scopes: string[];
  claims: string[];
  resources: Array<[string, string[]]>;
  items: string[];
} {
  const { oidc } = ctx;
  const scopes = [...oidc.requestParamOIDCScopes];
  const claims = [...oidc.requestParamClaims].filter((claim) => !NON_REJECTABLE.has(claim));
  const resources = Object.entries(oidc.resourceServers ?? {}).map(
    ([resource, server]) =>
      [resource, [...oidc.requestParamScopes].filter((scope) => server.scopes.has(scope))] as [
        string,
        string[],
      ],
  );
  return {
    scopes,
    claims,
    resources: resources.filter(([, granted]) => granted.length > 0),
    items: [
      ...scopes,
      ...resources.flatMap(([resource, granted]) => granted.map((scope) => `${resource}#${scope}`)),
    ],
  };
}

/** The provider session of a Usher session (its token's digest): the same on every request. */
function providerSessionId(usherTokenHash: string): string {
  return createHash('sha256').update(`usher oidc session\0${usherTokenHash}`).digest('base64url');
}

/** The `sub` of a user: the id in decimal (CONTRACT). */
const SUBJECT = /^[1-9][0-9]{0,18}$/;

export class OidcHost {
  readonly #d: OidcHostDeps;
  #module: Promise<OidcModule> | undefined;
  #built:
    | {
        provider: Provider;
        /** The provider's request handler (Koa's callback), made once per provider. */
        handler: RequestHandler;
        fingerprint: string;
        version: string;
        accessKey: SigningKey;
      }
    | undefined;
  #building: Promise<Provider> | undefined;
  #checkedAt = Number.NEGATIVE_INFINITY;

  constructor(deps: OidcHostDeps) {
    this.#d = deps;
  }

  get settings(): OidcSettings {
    return this.#d.settings;
  }

  get available(): boolean {
    return this.#d.keys.available;
  }

  /** oidc-provider itself, loaded on first use: a server nobody signs in through never loads it. */
  module(): Promise<OidcModule> {
    this.#module ??= import('oidc-provider');
    return this.#module;
  }

  /**
   * The provider to answer with: the one built, unless REFRESH_INTERVAL_MS has passed and the key
   * set has changed since (a rotation, a retirement, or a rotated key whose time to sign came).
   */
  async provider(): Promise<Provider> {
    const now = this.#d.now();
    if (this.#built && now - this.#checkedAt < REFRESH_INTERVAL_MS) return this.#built.provider;
    this.#building ??= this.#refresh(now).finally(() => {
      this.#building = undefined;
    });
    return this.#building;
  }

  async #refresh(now: number): Promise<Provider> {
    const version = await this.#d.keys.version();
    const built = this.#built;
    if (built && built.version === version) {
      // Same keys; only the passing of time can have changed which one signs.
      const snapshot = await this.#d.keys.snapshot();
      if (snapshot.fingerprint === built.fingerprint) {
        this.#checkedAt = now;
        return built.provider;
      }
      return this.#build(snapshot, await this.#d.keys.version(), now);
    }
    return this.#build(await this.#d.keys.snapshot(), await this.#d.keys.version(), now);
  }

  async #build(snapshot: KeySnapshot, version: string, now: number): Promise<Provider> {
    const { default: ProviderClass, errors, interactionPolicy } = await this.module();
    const provider = new ProviderClass(
      this.#d.settings.issuer,
      this.#configuration(snapshot, errors, interactionPolicy, () => ProviderClass.ctx),
    );
    provider.proxy = this.#d.settings.proxy;
    provider.on('server_error', (_ctx, err) => this.#d.log.error({ err }, 'oidc: server error'));
    this.#endsUsherSessionOnLogout(provider);
    this.#signsOutWithoutSessionAtOnce(provider);
    if (this.#built && this.#built.fingerprint !== snapshot.fingerprint)
      this.#d.log.info({ keys: snapshot.fingerprint }, 'oidc: signing keys changed; provider rebuilt');
    const jwk = snapshot.jwks.find((key) => (key as { alg?: string }).alg === ACCESS_TOKEN_ALG)!;
    const accessKey = {
      kid: String((jwk as { kid?: string }).kid),
      key: createPrivateKey({ key: jwk, format: 'jwk' }),
    };
    this.#built = {
      provider,
      handler: provider.callback() as RequestHandler,
      fingerprint: snapshot.fingerprint,
      version,
      accessKey,
    };
    this.#checkedAt = now;
    return provider;
  }

  /** The key POST /api/session/token signs with: the one the provider signs access tokens with. */
  async accessTokenKey(): Promise<SigningKey> {
    await this.provider();
    return this.#built!.accessKey;
  }

  /**
   * The handler to answer a request with now, when the provider is built and its key set was
   * checked less than REFRESH_INTERVAL_MS ago (most requests): no promise to wait for. Otherwise
   * undefined, and `handler()` gives it once the key set is checked (or the provider built).
   */
  readyHandler(): RequestHandler | undefined {
    const built = this.#built;
    return built && this.#d.now() - this.#checkedAt < REFRESH_INTERVAL_MS ? built.handler : undefined;
  }

  async handler(): Promise<RequestHandler> {
    await this.provider();
    return this.#built!.handler;
  }

  /**
   * RP-initiated logout ends the Usher session too, or the next sign-in would find it and skip the
   * login. Only a confirmed logout the provider carried out (not a refused form), and only the Usher
   * session of the person whose provider session ended: the library also posts this form itself
   * to end a previous person's provider session, which must not sign out the person now here.
   */
  #endsUsherSessionOnLogout(provider: Provider): void {
    const endsUsherSession = async (ctx: ProviderContext, next: () => Promise<unknown>) => {
      await next();
      const oidc = (ctx as KoaContextWithOIDC).oidc;
      if (!oidc?.params?.logout) return;
      if (ctx.status >= 400) return;
      const cookie = ctx.get('cookie') || undefined;
      const usher = await this.#d.browserSession(cookie);
      if (usher && usher.userId.toString() === oidc.session?.accountId) {
        await this.#d.endBrowserSession(cookie);
        ctx.append(
          'set-cookie',
          `usher_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${ctx.secure ? '; Secure' : ''}`,
        );
      }
    };
    // Every other request goes straight on, without an async step of its own in between.
    provider.use((ctx, next) =>
      ctx.method === 'POST' && ctx.path === '/session/end/confirm' ? endsUsherSession(ctx, next) : next(),
    );
  }

  /**
   * A sign-out from a browser without a provider session has nobody to sign out: the library
   * would still save a session to carry its self-submitting form's xsrf secret and the `state` to
   * the confirm step, a row per request for anyone who asks (issue 40). Its outcome is known
   * here, so the browser is sent there at once, where the confirm step would have sent it: the
   * registered post_logout_redirect_uri (checked by the library) with `state`, else the
   * signed-out page. The adapter stores no session without an account, and the cookies set for
   * it (naming a session that was not stored) are not sent: the library sets no other here.
   */
  #signsOutWithoutSessionAtOnce(provider: Provider): void {
    const signsOut = async (ctx: ProviderContext, next: () => Promise<unknown>) => {
      await next();
      const oidc = (ctx as KoaContextWithOIDC).oidc;
      if (oidc?.route !== 'end_session' || ctx.status !== 200 || !oidc.session || oidc.session.accountId)
        return;
      const back = oidc.params?.post_logout_redirect_uri;
      const state = oidc.params?.state;
      ctx.remove('set-cookie');
      if (typeof state === 'string' && state.length > PARAMETER_MAX) {
        ctx.status = 400;
        ctx.type = 'html';
        ctx.body = errorPage(
          localeOf(ctx),
          'invalid_request',
          `state must be at most ${PARAMETER_MAX} characters`,
        );
        return;
      }
      const to = typeof back === 'string' ? new URL(back) : new URL(oidc.urlFor('end_session_success'));
      if (typeof back === 'string' && typeof state === 'string') to.searchParams.set('state', state);
      ctx.redirect(to.href);
      ctx.status = 303;
    };
    // Only a path the library's router can take for end_session (`/session/end`, ASCII letters in
    // any case, one trailing `/`) waits for its answer; every other request goes straight on.
    provider.use((ctx, next) => {
      const path = ctx.path;
      return (path.length === 12 || path.length === 13) && path.toLowerCase().startsWith('/session/end')
        ? signsOut(ctx, next)
        : next();
    });
  }

  /**
   * The grant an authorization goes on with: the one the session holds for the client, extended
   * without asking when the person need not be asked: a first-party client, or a third-party one
   * whose every requested scope the person agreed to before (oidc/interactions.ts remembers them).
   */
  #grants(): NonNullable<Configuration['loadExistingGrant']> {
    const d = this.#d;
    return async (ctx) => {
      const { oidc } = ctx;
      const client = oidc.client!;
      const grantId = oidc.result?.consent?.grantId || oidc.session!.grantIdFor(client.clientId);
      const existing = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      const accountId = oidc.session!.accountId;
      if (!accountId || (existing && existing.accountId !== accountId)) return existing;
      const asked = requested(ctx);
      if (!(client.metadata() as { usher_first_party?: boolean }).usher_first_party) {
        // prompt=consent: the person is asked again (OpenID Connect Core 3.1.2.1), on the page.
        if (oidc.prompts.has('consent')) return existing;
        const agreed = await d.consents.find(BigInt(accountId), client.clientId);
        if (!asked.items.every((item) => agreed.has(item))) return existing;
      }
      const grant = existing ?? new oidc.provider.Grant({ accountId, clientId: client.clientId });
      if (asked.scopes.length > 0) grant.addOIDCScope(asked.scopes.join(' '));
      if (asked.claims.length > 0) grant.addOIDCClaims(asked.claims);
      for (const [resource, scopes] of asked.resources) grant.addResourceScope(resource, scopes.join(' '));
      await grant.save();
      return grant;
    };
  }

  #configuration(
    keys: KeySnapshot,
    errors: OidcModule['errors'],
    policy: OidcModule['interactionPolicy'],
    current: () => KoaContextWithOIDC | undefined,
  ): Configuration {
    const { settings } = this.#d;
    const d = this.#d;
    const resources = new Set(settings.resources);
    // The roles the request's account was found with: its access token carries the same ones
    // (extraTokenClaims), read once per token rather than twice.
    const rolesRead = new WeakMap<object, { accountId: string; roles: string[] }>();
    const findAccount: Configuration['findAccount'] = async (ctx, sub) => {
      if (!SUBJECT.test(sub)) return undefined;
      const id = BigInt(sub);
      const [user, roles] = await Promise.all([d.userById(id), d.rolesOf(id)]);
      // A disabled account is no account to the provider: no sign-in, no refresh, no userinfo.
      if (!user || user.disabled) return undefined;
      if (ctx) rolesRead.set(ctx, { accountId: sub, roles });
      return {
        accountId: sub,
        claims: () => ({
          sub,
          name: user.name,
          email: user.email,
          email_verified: user.emailVerified,
          roles,
        }),
      };
    };
    const loadExistingGrant = this.#grants();
    const interactions = policy.base();
    // The provider's own session is the browser's Usher session. This check takes the place of the
    // library's `no_session` (a prompt's checks run side by side, so it cannot run before it): a
    // browser without a Usher session signs in, also when its provider session outlived the Usher
    // one (signed out, a password change, an admin); a browser with a Usher session and no
    // provider session yet is signed in from it at once, as the interaction page would, so
    // prompt=none works for it too. A Usher session of another person than the provider
    // session's goes through the interaction page.
    const login = interactions.get('login')!;
    login.checks.remove('no_session');
    login.checks.add(
      new policy.Check('no_session', 'End-User authentication is required', 'login_required', async (ctx) => {
        const { oidc } = ctx;
        const accountId = oidc.session?.accountId;
        const usher = await d.browserSession(ctx.get('cookie') || undefined);
        if (!usher) return policy.Check.REQUEST_PROMPT;
        const userId = usher.userId.toString();
        if (accountId)
          return accountId === userId ? policy.Check.NO_NEED_TO_PROMPT : policy.Check.REQUEST_PROMPT;
        const account = await findAccount(ctx, userId);
        if (!account) return policy.Check.REQUEST_PROMPT;
        // One provider session per Usher session, whatever the browser does with the provider's
        // cookie: its id is derived from the Usher session, so a browser that drops the cookie
        // (or a script that never keeps it) finds the same session, and with it the grant it
        // holds for this client, on every authorization request, instead of a new session and a
        // new grant each time (issue 40: 600 requests made 600 of each). The id is no credential:
        // the cookie naming it is signed, and the Usher session is asked for as well (above).
        const id = providerSessionId(usher.tokenHash);
        const earlier = await oidc.provider.Session.find(id);
        oidc.session!.jti = id;
        if (earlier && earlier.accountId === userId) {
          oidc.session!.uid = earlier.uid;
          if (earlier.authorizations) oidc.session!.authorizations = earlier.authorizations;
        }
        oidc.session!.loginAccount({
          accountId: userId,
          loginTs: Math.floor(usher.createdAt.getTime() / 1000),
          amr: usher.amr ? usher.amr.split(' ') : [],
        });
        // What the authorization's loadAccount and loadGrant steps would have found, had the
        // session been there when they ran.
        oidc.entity('Account', account);
        const grant = await loadExistingGrant(ctx);
        if (grant) {
          oidc.session!.ensureClientContainer(oidc.client!.clientId);
          oidc.session!.grantIdFor(oidc.client!.clientId, grant.jti);
        }
        oidc.entity(
          'Grant',
          grant ?? new oidc.provider.Grant({ accountId: userId, clientId: oidc.client!.clientId }),
        );
        return policy.Check.NO_NEED_TO_PROMPT;
      }),
      0,
    );
    return {
      adapter: adapterFactory(this.#d.stores, this.#d.clients, errors, { ...d.budgets, current }),
      clients: [],
      jwks: { keys: keys.jwks as NonNullable<Configuration['jwks']>['keys'] },
      cookies: {
        keys: keys.cookieKeys,
        long: { signed: true, httpOnly: true, sameSite: 'lax' },
        short: { signed: true, httpOnly: true, sameSite: 'lax' },
      },
      findAccount,
      loadExistingGrant,
      // An access token for a person carries their application roles, as their ID token does.
      extraTokenClaims: async (ctx, token) => {
        const accountId = 'accountId' in token ? token.accountId : undefined;
        if (typeof accountId !== 'string' || !SUBJECT.test(accountId)) return undefined;
        const read = rolesRead.get(ctx);
        return { roles: read?.accountId === accountId ? read.roles : await d.rolesOf(BigInt(accountId)) };
      },
      // Standalone claims (null): present whenever the session has them, in every ID token.
      claims: {
        acr: null,
        amr: null,
        auth_time: null,
        iss: null,
        sid: null,
        // amr with every ID token (RFC 8176): how the person signed in, as the Usher session was.
        // roles: the application's own roles an admin gave the person (CONTRACT "Administration").
        openid: ['sub', 'amr', 'roles'],
        profile: ['name'],
        email: ['email', 'email_verified'],
      },
      scopes: [...SCOPES],
      responseTypes: ['code'],
      pkce: { required: () => true },
      allowOmittingSingleRegisteredRedirectUri: false,
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        id_token_signed_response_alg: ID_TOKEN_ALG,
        // auth_time in every ID token: an app can always tell how fresh the sign-in is.
        require_auth_time: true,
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      extraClientMetadata: { properties: ['usher_first_party'] },
      // A client authenticates with its secret (basic or post) or, public, with none; the JWT
      // methods need keys no client registers here, so they are not offered.
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
      enabledJWA: {
        idTokenSigningAlgValues: [ID_TOKEN_ALG, ACCESS_TOKEN_ALG],
        userinfoSigningAlgValues: [ID_TOKEN_ALG, ACCESS_TOKEN_ALG],
        introspectionSigningAlgValues: [ID_TOKEN_ALG, ACCESS_TOKEN_ALG],
        authorizationSigningAlgValues: [ID_TOKEN_ALG, ACCESS_TOKEN_ALG],
      },
      features: {
        devInteractions: { enabled: false },
        // A client revokes only its own tokens; a public client introspects only its own.
        revocation: {
          enabled: true,
          allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
        },
        introspection: {
          enabled: true,
          allowedPolicy: async (ctx, client, token) =>
            client.clientAuthMethod !== 'none' || token.clientId === ctx.oidc.client?.clientId,
        },
        clientCredentials: { enabled: true },
        userinfo: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          logoutSource: async (ctx, form) => {
            ctx.type = 'html';
            ctx.body = logoutPage(localeOf(ctx), form, ctx.oidc.client?.clientName);
          },
          postLogoutSuccessSource: async (ctx) => {
            ctx.type = 'html';
            ctx.body = loggedOutPage(localeOf(ctx), ctx.oidc.client?.clientName);
          },
        },
        resourceIndicators: {
          enabled: true,
          // A token request names no resource: the one the authorization asked for, if one.
          defaultResource: async (_ctx, _client, oneOf) =>
            oneOf && oneOf.length === 1 ? oneOf[0]! : undefined!,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx, indicator) => {
            if (!resources.has(indicator)) throw new errors.InvalidTarget();
            return {
              scope: 'openid profile email',
              audience: indicator,
              accessTokenTTL: settings.accessTokenTtlSeconds,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: ACCESS_TOKEN_ALG } },
            };
          },
        },
      },
      interactions: {
        policy: interactions,
        url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
      },
      ttl: {
        AccessToken: settings.accessTokenTtlSeconds,
        ClientCredentials: settings.accessTokenTtlSeconds,
        AuthorizationCode: 60,
        IdToken: 3600,
        Interaction: 10 * 60,
        Grant: 30 * 24 * 3600,
        Session: 14 * 24 * 3600,
        RefreshToken: 30 * 24 * 3600,
      },
      rotateRefreshToken: true,
      // Browsers may call the token and userinfo endpoints only from an origin of the client's own
      // redirect URIs, and only for public clients (a confidential client's secret never runs there).
      clientBasedCORS: (ctx, origin, client) => {
        if (origin === 'null') return false;
        if (ctx.oidc.route !== 'userinfo' && client.clientAuthMethod !== 'none') return false;
        return (client.redirectUris ?? []).some((uri) => URL.parse(uri)?.origin === origin);
      },
      renderError: async (ctx, out) => {
        ctx.type = 'html';
        ctx.body = errorPage(
          localeOf(ctx),
          String(out.error),
          out.error_description ? String(out.error_description) : undefined,
        );
      },
    };
  }
}
