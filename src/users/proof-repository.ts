// The one write that marks an account's email verified, on a repository of its own so that the
// services reach it only through EmailProven (users/email-proven.ts), which applies the rule of a
// proven email with it (decision 343).
import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

export class EmailProofsRepository {
  readonly #db: Kysely<Tables>;

  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /**
   * Marks the email verified from `at`; false when it already was (or the user is gone). `touch`:
   * the account's updated_at moves too, as an admin's change of the account does.
   */
  async markVerified(id: bigint, at: Date, touch: boolean): Promise<boolean> {
    const result = await this.#db
      .updateTable('users')
      .set({ email_verified_at: at.toISOString(), ...(touch ? { updated_at: at.toISOString() } : {}) })
      .where('id', '=', id)
      .where('email_verified_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
