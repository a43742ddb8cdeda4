// Sign-in with providers: the providers (OAUTH_PROVIDERS and each one's OAUTH_X_ settings), whether
// they may create accounts, and the limits on calls to them. Read by config.ts (the only reader of
// the environment).
import { createPrivateKey } from 'node:crypto';
import { ConfigError, type Env, flag, integer, list, secondsAsMs } from '../kernel/settings.ts';
import { PROVIDER_ID } from '../shared/ids.ts';

/** CONTRACT "Sign in with a provider": the providers, in OAUTH_PROVIDERS's order. */
export interface OAuthConfig {
  providers: OAuthProviderConfig[];
  /** OAUTH_SIGNUP: a new identity without an account creates one (else SIGNUP_CLOSED). */
  signup: boolean;
  /** OAUTH_TIMEOUT_SECONDS: the limit on each call to a provider (discovery, token, user info, keys). */
  timeoutMs: number;
  /** OAUTH_STARTS_MAX_PER_ADDRESS: sign-ins started per client address per window (each stores a state); then 429. */
  starts: { perAddress: number; windowMs: number };
}

export const OAUTH_PRESETS = ['google', 'microsoft', 'apple', 'gitlab', 'github'] as const;

export interface OAuthProviderConfig {
  /** Lowercase letters, digits and `-`: the routes' `{provider}`. */
  id: string;
  /** The button's text (OAUTH_X_NAME). */
  name: string;
  /** `oidc`: discovery from the issuer; `github`: OAuth 2.0 with GitHub's user and email API. */
  kind: 'oidc' | 'github';
  /** The OpenID Connect issuer (discovery at {issuer}/.well-known/openid-configuration); for github, its web URL. */
  issuer: string;
  clientId: string;
  /** Undefined for Apple, whose secret is a JWT made from `apple`'s key. */
  clientSecret: string | undefined;
  apple: { teamId: string; keyId: string; privateKey: string } | undefined;
  /** Space-separated, as sent. */
  scopes: string;
  /** Further client ids whose ID tokens POST /api/sessions/oauth accepts (the platform apps'). */
  audiences: string[];
  /** GitHub's API base (OAUTH_GITHUB_API_URL); undefined for OpenID Connect providers. */
  apiUrl: string | undefined;
}

export function oauthSettings(env: Env): OAuthConfig {
  return {
    providers: oauthProviders(env),
    signup: flag(env, 'OAUTH_SIGNUP', true),
    timeoutMs: secondsAsMs(env, 'OAUTH_TIMEOUT_SECONDS', 10, 1, 120),
    starts: {
      perAddress: integer(env, 'OAUTH_STARTS_MAX_PER_ADDRESS', 300, 1, 1_000_000),
      windowMs: 15 * 60 * 1000,
    },
  };
}

const PRESET_NAMES: Record<(typeof OAUTH_PRESETS)[number], string> = {
  google: 'Google',
  microsoft: 'Microsoft',
  apple: 'Apple',
  gitlab: 'GitLab',
  github: 'GitHub',
};

/** Loopback hosts, where an http:// provider is allowed (a provider run on the same machine, in tests). */
const LOOPBACK_HOST = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/;

/**
 * An https URL, or http on a loopback host; no query or fragment. Kept as written: an issuer must
 * match its discovery document's exactly, trailing slash included.
 */
function providerUrl(name: string, raw: string): string {
  try {
    const url = new URL(raw);
    const secure =
      url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOST.test(url.hostname));
    if (secure && !url.search && !url.hash && !url.username && !url.password) return raw;
  } catch {
    // fall through to the error below
  }
  throw new ConfigError(
    name,
    `"${raw}" is not accepted; expected an https:// URL (http:// only on a loopback host)`,
  );
}

