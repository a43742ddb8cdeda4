import type { ColumnType } from 'kysely';

/**
 * What oidc-provider stores (its adapter's models: sessions, interactions, grants, codes, tokens),
 * one row per model instance. Rows are found by the SHA-256 of their id, never the id itself: the id
 * of a code or a token is its value, so a copy of this table hands out nothing that works.
 */
export interface OidcModelsTable {
  model: string;
  id_digest: string;
  /** The instance as oidc-provider saved it (JSON), its `jti` left out. */
  payload: string;
  grant_id: string | null;
  uid: string | null;
  user_code: string | null;
  /** The person it is for (oidc-provider's accountId: the user id in decimal), so a password change can revoke it. */
  account_id: string | null;
  /** Epoch milliseconds; rows past it are never read and are purged in the background. */
  expires_ms: ColumnType<bigint | null, number | null, never>;
  /** Epoch milliseconds the code or refresh token was spent: set once, by whichever use got there first. */
  consumed_ms: ColumnType<bigint | null, never, number>;
}

/** The apps that sign in through Usher, registered by the operator (`usher clients`). */
export interface OidcClientsTable {
  client_id: string;
  name: string;
  /** AES-256-GCM under ENCRYPTION_KEY (kernel/sealing.ts), the client id as its context; null for a public client. */
  secret_sealed: string | null;
  redirect_uris: string;
  post_logout_redirect_uris: string;
  grant_types: string;
  first_party: ColumnType<number, number, number>;
  created_at: ColumnType<Date, string, never>;
}

/**
 * The provider's keys: signing keys (`sig`, a private JWK) and the cookie-signing secret
 * (`cookie`), each sealed under ENCRYPTION_KEY with its kid as context.
 */
export interface OidcKeysTable {
  kid: string;
  use: string;
  alg: string;
  sealed: string;
  created_at: ColumnType<Date, string, never>;
  /** Epoch milliseconds from which the key signs: published from its creation, signing from then. */
  signs_from_ms: ColumnType<bigint, number, never>;
  retired_ms: ColumnType<bigint | null, never, number>;
}

/** What each person agreed a third-party app may have (scopes and resources), for next time. */
export interface OidcConsentsTable {
  user_id: ColumnType<bigint, bigint, never>;
  client_id: string;
  /** Space-separated, sorted: the union of every scope set agreed to. */
  scopes: string;
}

/**
 * What a browser had when it first came to the login page of an interaction that wants a new
 * sign-in (prompt=login, a hint, an essential acr): only a session created after that counts.
 * One row per such interaction, gone with it.
 */
export interface OidcLoginBaselinesTable {
  /** The interaction's uid (oidc-provider's nanoid). */
  uid: string;
  /** Epoch milliseconds of the first visit, on the instance's clock. */
  seen_ms: ColumnType<bigint, number, never>;
  /** The public id of the Usher session the browser had then, or null. */
  session_id: string | null;
  /** Epoch milliseconds the interaction expires; rows past it are purged in the background. */
  expires_ms: ColumnType<bigint, number, never>;
}

declare module '../db/schema.ts' {
  interface Tables {
    oidc_models: OidcModelsTable;
    oidc_login_baselines: OidcLoginBaselinesTable;
    oidc_clients: OidcClientsTable;
    oidc_keys: OidcKeysTable;
    oidc_consents: OidcConsentsTable;
  }
}
