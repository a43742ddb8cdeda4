// Reads and checks Usher's settings, and does nothing else: the only module that reads them from
// process.env; everything else receives a validated Config. (The entry file, server.ts, hands the
// environment to launch.ts only to decide whether Node must start again with what it reads at start.)
import { createPrivateKey } from 'node:crypto';
import { availableParallelism } from 'node:os';
import {
  loadOperatorTemplates,
  NO_OPERATOR_TEMPLATES,
  type OperatorTemplates,
  TemplateError,
} from './mail/operator-templates.ts';
import type { PoolPriority } from './shared/threadpool.ts';

export const PROFILES = ['a', 'b'] as const;
export type Profile = (typeof PROFILES)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

export const USER_LOOKUPS = ['public', 'signed-in', 'self'] as const;
export type UserLookup = (typeof USER_LOOKUPS)[number];
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface PasswordHashConfig {
  /** argon2id memory cost in KiB. */
  memoryKiB: number;
  /** argon2id passes (time cost). */
  passes: number;
  parallelism: number;
  /** How many hashes may run at once; the rest queue, so hashing never starves the libuv pool. */
  concurrency: number;
  /** How many hashes may wait for a slot; beyond that a request is refused at once (503). */
  queueLimit: number;
  /**
   * Percent of the slots and of the queue kept for sign-ins (HASH_SIGNIN_SHARE): other hashing
   * (registration, password changes) holds at most the rest. 50 when absent.
   */
  signinSharePercent?: number;
}

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
  threadpool: {
    /** Threads: the hash slots plus spares, so a log write never waits behind hashes. */
    size: number;
    /**
     * How the pool's threads are scheduled (Linux): `idle` (SCHED_IDLE) or a nice value; either way
     * the event loop wins the CPU from hashes. 0 leaves them alone.
     */
    priority: PoolPriority;
  };
  session: {
    /** Lifetime from sign-in. */
    absoluteTtlMs: number;
    /** Lifetime without a request. */
    idleTtlMs: number;
    /** `auto`: Secure cookie when the request came over https; `always`: every time. */
    cookieSecure: 'auto' | 'always';
  };
  throttle: {
    windowMs: number;
    perAccountAddress: number;
    perAccount: number;
    perAddress: number;
    concurrentPerAccount: number;
    concurrentPerAddress: number;
    /** How long a client that signed in stays a known device of the account; 0: no known devices. */
    deviceTtlMs: number;
  };
  /** Proxies whose X-Forwarded-For / -Proto are believed (addresses or CIDR ranges); none by default. */
  trustProxy: string[];
  /** Origins allowed to call with CORS (credentials included); none by default. */
  corsOrigins: string[];
  /** Where users reach Usher's pages (links in mails, the passkey relying party); no trailing slash. */
  publicUrl: string;
  /** Where API users reach the operators (the document's info.contact); PUBLIC_URL by default. */
  contactUrl: string;
  mail: {
    /** smtp:// or smtps:// URL of the server that sends; unset: messages are written to `outboxDir`. */
    smtpUrl: string | undefined;
    /** The From header of every message. */
    from: string;
    /** Where .eml files go when no SMTP server is configured. */
    outboxDir: string;
    /** How long a message is retried before it is marked failed. */
    maxAgeMs: number;
    /** How long a sender's claim on a message lasts (a killed sender's claim is taken over after it). */
    claimMs: number;
    /** How often each instance looks for messages to send (new ones are sent at once regardless). */
    pollMs: number;
    /** MAIL_TEMPLATES_DIR's texts and templates, checked at start (none when it is unset). */
    templates: OperatorTemplates;
  };
  audit: {
    /** How long audit records are kept (AUDIT_RETENTION_DAYS). */
    retentionMs: number;
    /** Whether successful sign-ins are recorded (failures and throttled ones always are). */
    signins: boolean;
  };
  webhooks: {
    /** Receivers on private, loopback or link-local addresses (and plain http) are allowed. */
    allowPrivate: boolean;
    /** How long a delivery is retried before it is marked failed. */
    retryMs: number;
    /** How long an instance's claim on a delivery lasts (longer than `timeoutMs`). */
    claimMs: number;
    /** How often each instance looks for deliveries due (new ones go out at once regardless). */
    pollMs: number;
    /** How long a receiver has to answer one delivery. */
    timeoutMs: number;
    /** Deliveries in flight at once on an instance, and to one receiver. */
    concurrency: number;
    perReceiver: number;
  };
  tokens: {
    passwordResetTtlMs: number;
    emailVerifyTtlMs: number;
  };
  /**
   * EMAIL_SIGNIN_CREATES_ACCOUNTS: a sign-in link or code is mailed to an email with no account
   * too, and using it creates the account (email verified, no password).
   */
  emailSigninCreatesAccounts: boolean;
  passwordReset: {
    /** Reset mails per account per window; further asks still answer 202 and send nothing. */
    perAccount: number;
    /** Asks per client address per window; further asks get 429. */
    perAddress: number;
    windowMs: number;
  };
  /** Per user: how many products and reviews they may own, and create per minute (decision 152). */
  catalog: { products: CreationLimits; reviews: CreationLimits };
  registration: {
    /** Registrations per client address (IPv6: per /64) per window, counted in the shared database; more get 429. */
    perAddress: number;
    windowMs: number;
    /** Registrations from one client address being worked on at once in this process; more get 429. */
    concurrentPerAddress: number;
    /** Registrations being worked on at once in this process, from anywhere; more get 503. */
    concurrent: number;
  };
  /** Passkey sign-in options per client address per window (each stores a challenge); more get 429. */
  passkeyOptions: { perAddress: number; windowMs: number };
  /**
   * The OpenID Connect provider's requests that may store a row, per client address per window,
   * counted in the shared database; more get 429: authorization requests (GET or POST /oidc/auth,
   * each may store an interaction) and pushed authorization requests (POST /oidc/request).
   */
  oidcLimits: {
    /** OIDC_AUTHORIZATIONS_MAX_PER_ADDRESS */
    authorizations: { perAddress: number; windowMs: number };
    /** OIDC_PUSHED_REQUESTS_MAX_PER_ADDRESS */
    pushed: { perAddress: number; windowMs: number };
  };
  emailChange: {
    /** Email changes per account per window; more get 429. */
    perAccount: number;
    /** Mails email changes send to one address (new or old) per window; a change that would send more gets 429. */
    perMailbox: number;
    windowMs: number;
  };
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
}

