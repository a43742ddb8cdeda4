import type { Kysely } from 'kysely';
import { type AccountTokenPurpose, type Tables, timestamp } from '../db/schema.ts';

/** The expiry of a used or voided token: before any clock reading. */
const USED = new Date(0);

export interface NewAccountToken {
  tokenHash: string;
  userId: bigint;
  purpose: AccountTokenPurpose;
  /** For email verification: the address the token proves. */
  email: string | null;
  now: Date;
  expiresAt: Date;
}

export interface TokenHolder {
  userId: bigint;
  email: string | null;
}

/**
 * Password-reset and email-verification tokens, by the hash of the token. A used or voided token
 * is not deleted but expires at that moment, so the row still counts towards "mails per account
 * per window" until housekeeping removes it.
 */
export class AccountTokensRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async add(token: NewAccountToken): Promise<void> {
    await this.#db
      .insertInto('account_tokens')
      .values({
        token_hash: token.tokenHash,
        user_id: token.userId,
        purpose: token.purpose,
        email: token.email,
        created_at: token.now.toISOString(),
        expires_at: token.expiresAt.toISOString(),
      })
      .execute();
  }

  /** The holder of a live token, without using it. */
  async find(tokenHash: string, purpose: AccountTokenPurpose, now: Date): Promise<TokenHolder | undefined> {
    const row = await this.#db
      .selectFrom('account_tokens')
      .select(['user_id', 'email'])
      .where('token_hash', '=', tokenHash)
      .where('purpose', '=', purpose)
      .where('expires_at', '>', timestamp(now))
      .executeTakeFirst();
    return row && { userId: row.user_id, email: row.email };
  }

  /**
   * Uses a live token: it expires in the same statement that checks it, so of two simultaneous
   * uses exactly one gets the holder. It is set to expire at the epoch, not at `now`: a use whose
   * clock was read a moment earlier but reaches the row later would still see `now` ahead of it
   * and use the token a second time.
   */
  async consume(
    tokenHash: string,
    purpose: AccountTokenPurpose,
    now: Date,
  ): Promise<TokenHolder | undefined> {
    const row = await this.#db
      .updateTable('account_tokens')
      .set({ expires_at: USED.toISOString() })
      .where('token_hash', '=', tokenHash)
      .where('purpose', '=', purpose)
      .where('expires_at', '>', timestamp(now))
      .returning(['user_id', 'email'])
      .executeTakeFirst();
    return row && { userId: row.user_id, email: row.email };
  }

  /** Every live token of the user for `purpose` expires (at the epoch, as in consume). */
  async voidAll(userId: bigint, purpose: AccountTokenPurpose, now: Date): Promise<void> {
    await this.#db
      .updateTable('account_tokens')
      .set({ expires_at: USED.toISOString() })
      .where('user_id', '=', userId)
      .where('purpose', '=', purpose)
      .where('expires_at', '>', timestamp(now))
      .execute();
  }

  /** Tokens made for the user and purpose since `since` (each one a mail sent). */
  async countSince(userId: bigint, purpose: AccountTokenPurpose, since: Date): Promise<number> {
    const row = await this.#db
      .selectFrom('account_tokens')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .where('user_id', '=', userId)
      .where('purpose', '=', purpose)
      .where('created_at', '>', timestamp(since))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Removes tokens that expired before `before` (and so can neither be used nor count). */
  async purgeExpired(before: Date): Promise<number> {
    const result = await this.#db
      .deleteFrom('account_tokens')
      .where('expires_at', '<', timestamp(before))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
