import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** A device to remember for an account, as a successful sign-in stores it. */
export interface RememberedDevice {
  tokenDigest: string;
  accountDigest: string;
  now: number;
  expiresAt: number;
}

/** The clients that signed in to an account before (OWASP device cookies), by token digest. */
export class SigninDevicesRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async isKnown(tokenDigest: string, accountDigest: string, now: number): Promise<boolean> {
    const row = await this.#db
      .selectFrom('signin_devices')
      .select('known_until')
      .where('token_digest', '=', tokenDigest)
      .where('account_digest', '=', accountDigest)
      .where('known_until', '>', BigInt(now))
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Adds the device to the account, or renews it: its lifetime counts from its last sign-in. */
  async remember({ tokenDigest, accountDigest, now, expiresAt }: RememberedDevice): Promise<void> {
    await this.#db
      .insertInto('signin_devices')
      .values({
        token_digest: tokenDigest,
        account_digest: accountDigest,
        remembered_at: now,
        known_until: expiresAt,
      })
      .onConflict((oc) =>
        oc.columns(['token_digest', 'account_digest']).doUpdateSet({ known_until: expiresAt }),
      )
      .execute();
  }

  async deleteExpired(now: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('signin_devices')
      .where('known_until', '<=', BigInt(now))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
