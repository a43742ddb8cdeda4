import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

export interface ResetRequest {
  id: bigint;
  emailKey: string;
  /** Where a sign-in link sends the browser; null for other asks. */
  redirectTo: string | null;
  /** The asking client's language, if it said one. */
  locale: string | null;
}

/** What an ask is for: each kind is its own queue, with its own per-address count. */
export type MailAskKind = 'password-reset' | 'email-link' | 'email-code';

/** `done` of an ask recorded but not yet allowed by its address's limit (0 pending, 1 handled). */
const HELD = 2;

/**
 * Asks that must be answered alike whether or not the email has an account (POST
 * /api/password/forgot, and the sign-in link and code asks of mail-signin/), recorded as they
 * arrive and worked out in the background. One instance serves one kind.
 */
export class ResetRequestsRepository {
  readonly #db: Kysely<Tables>;
  readonly #kind: MailAskKind;
  constructor(db: Kysely<Tables>, kind: MailAskKind = 'password-reset') {
    this.#db = db;
    this.#kind = kind;
  }

  /**
   * Records an ask, held: it counts towards its address's limit at once (so simultaneous asks
   * see each other), but the worker does not take it until `release`, after the count allowed it.
   */
  async add(
    emailKey: string,
    address: string,
    at: number,
    extra: { redirectTo?: string | undefined; locale?: string | undefined } = {},
  ): Promise<bigint> {
    const row = await this.#db
      .insertInto('reset_requests')
      .values({
        email_key: emailKey,
        address,
        at,
        done: HELD,
        kind: this.#kind,
        redirect_to: extra.redirectTo ?? null,
        locale: extra.locale ?? null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** The ask is within its limit: the worker may take it. */
  async release(id: bigint): Promise<void> {
    await this.#db.updateTable('reset_requests').set({ done: 0 }).where('id', '=', id).execute();
  }

  async remove(id: bigint): Promise<void> {
    await this.#db.deleteFrom('reset_requests').where('id', '=', id).execute();
  }

  /** Asks from `address` since `since`. */
  async countFrom(address: string, since: number): Promise<number> {
    const row = await this.#db
      .selectFrom('reset_requests')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .where('address', '=', address)
      .where('kind', '=', this.#kind)
      .where('at', '>', BigInt(since))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** When the `nth` newest ask from `address` since `since` arrived. */
  async nthNewestFrom(address: string, since: number, nth: number): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('reset_requests')
      .select('at')
      .where('address', '=', address)
      .where('kind', '=', this.#kind)
      .where('at', '>', BigInt(since))
      .orderBy('at', 'desc')
      .offset(nth - 1)
      .limit(1)
      .executeTakeFirst();
    return row && Number(row.at);
  }

  async pending(limit: number): Promise<ResetRequest[]> {
    const rows = await this.#db
      .selectFrom('reset_requests')
      .select(['id', 'email_key', 'redirect_to', 'locale'])
      .where('done', '=', 0)
      .where('kind', '=', this.#kind)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      emailKey: r.email_key,
      redirectTo: r.redirect_to,
      locale: r.locale,
    }));
  }

  /**
   * Takes an ask for this worker; false when another instance already did. In the worker's
   * transaction, so an ask whose mail was not recorded (a crash) is taken again.
   */
  async take(id: bigint): Promise<boolean> {
    const result = await this.#db
      .updateTable('reset_requests')
      .set({ done: 1 })
      .where('id', '=', id)
      .where('done', '=', 0)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Handled asks older than `before` are removed; they only count towards the per-address limit.
   * So are held ones (a process that stopped between recording and releasing them).
   */
  async purgeBefore(before: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('reset_requests')
      .where('done', 'in', [1, HELD])
      .where('at', '<', BigInt(before))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
