// Reads and checks Usher's settings, and does nothing else: the only module that reads them from
// process.env; everything else receives a validated Config. (The entry file, server.ts, hands the
// environment to launch.ts only to decide whether Node must start again with what it reads at start.)
// The core settings are read here; each feature's section is read and checked by its own
// `src/<feature>/settings.ts`, with the kernel's readers (kernel/settings.ts), and assembled below.
import { availableParallelism } from 'node:os';
import { type AuditSettings, auditSettings } from './audit/settings.ts';
import { type CatalogSettings, catalogSettings } from './catalog/settings.ts';
import { ConfigError, type Env, environmentCopy, integer, list, oneOf, text } from './kernel/settings.ts';
import { type MailSettings, mailSettings } from './mail/settings.ts';
import { emailSigninCreatesAccountsSetting } from './mail-signin/settings.ts';
import { type OAuthConfig, oauthSettings } from './oauth/settings.ts';
import { type OidcConfig, type OidcLimitSettings, oidcLimitSettings, oidcSettings } from './oidc/settings.ts';
import { type PasskeyOptionsSettings, passkeyOptionsSettings } from './passkeys/settings.ts';
import {
  type PasswordHashConfig,
  passwordHashSettings,
  type ThreadpoolSettings,
  threadpoolSettings,
} from './passwords/settings.ts';
import { type PasswordResetSettings, passwordResetSettings } from './recovery/settings.ts';
import { type SessionSettings, sessionSettings } from './sessions/settings.ts';
import { requireVerifiedEmailSetting, type ThrottleSettings, throttleSettings } from './signin/settings.ts';
import { type TokenSettings, tokenSettings } from './tokens/settings.ts';
import {
  type EmailChangeSettings,
  emailChangeSettings,
  type RegistrationSettings,
  registrationSettings,
  type UserLookup,
  userLookupSetting,
} from './users/settings.ts';
import { type WebhookSettings, webhookSettings } from './webhooks/settings.ts';

// What was declared here before the sections moved, for the code and tests that import it from here.
export type { CreationLimits } from './catalog/settings.ts';
export { ConfigError, type Env } from './kernel/settings.ts';
export { OAUTH_PRESETS, type OAuthConfig, type OAuthProviderConfig } from './oauth/settings.ts';
export type { OidcConfig } from './oidc/settings.ts';
export { ARGON2_MINIMUM, type PasswordHashConfig } from './passwords/settings.ts';
export { PROVIDER_ID } from './shared/ids.ts';
export { USER_LOOKUPS, type UserLookup } from './users/settings.ts';