/** CONTRACT "Usher as an OpenID Connect provider, and tokens for your APIs". */
export interface OidcConfig {
  /** OIDC_RESOURCES: the audiences (APIs) JWT access tokens may be asked for, as absolute URIs. */
  resources: string[];
  /** ACCESS_TOKEN_TTL_SECONDS: how long an access token is good for. */
  accessTokenTtlSeconds: number;
}

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

/** A provider id: the routes' `{provider}` and the OAUTH_X_ settings' X. */
export const PROVIDER_ID = /^[a-z0-9-]{1,32}$/;

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

export interface CreationLimits {
  /** How many one user may own at once; a creation beyond it is 409 QUOTA_EXCEEDED. */
  perUser: number;
  /** How many one user may create in a minute (at once, then one every 60 s / perMinute); then 429. */
  perMinute: number;
}

/** OWASP Password Storage Cheat Sheet minimum for argon2id; production settings may not go below it. */
export const ARGON2_MINIMUM = { memoryKiB: 19456, passes: 2, parallelism: 1 } as const;

export class ConfigError extends Error {
  readonly setting: string;
  constructor(setting: string, detail: string) {
    super(`${setting}: ${detail}`);
    this.setting = setting;
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `"${raw}" is not accepted; expected an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.toLowerCase() as T;
  if (!allowed.includes(value)) {
    throw new ConfigError(name, `"${raw}" is not accepted; expected one of ${allowed.join(', ')}`);
  }
  return value;
}

export type DatabasePooler = 'none' | 'transaction';
const POOLERS: readonly DatabasePooler[] = ['none', 'transaction'];

/**
 * DATABASE_POOLER, or when it is unset `transaction` for a URL that says `pgbouncer=true` (the
 * mark Prisma's users, and the pooler URLs of hosted PostgreSQL, already carry) and `none` otherwise.
 */
function pooler(env: Env, url: string): DatabasePooler {
  const sqlite = url.startsWith('sqlite:');
  const given = env.DATABASE_POOLER;
  if (given === undefined || given === '') {
    if (sqlite) return 'none';
    return new URL(url).searchParams.get('pgbouncer') === 'true' ? 'transaction' : 'none';
  }
  const value = oneOf(env, 'DATABASE_POOLER', POOLERS, 'none');
  if (sqlite && value !== 'none')
    throw new ConfigError('DATABASE_POOLER', 'is for PostgreSQL; SQLite has no pooler (leave it unset)');
  return value;
}

function databaseUrl(env: Env): string {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return 'sqlite:./data/usher.db';
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
  const raw = env.CONTACT_URL;
  if (raw === undefined || raw === '') return fallback;
  if (!/^(https?:\/\/|mailto:)\S+$/.test(raw))
    throw new ConfigError('CONTACT_URL', 'expected an https://, http:// or mailto: URL');
  return raw;
}

function publicUrl(env: Env, host: string, port: number): string {
  const raw = env.PUBLIC_URL;
  if (raw === undefined || raw === '') {
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

function smtpUrl(env: Env): string | undefined {
  const raw = env.SMTP_URL;
  if (raw === undefined || raw === '') return undefined;
  try {
    const url = new URL(raw);
    if ((url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname) return raw;
  } catch {
    // fall through to the error below
  }
  throw new ConfigError('SMTP_URL', 'expected smtp://user:password@host:port or smtps://…');
}

/** MAIL_TEMPLATES_DIR: read and checked now, so a broken template stops the start, naming its file. */
function mailTemplates(env: Env): OperatorTemplates {
  const dir = env.MAIL_TEMPLATES_DIR;
  if (dir === undefined || dir === '') return NO_OPERATOR_TEMPLATES;
  try {
    return loadOperatorTemplates(dir);
  } catch (error) {
    if (error instanceof TemplateError) throw new ConfigError('MAIL_TEMPLATES_DIR', error.message);
    throw error;
  }
}

function webhookSettings(env: Env): Config['webhooks'] {
  const timeoutMs = integer(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60) * 1000;
  const claimMs = integer(env, 'WEBHOOK_CLAIM_SECONDS', 60, 1, 3600) * 1000;
  // A claim that lapsed while its delivery still waits for an answer would be sent again by another instance.
  if (claimMs <= timeoutMs)
    throw new ConfigError('WEBHOOK_CLAIM_SECONDS', 'must be longer than WEBHOOK_TIMEOUT_SECONDS');
  const concurrency = integer(env, 'WEBHOOK_CONCURRENCY', 16, 1, 256);
  return {
    allowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    retryMs: integer(env, 'WEBHOOK_RETRY_SECONDS', 24 * 3600, 1, 30 * 24 * 3600) * 1000,
    claimMs,
    pollMs: integer(env, 'WEBHOOK_POLL_MS', 5000, 50, 600_000),
    timeoutMs,
    concurrency,
    // A quarter of the slots at most for one receiver: a slow one never holds the others up.
    perReceiver: Math.max(1, Math.floor(concurrency / 4)),
  };
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  return oneOf(env, name, ['true', 'false'] as const, fallback ? 'true' : 'false') === 'true';
}

function host(env: Env): string {
  const raw = env.HOST;
  if (raw === undefined || raw === '') return '127.0.0.1';
  if (!/^[A-Za-z0-9.:[\]-]+$/.test(raw)) {
    throw new ConfigError('HOST', `"${raw}" is not accepted; expected a host name or IP address`);
  }
  return raw;
}

function workers(env: Env): number {
  const raw = env.WORKERS;
  if (raw === 'auto') return availableParallelism();
  return integer(env, 'WORKERS', 1, 1, 256);
}

function list(env: Env, name: string, valid: RegExp, expected: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const items = raw.split(',').map((item) => item.trim());
  const bad = items.find((item) => !valid.test(item));
  if (bad !== undefined) throw new ConfigError(name, `"${bad}" is not accepted; expected ${expected}`);
  return items;
}

const IP_OR_CIDR =
  /^(\d{1,3}(\.\d{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)(\/\d{1,3})?$|^(loopback|linklocal|uniquelocal)$/;
const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/;

/** Threads in the pool beyond the hash slots, for fs, dns and crypto work. */
const SPARE_POOL_THREADS = 2;

/**
 * HASH_THREAD_NICE: `idle` or a nice value. By default `idle` on SQLite, where the event loop does
 * the database's work too and is all the hashes compete with, and 12 on PostgreSQL, whose own
 * processes would preempt hashes held at SCHED_IDLE at every query (decision 143).
 */
function poolPriority(env: Env, postgres: boolean): PoolPriority {
  const raw = env.HASH_THREAD_NICE?.trim().toLowerCase();
  if (raw === undefined || raw === '') return postgres ? POSTGRES_POOL_NICE : 'idle';
  if (raw === 'idle') return 'idle';
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 19)
    throw new ConfigError(
      'HASH_THREAD_NICE',
      `"${env.HASH_THREAD_NICE}" is not accepted; expected idle or an integer from 0 to 19`,
    );
  return Number(raw);
}

/** The hash threads' nice value on PostgreSQL unless HASH_THREAD_NICE says otherwise (decision 131). */
const POSTGRES_POOL_NICE = 12;

function threadpool(env: Env, hashes: number, postgres: boolean): Config['threadpool'] {
  return {
    size: integer(env, 'UV_THREADPOOL_SIZE', hashes + SPARE_POOL_THREADS, hashes + 1, 1024),
    priority: poolPriority(env, postgres),
  };
}

function encryptionKey(env: Env): Buffer | undefined {
  const raw = env.ENCRYPTION_KEY;
  if (raw === undefined || raw === '') return undefined;
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

/** Reads and validates every setting; throws ConfigError naming the first bad one. */
export function loadConfig(env: Env = process.env): Config {
  const hashes = integer(env, 'HASH_CONCURRENCY', Math.max(1, availableParallelism()), 1, 64);
  const hostName = host(env);
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const storeUrl = databaseUrl(env);
  const from =
    env.MAIL_FROM === undefined || env.MAIL_FROM === '' ? 'Usher <no-reply@localhost>' : env.MAIL_FROM;
  if (/[\r\n]/.test(from))
    throw new ConfigError('MAIL_FROM', 'must be one line, like "Usher <no-reply@example.com>"');
  return {
    host: hostName,
    port,
    profile: oneOf(env, 'PROFILE', PROFILES, 'b'),
    databaseUrl: storeUrl,
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    workers: workers(env),
    database: {
      poolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
      connectTimeoutMs: integer(env, 'DATABASE_CONNECT_TIMEOUT_MS', 2000, 100, 60000),
      statementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 5000, 100, 600000),
      pooler: pooler(env, storeUrl),
    },
    passwordHash: {
      memoryKiB: integer(
        env,
        'ARGON2_MEMORY_KIB',
        ARGON2_MINIMUM.memoryKiB,
        ARGON2_MINIMUM.memoryKiB,
        4194304,
      ),
      passes: integer(env, 'ARGON2_PASSES', ARGON2_MINIMUM.passes, ARGON2_MINIMUM.passes, 100),
      parallelism: integer(env, 'ARGON2_PARALLELISM', ARGON2_MINIMUM.parallelism, 1, 64),
      concurrency: hashes,
      queueLimit: integer(env, 'HASH_QUEUE_LIMIT', 128, 1, 100_000),
      signinSharePercent: integer(env, 'HASH_SIGNIN_SHARE', 50, 1, 99),
    },
    threadpool: threadpool(env, hashes, storeUrl.startsWith('postgres')),
    session: {
      absoluteTtlMs: integer(env, 'SESSION_TTL_SECONDS', 7 * 24 * 3600, 60, 365 * 24 * 3600) * 1000,
      idleTtlMs: integer(env, 'SESSION_IDLE_SECONDS', 24 * 3600, 60, 365 * 24 * 3600) * 1000,
      cookieSecure: oneOf(env, 'SESSION_COOKIE_SECURE', ['auto', 'always'] as const, 'auto'),
    },
    throttle: {
      windowMs: integer(env, 'SIGNIN_THROTTLE_WINDOW_SECONDS', 900, 1, 86400) * 1000,
      perAccountAddress: integer(env, 'SIGNIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS', 10, 1, 1_000_000),
      perAccount: integer(env, 'SIGNIN_MAX_FAILURES_PER_ACCOUNT', 100, 1, 1_000_000),
      perAddress: integer(env, 'SIGNIN_MAX_FAILURES_PER_ADDRESS', 100, 1, 1_000_000),
      concurrentPerAccount: integer(env, 'SIGNIN_MAX_CONCURRENT_PER_ACCOUNT', 4, 1, 10_000),
      concurrentPerAddress: integer(env, 'SIGNIN_MAX_CONCURRENT_PER_ADDRESS', 8, 1, 10_000),
      deviceTtlMs: integer(env, 'SIGNIN_DEVICE_TTL_SECONDS', 180 * 24 * 3600, 0, 2 * 365 * 24 * 3600) * 1000,
    },
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
    mail: {
      smtpUrl: smtpUrl(env),
      from,
      outboxDir: env.MAIL_OUTBOX === undefined || env.MAIL_OUTBOX === '' ? './data/outbox' : env.MAIL_OUTBOX,
      maxAgeMs: integer(env, 'MAIL_RETRY_SECONDS', 24 * 3600, 1, 30 * 24 * 3600) * 1000,
      claimMs: integer(env, 'MAIL_CLAIM_SECONDS', 60, 1, 3600) * 1000,
      pollMs: integer(env, 'MAIL_POLL_MS', 5000, 50, 600_000),
      templates: mailTemplates(env),
    },
    audit: {
      retentionMs: integer(env, 'AUDIT_RETENTION_DAYS', 90, 1, 3650) * 24 * 3600 * 1000,
      signins: flag(env, 'AUDIT_SIGNINS', true),
    },
    webhooks: webhookSettings(env),
    tokens: {
      passwordResetTtlMs: integer(env, 'PASSWORD_RESET_TTL_SECONDS', 1800, 60, 7 * 24 * 3600) * 1000,
      emailVerifyTtlMs: integer(env, 'EMAIL_VERIFY_TTL_SECONDS', 86400, 60, 30 * 24 * 3600) * 1000,
    },
    emailSigninCreatesAccounts: flag(env, 'EMAIL_SIGNIN_CREATES_ACCOUNTS', false),
    passwordReset: {
      perAccount: integer(env, 'PASSWORD_RESET_MAX_PER_ACCOUNT', 3, 1, 1000),
      perAddress: integer(env, 'PASSWORD_RESET_MAX_PER_ADDRESS', 20, 1, 1_000_000),
      windowMs: 15 * 60 * 1000,
    },
    catalog: {
      products: {
        perUser: integer(env, 'PRODUCTS_MAX_PER_USER', 1000, 1, 1_000_000),
        perMinute: integer(env, 'PRODUCTS_MAX_PER_MINUTE', 30, 1, 60_000),
      },
      reviews: {
        perUser: integer(env, 'REVIEWS_MAX_PER_USER', 1000, 1, 1_000_000),
        perMinute: integer(env, 'REVIEWS_MAX_PER_MINUTE', 30, 1, 60_000),
      },
    },
    registration: {
      perAddress: integer(env, 'REGISTRATION_MAX_PER_ADDRESS', 10, 1, 1_000_000),
      windowMs: 15 * 60 * 1000,
      concurrentPerAddress: integer(env, 'REGISTRATION_MAX_CONCURRENT_PER_ADDRESS', 2, 1, 10_000),
      concurrent: integer(env, 'REGISTRATION_MAX_CONCURRENT', 16, 1, 10_000),
    },
    passkeyOptions: {
      perAddress: integer(env, 'PASSKEY_OPTIONS_MAX_PER_ADDRESS', 100, 1, 1_000_000),
      windowMs: 15 * 60 * 1000,
    },
    oidcLimits: {
      authorizations: {
        perAddress: integer(env, 'OIDC_AUTHORIZATIONS_MAX_PER_ADDRESS', 300, 1, 1_000_000),
        windowMs: 15 * 60 * 1000,
      },
      pushed: {
        perAddress: integer(env, 'OIDC_PUSHED_REQUESTS_MAX_PER_ADDRESS', 100, 1, 1_000_000),
        windowMs: 15 * 60 * 1000,
      },
    },
    emailChange: {
      perAccount: integer(env, 'EMAIL_CHANGE_MAX_PER_ACCOUNT', 3, 1, 1000),
      perMailbox: integer(env, 'EMAIL_CHANGE_MAX_PER_MAILBOX', 3, 1, 1000),
      windowMs: 15 * 60 * 1000,
    },
    requireVerifiedEmail: flag(env, 'REQUIRE_VERIFIED_EMAIL', false),
    userLookup: oneOf(env, 'USER_LOOKUP', USER_LOOKUPS, 'public'),
    encryptionKey: encryptionKey(env),
    oauth: {
      providers: oauthProviders(env),
      signup: flag(env, 'OAUTH_SIGNUP', true),
      timeoutMs: integer(env, 'OAUTH_TIMEOUT_SECONDS', 10, 1, 120) * 1000,
      starts: {
        perAddress: integer(env, 'OAUTH_STARTS_MAX_PER_ADDRESS', 300, 1, 1_000_000),
        windowMs: 15 * 60 * 1000,
      },
    },
    oidc: {
      resources: resources(env),
      accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL_SECONDS', 300, 30, 86_400),
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
