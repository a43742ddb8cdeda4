import type { Kysely } from 'kysely';
import type { LimitScope, Tables } from '../db/schema.ts';

/** The counted events of the limits kept in the shared database (kernel/limits.ts). */
export class LimitEventsRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /** Records one event now, committed at once, so simultaneous requests see each other's. */
  async add(scope: LimitScope, subject: string, at: number): Promise<bigint> {
    const row = await this.#db
      .insertInto('limit_events')
      .values({ scope, subject, at })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async remove(ids: readonly bigint[]): Promise<void> {
    if (ids.length === 0) return;
    await this.#db.deleteFrom('limit_events').where('id', 'in', ids).execute();
  }

  /** Events of `scope` for `subject` after `since`. */
  async countSince(scope: LimitScope, subject: string, since: number): Promise<number> {
    const row = await this.#db
      .selectFrom('limit_events')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .where('scope', '=', scope)
      .where('subject', '=', subject)
      .where('at', '>', BigInt(since))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** When the `nth` newest event of `scope` for `subject` after `since` happened. */
  async nthNewestSince(
    scope: LimitScope,
    subject: string,
    since: number,
    nth: number,
  ): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('limit_events')
      .select('at')
      .where('scope', '=', scope)
      .where('subject', '=', subject)
      .where('at', '>', BigInt(since))
      .orderBy('at', 'desc')
      .offset(nth - 1)
      .limit(1)
      .executeTakeFirst();
    return row && Number(row.at);
  }

  /** Removes events of `scopes` older than `before`: they count towards no window any more. */
  async purgeBefore(scopes: readonly LimitScope[], before: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('limit_events')
      .where('scope', 'in', scopes)
      .where('at', '<', BigInt(before))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