export const PROFILES = ['a', 'b'] as const;
export type Profile = (typeof PROFILES)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  host: string;
  port: number;
  profile: Profile;
  databaseUrl: string;
  logLevel: LogLevel;
  /** Number of processes sharing the port through node:cluster. */
  workers: number;
  database: {
    poolSize: number;
    connectTimeoutMs: number;
    statementTimeoutMs: number;
    /**
     * `transaction`: PostgreSQL through a pooler that hands a server connection out per transaction
     * (PgBouncer in transaction mode, RDS Proxy, Supavisor): no named statements, no session state,
     * no startup parameters; the statement timeout and the migration lock are taken per transaction.
     */
    pooler: DatabasePooler;
  };
  passwordHash: PasswordHashConfig;
  /** libuv's threadpool, where argon2 runs (with Node's async fs, dns and crypto). */
  threadpool: ThreadpoolSettings;
  session: SessionSettings;
  throttle: ThrottleSettings;
  /** Proxies whose X-Forwarded-For / -Proto are believed (addresses or CIDR ranges); none by default. */
  trustProxy: string[];
  /** Origins allowed to call with CORS (credentials included); none by default. */
  corsOrigins: string[];
  /** Where users reach Usher's pages (links in mails, the passkey relying party); no trailing slash. */
  publicUrl: string;
  /** Where API users reach the operators (the document's info.contact); PUBLIC_URL by default. */
  contactUrl: string;
  mail: MailSettings;
  audit: AuditSettings;
  webhooks: WebhookSettings;
  tokens: TokenSettings;
  /**
   * EMAIL_SIGNIN_CREATES_ACCOUNTS: a sign-in link or code is mailed to an email with no account
   * too, and using it creates the account (email verified, no password).
   */
  emailSigninCreatesAccounts: boolean;
  passwordReset: PasswordResetSettings;
  /** Per user: how many products and reviews they may own, and create per minute (decision 152). */
  catalog: CatalogSettings;
  registration: RegistrationSettings;
  passkeyOptions: PasskeyOptionsSettings;
  oidcLimits: OidcLimitSettings;
  emailChange: EmailChangeSettings;
  /** Refuse sign-in (403) to accounts whose email is not verified. */
  requireVerifiedEmail: boolean;
  /** Who may read GET /api/users/{id} and GET /api/users. */
  userLookup: UserLookup;
  /**
   * ENCRYPTION_KEY: the AES-256-GCM key TOTP secrets are sealed with. Unset: on SQLite a key file
   * next to the database (kernel/sealing.ts, keySource); on PostgreSQL TOTP set-up is unavailable.
   */
  encryptionKey: Buffer | undefined;
  /** Sign-in with providers (OAUTH_*): none configured by default. */
  oauth: OAuthConfig;
  /** Usher as an OpenID Connect provider (oidc/), and the JWT access tokens it issues. */
  oidc: OidcConfig;
  /**
   * The environment loadConfig read, frozen: a feature outside the built-in set reads its own
   * section from it at composition, with kernel/settings.ts's readers. It holds every secret, so
   * it shows nothing of itself in JSON or util.inspect, and the logger redacts it (app.ts).
   */
  environment: Env;
}

/** Reads and validates every setting; throws ConfigError naming the first bad one. */
export function loadConfig(env: Env = process.env): Config {
  // Settings are checked in the order of Config's properties: with several wrong, the first of
  // them in that order is the one named.
  const hostName = host(env);
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const storeUrl = databaseUrl(env);
  const profile = oneOf(env, 'PROFILE', PROFILES, 'b');
  const logLevel = oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info');
  const workerCount = workers(env);
  const database = {
    poolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    connectTimeoutMs: integer(env, 'DATABASE_CONNECT_TIMEOUT_MS', 2000, 100, 60000),
    statementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 5000, 100, 600000),
    pooler: pooler(env, storeUrl),
  };
  const passwordHash = passwordHashSettings(env);
  return {
    host: hostName,
    port,
    profile,
    databaseUrl: storeUrl,
    logLevel,
    workers: workerCount,
    database,
    passwordHash,
    threadpool: threadpoolSettings(env, { databaseUrl: storeUrl, hashConcurrency: passwordHash.concurrency }),
    session: sessionSettings(env),
    throttle: throttleSettings(env),
    trustProxy: list(
      env,
      'TRUST_PROXY',
      IP_OR_CIDR,
      'IP addresses or CIDR ranges, comma-separated, or loopback',
    ),
    corsOrigins: list(env, 'CORS_ORIGINS', ORIGIN, 'origins like https://app.example.com, comma-separated'),
    publicUrl: publicUrl(env, hostName, port),
    // Worked out again rather than before the object, so settings are still checked in this order.
    contactUrl: contactUrl(env, publicUrl(env, hostName, port)),
    mail: mailSettings(env),
    audit: auditSettings(env),
    webhooks: webhookSettings(env),
    tokens: tokenSettings(env),
    emailSigninCreatesAccounts: emailSigninCreatesAccountsSetting(env),
    passwordReset: passwordResetSettings(env),
    catalog: catalogSettings(env),
    registration: registrationSettings(env),
    passkeyOptions: passkeyOptionsSettings(env),
    oidcLimits: oidcLimitSettings(env),
    emailChange: emailChangeSettings(env),
    requireVerifiedEmail: requireVerifiedEmailSetting(env),
    userLookup: userLookupSetting(env),
    encryptionKey: encryptionKey(env),
    oauth: oauthSettings(env),
    oidc: oidcSettings(env),
    environment: environmentCopy(env),
  };
}

