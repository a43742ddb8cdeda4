// The providers Usher signs in with, through a certified relying-party library (openid-client:
// discovery, PKCE, state, nonce, RFC 9207's `iss`, ID-token validation) for OpenID Connect, and
// the same library's OAuth 2.0 calls plus GitHub's user and email API for GitHub. Nothing here
// speaks the protocol by hand. Every call to a provider has a time limit (OAUTH_TIMEOUT_SECONDS).
import { createPrivateKey, randomBytes } from 'node:crypto';
import type * as Jose from 'jose';
import type * as Oidc from 'openid-client';
import type { OAuthProviderConfig } from '../config.ts';

/** Who the provider says is there: the identity's key, and what the account rules read. */
export interface ProviderProfile {
  issuer: string;
  subject: string;
  /** Undefined when the provider shares none (or, for GitHub, no primary verified one). */
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
}

/** What the start leaves for the callback to check against. */
export interface Checks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The provider failed, refused or answered something that does not check out: OAUTH_FAILED. */
export class ProviderError extends Error {
  /** A short, secret-free reason for the log. */
  readonly reason: string;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`provider sign-in failed: ${reason}`, options);
    this.reason = reason;
    this.name = 'ProviderError';
  }
}

/** The ID token a native app sent does not check out (besides jose's own verdicts): 401. */
export class TokenRejected extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'TokenRejected';
  }
}

/** A new sign-in's state, nonce and PKCE verifier. */
export function newChecks(): Checks {
  const random = () => randomBytes(32).toString('base64url');
  // 256 random bits base64url: 43 characters, RFC 7636's verifier of the shortest allowed length.
  return { state: random(), nonce: random(), codeVerifier: random() };
}

/** The person cancelled at the provider (`error=access_denied`): OAUTH_DENIED. */
export class ProviderDenied extends Error {}

const APPLE_AUDIENCE = 'https://appleid.apple.com';
/** Apple's client secret is a JWT of at most 6 months; Usher's live an hour, renewed after 50 minutes. */
const APPLE_SECRET_TTL_S = 3600;
const APPLE_SECRET_RENEW_MS = 50 * 60 * 1000;

/** Why a thrown error failed, without anything secret (openid-client's codes and messages carry none). */
export function reasonOf(error: unknown): string {
  if (error instanceof ProviderError) return error.reason;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const name = error.name === 'TimeoutError' || error.name === 'AbortError' ? 'timeout' : error.name;
    return `${typeof code === 'string' ? code : name}: ${error.message}`.slice(0, 300);
  }
  return 'unknown error';
}

/**
 * The libraries, loaded at first use: a deployment without providers never loads them at start
 * (their own weight is small: idle RSS moved by about 1 MiB, within the run-to-run spread).
 */
let loaded: Promise<{ oidc: typeof Oidc; jose: typeof Jose }> | undefined;
function libraries(): Promise<{ oidc: typeof Oidc; jose: typeof Jose }> {
  loaded ??= Promise.all([import('openid-client'), import('jose')]).then(([oidc, jose]) => ({ oidc, jose }));
  return loaded;
}

const isLoopbackHttp = (url: string) => new URL(url).protocol === 'http:';

/** One configured provider. */
export class Provider {
  readonly settings: OAuthProviderConfig;
  readonly redirectUri: string;
  readonly #timeoutMs: number;
  #discovered: Promise<Oidc.Configuration> | undefined;
  #jwks: ReturnType<typeof Jose.createRemoteJWKSet> | undefined;
  #apple: { config: Oidc.Configuration; renewAt: number } | undefined;

  constructor(settings: OAuthProviderConfig, publicUrl: string, timeoutMs: number) {
    this.settings = settings;
    this.redirectUri = `${publicUrl}/api/oauth/${settings.id}/callback`;
    this.#timeoutMs = timeoutMs;
  }

  get id(): string {
    return this.settings.id;
  }

  /** Apple posts its answer as a form (it must, when name or email is asked for). */
  get formPost(): boolean {
    return this.settings.apple !== undefined;
  }

