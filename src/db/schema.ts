import { type ColumnType, sql } from 'kysely';

// Both drivers read rows into these types, normalised in one place each: PostgreSQL's int8 is
// parsed as a bigint (database.ts) and node:sqlite reads every integer as a bigint, then turns
// the columns named below into what PostgreSQL returns for them (sqlite-dialect.ts).
export type Int8 = ColumnType<bigint, bigint | number, bigint | number>;
type GeneratedInt8 = ColumnType<bigint, bigint | undefined, bigint>;
/** Written as ISO 8601 text; read as a Date (timestamptz on PostgreSQL, text on SQLite). */
type Timestamp = ColumnType<Date, string, string>;
/** Epoch milliseconds in a bigint column. */
export type EpochMs = ColumnType<bigint, number, number>;

/** Timestamp columns, by name: SQLite stores them as text, which its adapter reads back as Dates. */
export const TIMESTAMP_COLUMNS: ReadonlySet<string> = new Set([
  'created_at',
  'updated_at',
  'last_seen_at',
  'expires_at',
  'written_at',
  'email_verified_at',
  'sent_at',
  'last_used_at',
  'confirmed_at',
  'disabled_at',
  'last_signin_at',
  'last_attempt_at',
]);
/** A nullable timestamp. */
type MaybeTimestamp = ColumnType<Date | null, string | null | undefined, string | null>;
/** 32-bit integer columns, by name: numbers on PostgreSQL, so SQLite's adapter reads them as numbers. */
export const INT4_COLUMNS: ReadonlySet<string> = new Set(['rating', 'attempts', 'last_status']);

export interface UsersTable {
  id: GeneratedInt8;
  email: string;
  /** Trimmed, lower-cased email: the unique, case-insensitive sign-in key. */
  email_key: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  email_verified_at: MaybeTimestamp;
  /** What the account may administer (users/ migration 0018). */
  role: ColumnType<AccountRole, AccountRole | undefined, AccountRole>;
  /** The application's own roles: a JSON array of strings, carried in tokens. */
  roles: ColumnType<string, string | undefined, string>;
  /** Set while an admin has the account disabled: every way in refuses it. */
  disabled_at: MaybeTimestamp;
  disabled_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the account's latest session was granted. */
  last_signin_at: MaybeTimestamp;
  /** The name folded for search (users/user.ts's nameKey), written with every name. */
  name_key: ColumnType<string, string | undefined, string>;
  /** The account's language, a canonical BCP 47 tag (users/ migration 0022); `en` by default. */
  locale: ColumnType<string, string | undefined, string>;
}

/** What an account may administer (CONTRACT "Administration"). */
export type AccountRole = 'user' | 'support' | 'admin';

export interface SessionsTable {
  /** SHA-256 of the token, hex: the token itself is never stored. */
  token_hash: string;
  /** The id users see and name (never the token or its hash). */
  public_id: string;
  user_id: Int8;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  user_agent: ColumnType<string | null, string | null | undefined, string | null>;
  /** RFC 8176 method references of the sign-in, space-separated (sessions/ migration 0016). */
  amr: ColumnType<string | null, string | null | undefined, never>;
}

export type AccountTokenPurpose = 'password-reset' | 'email-verify';