export type DatabasePooler = 'none' | 'transaction';
const POOLERS: readonly DatabasePooler[] = ['none', 'transaction'];

/**
 * DATABASE_POOLER, or when it is unset `transaction` for a URL that says `pgbouncer=true` (the
 * mark Prisma's users, and the pooler URLs of hosted PostgreSQL, already carry) and `none` otherwise.
 */
function pooler(env: Env, url: string): DatabasePooler {
  const sqlite = url.startsWith('sqlite:');
  if (text(env, 'DATABASE_POOLER') === undefined) {
    if (sqlite) return 'none';
    return new URL(url).searchParams.get('pgbouncer') === 'true' ? 'transaction' : 'none';
  }
  const value = oneOf(env, 'DATABASE_POOLER', POOLERS, 'none');
  if (sqlite && value !== 'none')
    throw new ConfigError('DATABASE_POOLER', 'is for PostgreSQL; SQLite has no pooler (leave it unset)');
  return value;
}

function databaseUrl(env: Env): string {
  const raw = text(env, 'DATABASE_URL');
  if (raw === undefined) return 'sqlite:./data/usher.db';
  if (/^sqlite:.+/.test(raw)) return raw;
  if (/^postgres(ql)?:\/\/.+/.test(raw)) {
    try {
      new URL(raw);
      return raw;
    } catch {
      // fall through to the error below
    }
  }
  throw new ConfigError(
    'DATABASE_URL',
    'expected sqlite:<path>, sqlite::memory:, or postgres://user@host:port/database',
  );
}

function contactUrl(env: Env, fallback: string): string {
  const raw = text(env, 'CONTACT_URL');
  if (raw === undefined) return fallback;
  if (!/^(https?:\/\/|mailto:)\S+$/.test(raw))
    throw new ConfigError('CONTACT_URL', 'expected an https://, http:// or mailto: URL');
  return raw;
}

function publicUrl(env: Env, host: string, port: number): string {
  const raw = text(env, 'PUBLIC_URL');
  if (raw === undefined) {
    // Loopback and any-address defaults are named localhost: browsers refuse IP addresses as a
    // passkey's relying party, and localhost is a secure context for them over plain http.
    const local = ['0.0.0.0', '::', '127.0.0.1', '::1'].includes(host);
    const shown = local ? 'localhost' : host.includes(':') ? `[${host}]` : host;
    return `http://${shown}:${port}`;
  }
  try {
    const url = new URL(raw);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && !url.search && !url.hash) {
      return raw.replace(/\/+$/, '');
    }
  } catch {
    // fall through to the error below
  }
  throw new ConfigError(
    'PUBLIC_URL',
    `"${raw}" is not accepted; expected an http(s) URL like https://id.example.com`,
  );
}

function host(env: Env): string {
  const raw = text(env, 'HOST');
  if (raw === undefined) return '127.0.0.1';
  if (!/^[A-Za-z0-9.:[\]-]+$/.test(raw)) {
    throw new ConfigError('HOST', `"${raw}" is not accepted; expected a host name or IP address`);
  }
  return raw;
}

function workers(env: Env): number {
  if (env.WORKERS === 'auto') return availableParallelism();
  return integer(env, 'WORKERS', 1, 1, 256);
}

const IP_OR_CIDR =
  /^(\d{1,3}(\.\d{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)(\/\d{1,3})?$|^(loopback|linklocal|uniquelocal)$/;
const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/;

function encryptionKey(env: Env): Buffer | undefined {
  const raw = text(env, 'ENCRYPTION_KEY');
  if (raw === undefined) return undefined;
  // Strict base64 of exactly 32 bytes: Buffer.from would silently skip stray characters.
  const key = /^[A-Za-z0-9+/]{43}=$/.test(raw.trim()) ? Buffer.from(raw.trim(), 'base64') : undefined;
  if (key?.length !== 32) {
    throw new ConfigError(
      'ENCRYPTION_KEY',
      'expected 32 random bytes in base64 (44 characters), e.g. the output of `openssl rand -base64 32`',
    );
  }
  return key;
}
