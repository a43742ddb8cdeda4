// Usher as an OpenID Connect provider: panva's oidc-provider (OpenID Certified), configured
// tighter than its defaults, storing through Kysely (adapter.ts), with Usher's keys (keys.ts), its
// registered clients (clients.ts) and its own pages (interactions.ts, pages.ts). The provider is
// built on first use and built again when the key set changes: it holds its keys from its start,
// and everything else it knows is in the database, so a new instance takes over seamlessly.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Configuration, KoaContextWithOIDC, default as Provider } from 'oidc-provider';
import type { ActiveSession } from '../sessions/service.ts';
import type { Awaitable } from '../shared/awaitable.ts';
import type { User } from '../users/user.ts';
import { type AdapterStores, adapterFactory } from './adapter.ts';
import type { ClientRegistry } from './clients.ts';
import {
  ACCESS_TOKEN_ALG,
  ID_TOKEN_ALG,
  type KeyRing,
  type KeySnapshot,
  REFRESH_INTERVAL_MS,
} from './keys.ts';
import { errorPage, loggedOutPage, logoutPage } from './pages.ts';

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
  stores: AdapterStores;
  userById(id: bigint): Promise<User | undefined>;
  /** The browser's Usher session, from its cookie. */
  browserSession(cookieHeader: string | undefined): Awaitable<ActiveSession | undefined>;
  /** Ends the browser's Usher session (RP-initiated logout signs the person out of Usher too). */
  endBrowserSession(cookieHeader: string | undefined): Promise<void>;
  now: () => number;
  log: FastifyBaseLogger;
}

type OidcModule = typeof import('oidc-provider');

/** The key access tokens are signed with now (the provider's own choice: the first ES256 key). */
export interface SigningKey {
  kid: string;
  key: KeyObject;
}

/** The `sub` of a user: the id in decimal (CONTRACT). */
const SUBJECT = /^[1-9][0-9]{0,18}$/;

export class OidcHost {
  readonly #d: OidcHostDeps;
  #module: Promise<OidcModule> | undefined;
  #built: { provider: Provider; fingerprint: string; version: string; accessKey: SigningKey } | undefined;
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
      this.#configuration(snapshot, errors, interactionPolicy),
    );
    provider.proxy = this.#d.settings.proxy;
    provider.on('server_error', (_ctx, err) => this.#d.log.error({ err }, 'oidc: server error'));
    this.#endsUsherSessionOnLogout(provider);
    if (this.#built && this.#built.fingerprint !== snapshot.fingerprint)
      this.#d.log.info({ keys: snapshot.fingerprint }, 'oidc: signing keys changed; provider rebuilt');
    const jwk = snapshot.jwks.find((key) => (key as { alg?: string }).alg === ACCESS_TOKEN_ALG)!;
    const accessKey = {
      kid: String((jwk as { kid?: string }).kid),
      key: createPrivateKey({ key: jwk, format: 'jwk' }),
    };
    this.#built = { provider, fingerprint: snapshot.fingerprint, version, accessKey };
    this.#checkedAt = now;
    return provider;
  }

  /** The key POST /api/session/token signs with: the one the provider signs access tokens with. */
  async accessTokenKey(): Promise<SigningKey> {
    await this.provider();
    return this.#built!.accessKey;
  }

  /** Answers one request under /oidc (its URL already stripped of the prefix by middie). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const provider = await this.provider();
    await (provider.callback() as (req: IncomingMessage, res: ServerResponse) => Promise<void>)(req, res);
  }

  /** RP-initiated logout ends the Usher session too, or the next sign-in would find it and skip the login. */
  #endsUsherSessionOnLogout(provider: Provider): void {
    provider.use(async (ctx, next) => {
      await next();
      const params = (ctx as KoaContextWithOIDC).oidc?.params;
      if (ctx.method === 'POST' && ctx.path === '/session/end/confirm' && params?.logout) {
        await this.#d.endBrowserSession(ctx.get('cookie') || undefined);
        ctx.append('set-cookie', 'usher_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
      }
    });
  }

  #configuration(
    keys: KeySnapshot,
    errors: OidcModule['errors'],
    policy: OidcModule['interactionPolicy'],
  ): Configuration {
    const { settings } = this.#d;
    const d = this.#d;
    const resources = new Set(settings.resources);
    const interactions = policy.base();
    // The provider's own session stands only while the Usher session it came from does: signing
    // out of Usher (or a session ended by a password change) signs the person out here as well.
    interactions.get('login')!.checks.add(
      new policy.Check('usher_session', 'The Usher session has ended', async (ctx) => {
        const accountId = ctx.oidc.session?.accountId;
        if (!accountId) return policy.Check.NO_NEED_TO_PROMPT;
        const session = await d.browserSession(ctx.get('cookie') || undefined);
        return session?.userId.toString() === accountId
          ? policy.Check.NO_NEED_TO_PROMPT
          : policy.Check.REQUEST_PROMPT;
      }),
    );
    return {
      adapter: adapterFactory(this.#d.stores, this.#d.clients, errors),
      clients: [],
      jwks: { keys: keys.jwks as NonNullable<Configuration['jwks']>['keys'] },
      cookies: {
        keys: keys.cookieKeys,
        long: { signed: true, httpOnly: true, sameSite: 'lax' },
        short: { signed: true, httpOnly: true, sameSite: 'lax' },
      },
      findAccount: async (_ctx, sub) => {
        if (!SUBJECT.test(sub)) return undefined;
        const user = await d.userById(BigInt(sub));
        if (!user) return undefined;
        return {
          accountId: sub,
          claims: () => ({
            sub,
            name: user.name,
            email: user.email,
            email_verified: user.emailVerified,
          }),
        };
      },
      // Standalone claims (null): present whenever the session has them, in every ID token.
      claims: {
        acr: null,
        amr: null,
        auth_time: null,
        iss: null,
        sid: null,
        // amr with every ID token (RFC 8176): how the person signed in, as the Usher session was.
        openid: ['sub', 'amr'],
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
            ctx.body = logoutPage(form, ctx.oidc.client?.clientName);
          },
          postLogoutSuccessSource: async (ctx) => {
            ctx.type = 'html';
            ctx.body = loggedOutPage(ctx.oidc.client?.clientName);
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
          String(out.error),
          out.error_description ? String(out.error_description) : undefined,
        );
      },
    };
  }
}
