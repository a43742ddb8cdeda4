import type { Expression, Kysely, SqlBool } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** What one reservation sees: its scopes' attempts in the window (its own included), and those in flight. */
export interface AttemptCounts {
  /** This account from this address. */
  pair: number;
  account: number;
  accountInFlight: number;
  address: number;
  addressInFlight: number;
}

export type AttemptScope = { accountDigest: string; address?: string } | { address: string };

const asNumber = (value: unknown) => Number(value ?? 0);

export class SigninAttemptsRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /** Records an attempt in flight until `pendingUntil`; resolves its id. */
  async reserve(accountDigest: string, address: string, at: number, pendingUntil: number): Promise<bigint> {
    const row = await this.#db
      .insertInto('signin_attempts')
      .values({ account_digest: accountDigest, address, at, pending_until: pendingUntil })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /**
   * One read of every count the throttle needs. It runs after the reservation committed, so of N
   * simultaneous attempts the k-th to commit sees at least k: at most `limit` of them pass, on one
   * instance or many. The rows it reads are bounded by the limits themselves, since an attempt
   * that is refused removes its reservation.
   */
  async counts(accountDigest: string, address: string, since: number, now: number): Promise<AttemptCounts> {
    const row = await this.#db
      .selectFrom('signin_attempts')
      .select((eb) => {
        const count = (condition: Expression<SqlBool>) =>
          eb.fn.sum<number | string | bigint>(eb.case().when(condition).then(1).else(0).end());
        const ofAccount = eb('account_digest', '=', accountDigest);
        const ofAddress = eb('address', '=', address);
        const inFlight = eb('pending_until', '>', BigInt(now));
        return [
          count(eb.and([ofAccount, ofAddress])).as('pair'),
          count(eb.and([ofAccount])).as('account'),
          count(eb.and([ofAccount, inFlight])).as('account_in_flight'),
          count(eb.and([ofAddress])).as('address'),
          count(eb.and([ofAddress, inFlight])).as('address_in_flight'),
        ];
      })
      .where((eb) =>
        eb.and([
          eb.or([eb('account_digest', '=', accountDigest), eb('address', '=', address)]),
          eb('at', '>', BigInt(since)),
        ]),
      )
      .executeTakeFirst();
    return {
      pair: asNumber(row?.pair),
      account: asNumber(row?.account),
      accountInFlight: asNumber(row?.account_in_flight),
      address: asNumber(row?.address),
      addressInFlight: asNumber(row?.address_in_flight),
    };
  }

  /**
   * When the `nth` newest attempt in `scope` since `since` began (undefined when there are fewer):
   * the count drops below `nth` one window after it.
   */
  async nthNewest(scope: AttemptScope, since: number, nth: number): Promise<number | undefined> {
    let query = this.#db.selectFrom('signin_attempts').select('at').where('at', '>', BigInt(since));
    if ('accountDigest' in scope) query = query.where('account_digest', '=', scope.accountDigest);
    if (scope.address !== undefined) query = query.where('address', '=', scope.address);
    const row = await query
      .orderBy('at', 'desc')
      .offset(nth - 1)
      .limit(1)
      .executeTakeFirst();
    return row && Number(row.at);
  }

  /** The attempt failed: it stays, counted, no longer in flight. */
  async settle(id: bigint): Promise<void> {
    await this.#db.updateTable('signin_attempts').set({ pending_until: null }).where('id', '=', id).execute();
  }

  /** The attempt is not counted at all (refused before any hashing). */
  async remove(id: bigint): Promise<void> {
    await this.#db.deleteFrom('signin_attempts').where('id', '=', id).execute();
  }

  /** A success forgives that account's attempts from that address; without `address`, from everywhere. */
  async clear(accountDigest: string, address?: string): Promise<void> {
    let query = this.#db.deleteFrom('signin_attempts').where('account_digest', '=', accountDigest);
    if (address !== undefined) query = query.where('address', '=', address);
    await query.execute();
  }

  async deleteBefore(before: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('signin_attempts')
      .where('at', '<=', BigInt(before))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
