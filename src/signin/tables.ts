import type { ColumnType } from 'kysely';

/** A second-factor ticket: a sign-in proven by a method with no body for a code (signin/). */
export interface SigninTicketsTable {
  token_digest: string;
  user_id: ColumnType<bigint, bigint, never>;
  /** The method that proved the sign-in (the metric's and audit's label when it finishes). */
  method: string;
  expires_at: ColumnType<bigint, number, never>;
  failures: ColumnType<number, number | undefined, number>;
}

declare module '../db/schema.ts' {
  interface Tables {
    signin_tickets: SigninTicketsTable;
  }
}
