import type { EpochMs, Int8 } from '../db/schema.ts';

/** An account's password, for the accounts that have one (passwords/repository.ts). */
export interface PasswordCredentialsTable {
  user_id: Int8;
  /**
   * The argon2id PHC string (passwords/hasher.ts), or a hash imported from another system, marked
   * `imported:` (passwords/imported.ts) until the first sign-in re-hashes it.
   */
  hash: string;
  /** When the password was set, epoch ms (a rehash at sign-in keeps it). */
  changed_at: EpochMs;
}

declare module '../db/schema.ts' {
  interface Tables {
    password_credentials: PasswordCredentialsTable;
  }
}
