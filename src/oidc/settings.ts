// The OpenID Connect provider's settings: the APIs its access tokens are for, their lifetime, and
// the per-address limits on requests that store a row. Read by config.ts (the only reader of the
// environment).
import { ConfigError, type Env, integer, list } from '../kernel/settings.ts';

/** CONTRACT "Usher as an OpenID Connect provider, and tokens for your APIs". */
export interface OidcConfig {
  /** OIDC_RESOURCES: the audiences (APIs) JWT access tokens may be asked for, as absolute URIs. */
  resources: string[];
  /** ACCESS_TOKEN_TTL_SECONDS: how long an access token is good for. */
  accessTokenTtlSeconds: number;
}

export function oidcSettings(env: Env): OidcConfig {
  return {
    resources: resources(env),
    accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL_SECONDS', 300, 30, 86_400),
  };
}

/**
 * The provider's requests that may store a row, per client address per window, counted in the
 * shared database; more get 429: authorization requests (GET or POST /oidc/auth, each may store
 * an interaction) and pushed authorization requests (POST /oidc/request).
 */
export interface OidcLimitSettings {
  /** OIDC_AUTHORIZATIONS_MAX_PER_ADDRESS */
  authorizations: { perAddress: number; windowMs: number };
  /** OIDC_PUSHED_REQUESTS_MAX_PER_ADDRESS */
  pushed: { perAddress: number; windowMs: number };
}

export function oidcLimitSettings(env: Env): OidcLimitSettings {
  return {
    authorizations: {
      perAddress: integer(env, 'OIDC_AUTHORIZATIONS_MAX_PER_ADDRESS', 300, 1, 1_000_000),
      windowMs: 15 * 60 * 1000,
    },
    pushed: {
      perAddress: integer(env, 'OIDC_PUSHED_REQUESTS_MAX_PER_ADDRESS', 100, 1, 1_000_000),
      windowMs: 15 * 60 * 1000,
    },
  };
}

/**
 * OIDC_RESOURCES: RFC 8707 resource indicators, each an absolute http(s) URI without a fragment,
 * compared exactly (the `aud` a service checks), so written here as given.
 */
function resources(env: Env): string[] {
  const items = list(env, 'OIDC_RESOURCES', /^\S{1,512}$/, 'absolute URIs like https://api.example.com');
  for (const item of items) {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      // the error below
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || item.includes('#')) {
      throw new ConfigError(
        'OIDC_RESOURCES',
        `"${item}" is not accepted; expected absolute http(s) URIs without a fragment, like https://api.example.com`,
      );
    }
  }
  return [...new Set(items)];
}
