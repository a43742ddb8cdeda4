import type { ColumnType, Generated } from 'kysely';

/** A sign-in link or code that was mailed (mail-signin/). */
export interface MailSigninsTable {
  id: ColumnType<bigint, never, never>;
  kind: 'link' | 'code';
  secret_hash: string;
  /** A code's HMAC key (hex); null for a link, whose token is hashed alone. */
  salt: string | null;
  /** The address as it was asked for: the account's, or the one an account is created with. */
  email: string;
  email_key: string;
  /** Null for an email with no account when it was asked for. */
  user_id: ColumnType<bigint | null, bigint | null, never>;
  redirect_to: string | null;
  locale: string | null;
  created_at: ColumnType<bigint, number, never>;
  expires_at: ColumnType<bigint, number, number>;
  failures: Generated<number>;
}

declare module '../db/schema.ts' {
  interface Tables {
    mail_signins: MailSigninsTable;
  }
}
