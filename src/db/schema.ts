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

export interface Tables {
  users: UsersTable;
}