export interface AccountTokensTable {
  /** SHA-256 of the token, hex: the token itself is only ever in the mail. */
  token_hash: string;
  user_id: Int8;
  purpose: AccountTokenPurpose;
  /** The address an email-verification token proves. */
  email: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface ResetRequestsTable {
  id: GeneratedInt8;
  email_key: string;
  address: string;
  at: EpochMs;
  /** 0 until the background worker has handled it. */
  done: ColumnType<bigint | number, number | undefined, number>;
  /** What the ask is for (mail-signin/'s migration): `password-reset`, `email-link` or `email-code`. */
  kind: ColumnType<string, string | undefined, never>;
  /** Where a sign-in link sends the browser (a checked absolute URL). */
  redirect_to: ColumnType<string | null, string | null | undefined, never>;
  /** The asking client's language, for the mail to an email with no account. */
  locale: ColumnType<string | null, string | null | undefined, never>;
}

export type LimitScope =
  | 'registration'
  | 'email-change'
  | 'email-change-mail'
  | 'passkey-options'
  | 'oauth-start'
  | 'oidc-authorization'
  | 'oidc-pushed-request';

/** One counted event of a limit kept in the shared database (kernel/limits.ts). */
export interface LimitEventsTable {
  id: GeneratedInt8;
  scope: LimitScope;
  /** What is counted: a client address key, a user id, or SHA-256 (hex) of a mailbox's email key. */
  subject: string;
  at: EpochMs;
}

export type MailStatus = 'pending' | 'sent' | 'failed';

export interface MailOutboxTable {
  id: GeneratedInt8;
  recipient: string;
  subject: string;
  text_body: string;
  html_body: string;
  status: ColumnType<MailStatus, MailStatus | undefined, MailStatus>;
  created_at: Timestamp;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: EpochMs;
  claimed_until: ColumnType<bigint | null, number | null | undefined, number | null>;
  claimed_by: ColumnType<string | null, string | null | undefined, string | null>;
  sent_at: MaybeTimestamp;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ProductsTable {
  id: GeneratedInt8;
  name: string;
  description: string;
  price: Int8;
  owner_id: Int8;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ReviewsTable {
  id: GeneratedInt8;
  product_id: Int8;
  author_id: Int8;
  rating: number;
  text: string;
  written_at: Timestamp;
  updated_at: Timestamp;
}

export interface SigninAttemptsTable {
  id: GeneratedInt8;
  /** SHA-256 (hex) of the email key tried, whether or not such an account exists. */
  account_digest: string;
  address: string;
  /** When the attempt began, epoch ms. */
  at: EpochMs;
  /** Epoch ms until which the attempt counts as in flight; null once settled as a failure. */
  pending_until: ColumnType<bigint | null, number | null, number | null>;
  /** SHA-256 of the known device's token the attempt came with; null from a client not known. */
  device: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A client that signed in to an account before (OWASP device cookie), by its token's digest. */
export interface SigninDevicesTable {
  token_digest: string;
  /** The throttle's digest of the account's email key. */
  account_digest: string;
  remembered_at: EpochMs;
  /** Known to the account until then (epoch ms; not `expires_at`, which SQLite reads as text time). */
  known_until: EpochMs;
  /** This device's wrong TOTP codes, as totp_factors.failures counts the account's. */
  code_failures: ColumnType<number, number | undefined, number>;
  code_failures_at: ColumnType<bigint | null, number | null | undefined, number | null>;
  codes_locked_until: ColumnType<bigint | null, number | null | undefined, number | null>;
}

/**
 * The widths of the id ranges user_counts counts: a row (span, first_id, users) counts the users
 * whose id is in [first_id, first_id + span). Changing them needs a migration that recounts.
 */
export const USER_COUNT_SPAN = { wide: 65_536, narrow: 1_024 } as const;

/** Users per range of ids, kept by triggers: the total, and where a deep page starts. */
export interface UserCountsTable {
  span: Int8;
  first_id: Int8;
  users: Int8;
}

/** The widths of the id ranges product_counts counts, as USER_COUNT_SPAN's for users. */
export const PRODUCT_COUNT_SPAN = { wide: 65_536, narrow: 1_024 } as const;

/** Products per range of ids, kept by triggers: the total, and where a deep page starts. */
export interface ProductCountsTable {
  span: Int8;
  first_id: Int8;
  products: Int8;
}

/** Each product's number of reviews, kept by triggers (no row: none). */
export interface ReviewCountsTable {
  product_id: Int8;
  reviews: Int8;
}

export type CreationKind = 'product' | 'review';

/** Per user and kind: how many they own (kept by triggers) and how fast they have been creating. */
export interface CreationLimitsTable {
  user_id: Int8;
  kind: CreationKind;
  owned: Int8;
  /**
   * Epoch ms at which the user's creations so far, spaced at the allowed rate, end (a "virtual
   * scheduling" rate limit: a creation is allowed while this stays within a minute of now).
   */
  paced_until: Int8;
}

export interface PasskeysTable {
  /** The public id users see and name; not the credential id. */
  id: string;
  /** The authenticator's credential id, base64url. */
  credential_id: string;
  user_id: Int8;
  name: string;
  /** The COSE public key, base64url. */
  public_key: string;
  /** The last signature counter seen (0: the authenticator keeps none). */
  counter: Int8;
  /** JSON array of the transports the browser reported. */
  transports: string;
  created_at: Timestamp;
  last_used_at: MaybeTimestamp;
}

export type ChallengePurpose = 'register' | 'signin';

export interface WebauthnChallengesTable {
  /** base64url, as in the options and the client's clientDataJSON. */
  challenge: string;
  purpose: ChallengePurpose;
  /** The user a registration challenge was issued to; null for sign-in. */
  user_id: ColumnType<bigint | null, bigint | null, bigint | null>;
  expires_at: EpochMs;
}

export interface TotpFactorsTable {
  user_id: Int8;
  /** The base32 secret, sealed with AES-256-GCM under ENCRYPTION_KEY (kernel/sealing.ts). */
  secret_sealed: string;
  created_at: Timestamp;
  /** Null while the set-up waits for its first code: not in force. */
  confirmed_at: MaybeTimestamp;
  /** RFC 6238 time step of the last code accepted; a code of this step or earlier is refused. */
  last_step: ColumnType<bigint | null, number | null | undefined, number | null>;
  /** Wrong codes given after the right password, less one a day since the last (`failures_at`). */
  failures: ColumnType<number, number | undefined, number>;
  failures_at: ColumnType<bigint | null, number | null | undefined, number | null>;
  /** Epoch ms before which no code is checked (the delay growing with `failures`); null when none. */
  locked_until: ColumnType<bigint | null, number | null | undefined, number | null>;
}

export interface RecoveryCodesTable {
  user_id: Int8;
  /** SHA-256 (hex) of the normalised code; the code itself is only ever shown once. */
  code_hash: string;
}

/**
 * Every table, for Kysely. Features that came after 2026-11-24 add theirs from their own folder
 * by module augmentation (e.g. signin/tables.ts), so a new feature does not edit this file.
 */
export interface Tables {
  totp_factors: TotpFactorsTable;
  recovery_codes: RecoveryCodesTable;
  users: UsersTable;
  user_counts: UserCountsTable;
  product_counts: ProductCountsTable;
  review_counts: ReviewCountsTable;
  creation_limits: CreationLimitsTable;
  sessions: SessionsTable;
  products: ProductsTable;
  reviews: ReviewsTable;
  signin_attempts: SigninAttemptsTable;
  signin_devices: SigninDevicesTable;
  account_tokens: AccountTokensTable;
  reset_requests: ResetRequestsTable;
  limit_events: LimitEventsTable;
  mail_outbox: MailOutboxTable;
  passkeys: PasskeysTable;
  webauthn_challenges: WebauthnChallengesTable;
}

/** A Date as the stores compare timestamps: ISO 8601 text (node:sqlite cannot bind a Date). */
export const timestamp = (date: Date) => sql<Date>`${date.toISOString()}`;
