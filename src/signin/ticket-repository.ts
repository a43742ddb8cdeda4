import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** A live ticket, as POST /api/signin/second-factor reads it. */
export interface StoredTicket {
  userId: bigint;
  method: string;
  failures: number;
}

/** Second-factor tickets, by the SHA-256 of the ticket (the ticket itself is never stored). */
export class SigninTicketsRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async create(ticket: { tokenDigest: string; userId: bigint; method: string; expiresAt: number }) {
    await this.#db
      .insertInto('signin_tickets')
      .values({
        token_digest: ticket.tokenDigest,
        user_id: ticket.userId,
        method: ticket.method,
        expires_at: ticket.expiresAt,
      })
      .execute();
  }

  /** The ticket while it lives and has wrong codes left; undefined otherwise. */
  async find(tokenDigest: string, now: number, maxFailures: number): Promise<StoredTicket | undefined> {
    const row = await this.#db
      .selectFrom('signin_tickets')
      .select(['user_id', 'method', 'failures'])
      .where('token_digest', '=', tokenDigest)
      .where('expires_at', '>', BigInt(now))
      .where('failures', '<', maxFailures)
      .executeTakeFirst();
    return row && { userId: BigInt(row.user_id), method: row.method, failures: Number(row.failures) };
  }

  /**
   * Counts a wrong code in one statement (simultaneous wrong codes each count); the ticket is
   * deleted with its last one. The count after this one, or undefined when it was gone.
   */
  async failed(tokenDigest: string, maxFailures: number): Promise<number | undefined> {
    const row = await this.#db
      .updateTable('signin_tickets')
      .set((eb) => ({ failures: eb('failures', '+', 1) }))
      .where('token_digest', '=', tokenDigest)
      .where('failures', '<', maxFailures)
      .returning('failures')
      .executeTakeFirst();
    if (!row) return undefined;
    const failures = Number(row.failures);
    if (failures >= maxFailures)
      await this.#db.deleteFrom('signin_tickets').where('token_digest', '=', tokenDigest).execute();
    return failures;
  }

  /** Spends the ticket: true for exactly one caller, while it lives with wrong codes left. */
  async spend(tokenDigest: string, now: number, maxFailures: number): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('signin_tickets')
      .where('token_digest', '=', tokenDigest)
      .where('expires_at', '>', BigInt(now))
      .where('failures', '<', maxFailures)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async deleteExpired(now: number): Promise<void> {
    await this.#db.deleteFrom('signin_tickets').where('expires_at', '<=', BigInt(now)).execute();
  }
}