function oauthProviders(env: Env): OAuthProviderConfig[] {
  const ids = list(env, 'OAUTH_PROVIDERS', PROVIDER_ID, 'provider ids of lowercase letters, digits and -');
  if (new Set(ids).size !== ids.length)
    throw new ConfigError('OAUTH_PROVIDERS', 'a provider id is listed twice');
  return ids.map((id) => {
    const key = `OAUTH_${id.toUpperCase().replaceAll('-', '_')}_`;
    const get = (suffix: string) => {
      const raw = env[key + suffix]?.trim();
      return raw === undefined || raw === '' ? undefined : raw;
    };
    const need = (suffix: string, why: string) => {
      const value = get(suffix);
      if (value === undefined) throw new ConfigError(key + suffix, `is required ${why}`);
      return value;
    };
    const preset = (OAUTH_PRESETS as readonly string[]).includes(id)
      ? (id as (typeof OAUTH_PRESETS)[number])
      : undefined;
    const clientId = need('CLIENT_ID', `for the provider ${id}`);
    const apple =
      preset === 'apple'
        ? {
            teamId: need('TEAM_ID', 'for Apple'),
            keyId: need('KEY_ID', 'for Apple'),
            privateKey: applePrivateKey(key, need('PRIVATE_KEY', 'for Apple')),
          }
        : undefined;
    const clientSecret = apple ? undefined : need('CLIENT_SECRET', `for the provider ${id}`);
    const name = get('NAME') ?? (preset ? PRESET_NAMES[preset] : id);
    if (name.length > 64 || /\p{Cc}/u.test(name))
      throw new ConfigError(`${key}NAME`, 'expected one line of at most 64 characters');
    const audiences = list(env, `${key}AUDIENCES`, /^[\x21-\x7e]{1,255}$/, 'client ids, comma-separated');
    if (preset === 'github') {
      // Bases that paths are appended to: no trailing slash.
      const base = (name: string, raw: string) => providerUrl(name, raw).replace(/\/+$/, '');
      const issuer = base('OAUTH_GITHUB_URL', get('URL') ?? 'https://github.com');
      const apiUrl = base('OAUTH_GITHUB_API_URL', get('API_URL') ?? 'https://api.github.com');
      return {
        id,
        name,
        kind: 'github',
        issuer,
        clientId,
        clientSecret,
        apple,
        scopes: get('SCOPES') ?? 'read:user user:email',
        audiences,
        apiUrl,
      };
    }
    const issuer = providerUrl(`${key}ISSUER`, get('ISSUER') ?? presetIssuer(preset, get('TENANT'), key));
    const scopes = get('SCOPES') ?? (preset === 'apple' ? 'openid email name' : 'openid email profile');
    if (!scopes.split(' ').includes('openid'))
      throw new ConfigError(`${key}SCOPES`, 'must include openid for an OpenID Connect provider');
    return {
      id,
      name,
      kind: 'oidc',
      issuer,
      clientId,
      clientSecret,
      apple,
      scopes,
      audiences,
      apiUrl: undefined,
    };
  });
}

function presetIssuer(
  preset: (typeof OAUTH_PRESETS)[number] | undefined,
  tenant: string | undefined,
  key: string,
) {
  if (preset === 'google') return 'https://accounts.google.com';
  if (preset === 'apple') return 'https://appleid.apple.com';
  if (preset === 'gitlab') return 'https://gitlab.com';
  if (preset === 'microsoft') {
    const t = tenant ?? 'common';
    if (!/^[A-Za-z0-9.-]{1,64}$/.test(t))
      throw new ConfigError(
        `${key}TENANT`,
        'expected common, organizations, consumers, a tenant id or domain',
      );
    return `https://login.microsoftonline.com/${t}/v2.0`;
  }
  throw new ConfigError(
    `${key}ISSUER`,
    'is required for a provider that is not a preset (google, microsoft, apple, gitlab, github)',
  );
}

/** Apple's .p8 key, as PEM text (newlines may come as \\n in an environment file). */
function applePrivateKey(key: string, raw: string): string {
  const pem = raw.replaceAll('\\n', '\n');
  let curve: string | undefined;
  try {
    // Read now, so a key that cannot sign Apple's ES256 client secret stops the start, not a sign-in.
    curve = createPrivateKey(pem).asymmetricKeyDetails?.namedCurve;
  } catch {
    curve = undefined;
  }
  if (curve !== 'prime256v1')
    throw new ConfigError(
      `${key}PRIVATE_KEY`,
      'expected the .p8 key from Apple (an EC P-256 key), as PEM (-----BEGIN PRIVATE KEY-----…)',
    );
  return pem;
}