  /**
   * The client's configuration: discovered once (and again after a failure, so a provider that
   * was down at the start is found at first use); GitHub's endpoints are known. Apple's secret is a
   * short-lived JWT: its configuration is made again with each new secret (and keeps its key cache
   * until then).
   */
  async configuration(): Promise<Oidc.Configuration> {
    const discovered = await this.#discover();
    if (!this.settings.apple) return discovered;
    const now = Date.now();
    if (this.#apple && now < this.#apple.renewAt) return this.#apple.config;
    const secret = await this.#appleClientSecret(now);
    const { oidc } = await libraries();
    const config = new oidc.Configuration(
      discovered.serverMetadata(),
      this.settings.clientId,
      { client_secret: secret },
      oidc.ClientSecretPost(secret),
    );
    config.timeout = this.#timeoutSeconds;
    oidc.enableNonRepudiationChecks(config);
    if (isLoopbackHttp(this.settings.issuer)) oidc.allowInsecureRequests(config);
    this.#apple = { config, renewAt: now + APPLE_SECRET_RENEW_MS };
    return config;
  }

  #discover(): Promise<Oidc.Configuration> {
    if (this.#discovered) return this.#discovered;
    const pending = libraries().then(({ oidc }) => this.#discoverWith(oidc));
    this.#discovered = pending;
    pending.catch(() => {
      if (this.#discovered === pending) this.#discovered = undefined;
    });
    return pending;
  }

  #discoverWith(oidc: typeof Oidc): Promise<Oidc.Configuration> {
    const { issuer, clientId, clientSecret, kind } = this.settings;
    const insecure = isLoopbackHttp(issuer);
    const auth = clientSecret === undefined ? oidc.None() : oidc.ClientSecretPost(clientSecret);
    if (kind === 'github') {
      const config = new oidc.Configuration(
        {
          issuer,
          authorization_endpoint: `${issuer}/login/oauth/authorize`,
          token_endpoint: `${issuer}/login/oauth/access_token`,
        },
        clientId,
        { client_secret: clientSecret },
        auth,
      );
      config.timeout = this.#timeoutSeconds;
      if (insecure) oidc.allowInsecureRequests(config);
      return Promise.resolve(config);
    }
    return oidc.discovery(new URL(issuer), clientId, { client_secret: clientSecret }, auth, {
      timeout: this.#timeoutSeconds,
      // openid-client trusts the TLS of the token endpoint for the ID token's signature unless
      // told otherwise; Usher checks it against the provider's keys as well (defence in depth,
      // and the only check on a loopback http provider).
      execute: insecure
        ? [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks]
        : [oidc.enableNonRepudiationChecks],
    });
  }

  get #timeoutSeconds(): number {
    return Math.max(1, Math.ceil(this.#timeoutMs / 1000));
  }

  async #appleClientSecret(now: number): Promise<string> {
    const apple = this.settings.apple!;
    const { jose } = await libraries();
    return new jose.SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: apple.keyId })
      .setIssuer(apple.teamId)
      .setSubject(this.settings.clientId)
      .setAudience(APPLE_AUDIENCE)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(now / 1000) + APPLE_SECRET_TTL_S)
      .sign(createPrivateKey(apple.privateKey));
  }

  /** Where the browser goes to sign in at the provider: the exact redirect URI, state, nonce, PKCE S256. */
  async authorizationUrl(checks: Checks): Promise<URL> {
    const config = await this.configuration();
    const { oidc } = await libraries();
    const parameters: Record<string, string> = {
      redirect_uri: this.redirectUri,
      scope: this.settings.scopes,
      state: checks.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    };
    if (this.settings.kind === 'oidc') parameters.nonce = checks.nonce;
    if (this.formPost) parameters.response_mode = 'form_post';
    return oidc.buildAuthorizationUrl(config, parameters);
  }

  /**
   * The callback, its state already taken and matched (service.ts): the library checks RFC 9207's
   * `iss` where the provider sends it, exchanges the code with the PKCE verifier at the exact
   * redirect URI, and validates the ID token (iss, aud, azp, exp, iat, nonce, and its signature by
   * the provider's published keys, which enableNonRepudiationChecks turns on). The provider's
   * tokens are used for the profile and dropped.
   */
  async callback(response: URLSearchParams, checks: Checks): Promise<ProviderProfile> {
    if (response.get('error') === 'access_denied') throw new ProviderDenied();
    const config = await this.configuration();
    const current = new URL(`${this.redirectUri}?${response}`);
    if (this.settings.kind === 'github') return this.#github(config, current, checks);
    const { oidc } = await libraries();
    const tokens = await oidc.authorizationCodeGrant(config, current, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new ProviderError('no ID token');
    let info: Record<string, unknown> = claims;
    // Some providers put the profile only in the user info (OpenID Connect Core 5.4).
    if (claims.email === undefined && config.serverMetadata().userinfo_endpoint)
      info = { ...(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
    return profileOf(claims.iss, claims.sub, info);
  }

  /** GitHub: OAuth 2.0 with PKCE, then its user API; an email only if primary and verified. */
  async #github(config: Oidc.Configuration, current: URL, checks: Checks): Promise<ProviderProfile> {
    const { oidc } = await libraries();
    const tokens = await oidc.authorizationCodeGrant(config, current, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      idTokenExpected: false,
    });
    const api = this.settings.apiUrl!;
    const get = async (path: string) => {
      const headers = new Headers({ accept: 'application/vnd.github+json', 'user-agent': 'Usher' });
      const response = await oidc.fetchProtectedResource(
        config,
        tokens.access_token,
        new URL(`${api}${path}`),
        'GET',
        undefined,
        headers,
      );
      if (!response.ok) throw new ProviderError(`GitHub ${path} answered ${response.status}`);
      return (await response.json()) as unknown;
    };
    const user = (await get('/user')) as { id?: unknown; name?: unknown; login?: unknown };
    if (typeof user.id !== 'number' && typeof user.id !== 'string')
      throw new ProviderError('GitHub user without id');
    const emails = (await get('/user/emails')) as unknown;
    const primary = Array.isArray(emails)
      ? (emails as { email?: unknown; primary?: unknown; verified?: unknown }[]).find(
          (e) => e.primary === true && e.verified === true && typeof e.email === 'string',
        )
      : undefined;
    const name =
      typeof user.name === 'string' && user.name
        ? user.name
        : typeof user.login === 'string'
          ? user.login
          : undefined;
    return {
      issuer: this.settings.issuer,
      subject: String(user.id),
      email: primary?.email as string | undefined,
      emailVerified: primary !== undefined,
      name,
    };
  }

  /**
   * An ID token a native app got from the platform's SDK: signature by the provider's published
   * keys, issuer, audience (the client id or one of OAUTH_X_AUDIENCES), expiry, and the nonce
   * when the app sends one.
   */
  async verifyIdToken(idToken: string, nonce: string | undefined): Promise<ProviderProfile> {
    const metadata = (await this.configuration()).serverMetadata();
    if (!metadata.jwks_uri) throw new ProviderError('the provider publishes no keys');
    const { jose } = await libraries();
    this.#jwks ??= jose.createRemoteJWKSet(new URL(metadata.jwks_uri), { timeoutDuration: this.#timeoutMs });
    let issuer = metadata.issuer;
    if (issuer.includes('{tenantid}')) {
      // Microsoft's multi-tenant issuer is a template: the token's tenant fills it in.
      const tid = jose.decodeJwt(idToken).tid;
      if (typeof tid !== 'string' || !/^[0-9a-f-]{36}$/.test(tid))
        throw new TokenRejected('no tenant in the ID token');
      issuer = issuer.replace('{tenantid}', tid);
    }
    const { payload } = await jose.jwtVerify(idToken, this.#jwks, {
      issuer: issuer === 'https://accounts.google.com' ? [issuer, 'accounts.google.com'] : issuer,
      audience: [this.settings.clientId, ...this.settings.audiences],
      algorithms: metadata.id_token_signing_alg_values_supported?.filter((alg) => alg !== 'none') ?? [
        'RS256',
      ],
      requiredClaims: ['sub', 'exp', 'iat'],
      clockTolerance: 30,
    });
    if (nonce !== undefined && payload.nonce !== nonce) throw new TokenRejected('the nonce does not match');
    // Keyed on the issuer as discovery names it (Google's bare form is the same issuer), so the web
    // callback and the native route find one identity.
    return profileOf(issuer, payload.sub!, payload);
  }
}

function profileOf(
  issuer: string,
  subject: string,
  claims: Jose.JWTPayload | Record<string, unknown>,
): ProviderProfile {
  const email = typeof claims.email === 'string' && claims.email !== '' ? claims.email : undefined;
  // Apple sends the flag as a string.
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  const name = typeof claims.name === 'string' ? claims.name : undefined;
  return { issuer, subject, email, emailVerified: email !== undefined && verified, name };
}

/** The configured providers, by id. */
export class Providers {
  readonly #byId: Map<string, Provider>;
  constructor(settings: readonly OAuthProviderConfig[], publicUrl: string, timeoutMs: number) {
    this.#byId = new Map(settings.map((s) => [s.id, new Provider(s, publicUrl, timeoutMs)]));
  }

  get(id: string): Provider | undefined {
    return this.#byId.get(id);
  }

  list(): Provider[] {
    return [...this.#byId.values()];
  }
}
