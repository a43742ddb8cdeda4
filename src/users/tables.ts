import type { ColumnType } from 'kysely';

/**
 * An account left on its old email key because another account holds the key its email has now
 * (users/ migration 0028, decision 355): until an admin gives one of them another email.
 */
export interface EmailKeyCollisionsTable {
  user_id: ColumnType<bigint, bigint, never>;
  /** The key the account's email has now, held by another account. */
  email_key: string;
}

declare module '../db/schema.ts' {
  interface Tables {
    email_key_collisions: EmailKeyCollisionsTable;
  }
}
