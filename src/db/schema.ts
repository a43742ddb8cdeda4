import type { ColumnType } from 'kysely';

// pg returns int8 as a string and node:sqlite (with read-bigints on) as a bigint; repositories
// turn either into a bigint, so ids keep all 64 bits.
type GeneratedInt8 = ColumnType<bigint | string, bigint | string | undefined, bigint | string>;
// SQLite stores timestamps as ISO 8601 text, PostgreSQL as timestamptz (read back as Date).
type Timestamp = ColumnType<Date | string, string, string>;

export interface UsersTable {
  id: GeneratedInt8;
  email: string;
  /** Trimmed, lower-cased email: the unique, case-insensitive sign-in key. */
  email_key: string;
  name: string;
  password_hash: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SessionsTable {
  /** SHA-256 of the token, hex: the token itself is never stored. */
  token_hash: string;
  user_id: bigint | string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
}

export interface ProductsTable {
  id: GeneratedInt8;
  name: string;
  description: string;
  price: ColumnType<bigint | string, bigint | number, bigint | number>;
  owner_id: bigint | string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ReviewsTable {
  id: GeneratedInt8;
  product_id: bigint | string;
  author_id: bigint | string;
  rating: ColumnType<bigint | number, number, number>;
  text: string;
  written_at: Timestamp;
  updated_at: Timestamp;
}

type EpochMs = ColumnType<bigint | string | number, number, number>;

export interface SigninAttemptsTable {
  id: GeneratedInt8;
  /** SHA-256 (hex) of the email key tried, whether or not such an account exists. */
  account_digest: string;
  address: string;
  /** When the attempt began, epoch ms. */
  at: EpochMs;
  /** Epoch ms until which the attempt counts as in flight; null once settled as a failure. */
  pending_until: ColumnType<bigint | string | number | null, number | null, number | null>;
}

/**
 * The widths of the id ranges user_counts counts: a row (span, first_id, users) counts the users
 * whose id is in [first_id, first_id + span). Changing them needs a migration that recounts.
 */
export const USER_COUNT_SPAN = { wide: 65_536, narrow: 1_024 } as const;

/** Users per range of ids, kept by triggers: the total, and where a deep page starts. */
export interface UserCountsTable {
  span: ColumnType<bigint | string, bigint | number, bigint | number>;
  first_id: ColumnType<bigint | string, bigint | number, bigint | number>;
  users: ColumnType<bigint | string, bigint | number, bigint | number>;
}

export interface Tables {
  users: UsersTable;
  user_counts: UserCountsTable;
  sessions: SessionsTable;
  products: ProductsTable;
  reviews: ReviewsTable;
  signin_attempts: SigninAttemptsTable;
}
