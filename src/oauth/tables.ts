import type { ColumnType } from 'kysely';

/**
 * A provider sign-in under way (oauth/): what its callback needs, kept server-side by the SHA-256
 * of its `state`, single-use, bound to the browser by the SHA-256 of its `usher_oauth` cookie.
 */
export interface OAuthStatesTable {
  state_digest: string;
  provider: string;
  binding_digest: string;
  /** The PKCE verifier and nonce: worthless without the code, and gone at the callback. */
  code_verifier: string;
  nonce: string;
  /** Where the browser goes after the callback: an absolute URL, checked at the start. */
  redirect_to: string;
  intent: 'signin' | 'link';
  /** The account `intent=link` links to. */
  user_id: ColumnType<bigint | null, bigint | null | undefined, never>;
  /** Epoch milliseconds (not a timestamp column: SQLite's adapter reads those named expires_at as dates). */
  expires_ms: ColumnType<bigint, number, never>;
}

/** An external identity linked to an account, keyed by (provider, issuer, subject), never by email. */
export interface IdentitiesTable {
  /** The identity's id on the wire (32 random hex digits), for DELETE. */
  id: string;
  user_id: ColumnType<bigint, bigint, never>;
  provider: string;
  issuer: string;
  subject: string;
  /** The email the provider last gave for it (shown on the account page; never a key). */
  email: string;
  /**
   * 1 when the account's owner is known to have linked it: through a signed-in session, or by an
   * email both the provider and the account had verified. 0 when it made its account with an
   * email its provider did not verify: it never signs in, since whatever proves the mailbox (the
   * mailbox's owner taking the account) unlinks it (users/email-proven.ts, decision 340).
   */
  proven: ColumnType<number, number, number>;
  created_at: ColumnType<Date, string, never>;
}

declare module '../db/schema.ts' {
  interface Tables {
    oauth_states: OAuthStatesTable;
    identities: IdentitiesTable;
  }
}
