import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

export interface FailureScope {
  accountKey?: string;
  address?: string;
}

export class SigninFailuresRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async record(accountKey: string, address: string, at: number): Promise<void> {
    await this.#db
      .insertInto('signin_failures')
      .values({ account_key: accountKey, address, failed_at: at })
      .execute();
  }

  /**
   * How many failures in `scope` since `since`, and when the `limit`-th newest happened (the
   * moment the count will drop below the limit is that plus the window).
   */
  async countSince(
    scope: FailureScope,
    since: number,
    limit: number,
  ): Promise<{ count: number; limitthAt?: number }> {
    let query = this.#db.selectFrom('signin_failures').where('failed_at', '>', since);
    if (scope.accountKey !== undefined) query = query.where('account_key', '=', scope.accountKey);
    if (scope.address !== undefined) query = query.where('address', '=', scope.address);
    // Reading at most `limit` rows bounds the work however many failures pile up.
    const rows = await query.select('failed_at').orderBy('failed_at', 'desc').limit(limit).execute();
    return {
      count: rows.length,
      limitthAt: rows.length >= limit ? Number(rows[limit - 1]!.failed_at) : undefined,
    };
  }

  /** A successful sign-in forgives that account's failures from that address. */
  async clear(accountKey: string, address: string): Promise<void> {
    await this.#db
      .deleteFrom('signin_failures')
      .where('account_key', '=', accountKey)
      .where('address', '=', address)
      .execute();
  }

  async deleteBefore(before: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('signin_failures')
      .where('failed_at', '<=', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
