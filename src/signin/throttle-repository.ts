import type { Expression, Kysely, SqlBool } from 'kysely';
import { runPrepared, type SlottedQuery, slotted } from '../db/prepared.ts';
import type { Tables } from '../db/schema.ts';

/** What one reservation sees: its scopes' attempts in the window (its own included), and those in flight. */
export interface AttemptCounts {
  /** This account from this address. */
  pair: number;
  account: number;
  accountInFlight: number;
  address: number;
  addressInFlight: number;
  /** This account from this known device (zero for a client not known). */
  device: number;
}

/** For each count of AttemptCounts, the number it must stay below. */
export type AttemptLimits = AttemptCounts;

/** The count columns, by AttemptCounts' names; the counting query selects them in this order. */
const COUNT_COLUMNS = {
  pair: 'pair',
  account: 'account',
  accountInFlight: 'account_in_flight',
  address: 'address',
  addressInFlight: 'address_in_flight',
  device: 'device',
} as const satisfies Record<keyof AttemptCounts, string>;
const COUNTS = Object.keys(COUNT_COLUMNS) as (keyof AttemptCounts)[];

/** One attempt's scopes and times: its account, address and known device, now, and where its window starts. */
export interface AttemptAt {
  accountDigest: string;
  address: string;
  /** The digest of a known device's token; null for a client not known. */
  device: string | null;
  now: number;
  since: number;
}

const AT_SLOTS = ['accountDigest', 'address', 'device', 'now', 'since'] as const;
type AtSlot = (typeof AT_SLOTS)[number];
const ROOM_SLOTS = {
  pair: 'roomPair',
  account: 'roomAccount',
  accountInFlight: 'roomAccountInFlight',
  address: 'roomAddress',
  addressInFlight: 'roomAddressInFlight',
  device: 'roomDevice',
} as const satisfies Record<keyof AttemptCounts, string>;
const RESERVE_SLOTS = [...AT_SLOTS, 'pendingUntil', ...Object.values(ROOM_SLOTS)] as const;
type ReserveSlot = (typeof RESERVE_SLOTS)[number];

/** An attempt's values for its slots: times as the bigint columns hold them. */
const slotValues = ({ accountDigest, address, device, now, since }: AttemptAt): Record<AtSlot, unknown> => ({
  accountDigest,
  address,
  device,
  now: BigInt(now),
  since: BigInt(since),
});

export type AttemptScope =
  | { accountDigest: string; address?: string }
  | { address: string }
  | { accountDigest: string; device: string };

const asNumber = (value: unknown) => Number(value ?? 0);

export class SigninAttemptsRepository {
  readonly #db: Kysely<Tables>;
  // Every sign-in runs these two: built once, named (db/prepared.ts).
  #reserve: SlottedQuery<ReserveSlot> | undefined;
  #counts: SlottedQuery<AtSlot> | undefined;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /**
   * Records an attempt in flight until `pendingUntil` (resolving its id), in the same statement
   * that counts its scopes' attempts since `since`: only when every count is below its limit in
   * `room`. Undefined when one is not: the refusal wrote nothing. That count runs before the
   * insert and cannot see attempts committing alongside it, so an id only means the attempt may
   * go on to `counts`, which decides.
   */
  async reserve(at: AttemptAt, pendingUntil: number, room: AttemptLimits): Promise<bigint | undefined> {
    this.#reserve ??= slotted(RESERVE_SLOTS, (s) =>
      this.#db
        .insertInto('signin_attempts')
        .columns(['account_digest', 'address', 'device', 'at', 'pending_until'])
        .expression((eb) =>
          eb
            .selectFrom(this.#counting(s).as('counted'))
            .select([
              eb.val(s.accountDigest).as('account_digest'),
              eb.val(s.address).as('address'),
              eb.val(s.device).as('device'),
              eb.val(s.now).as('at'),
              eb.val(s.pendingUntil).as('pending_until'),
            ])
            .where((w) =>
              w.and(
                COUNTS.map((count) =>
                  w(w.fn.coalesce(`counted.${COUNT_COLUMNS[count]}`, w.lit(0)), '<', s[ROOM_SLOTS[count]]),
                ),
              ),
            ),
        )
        .returning('id'),
    );
    const values = { ...slotValues(at), pendingUntil: BigInt(pendingUntil) } as Record<ReserveSlot, unknown>;
    for (const count of COUNTS) values[ROOM_SLOTS[count]] = room[count];
    const rows = await runPrepared(this.#db, this.#reserve.query, this.#reserve.parameters(values));
    return rows[0]?.[0] as bigint | undefined;
  }

  /**
   * One read of every count the throttle needs. It runs after the reservation committed, so of N
   * simultaneous attempts the k-th to commit sees at least k: at most `limit` of them pass, on one
   * instance or many. The rows it reads are bounded by the limits themselves, since an attempt
   * that is refused removes its reservation.
   */
  async counts(at: AttemptAt): Promise<AttemptCounts> {
    this.#counts ??= slotted(AT_SLOTS, (s) => this.#counting(s));
    const rows = await runPrepared(this.#db, this.#counts.query, this.#counts.parameters(slotValues(at)));
    const row = rows[0];
    const counts = {} as AttemptCounts;
    // In COUNTS' order, which is the select list's.
    COUNTS.forEach((count, i) => {
      counts[count] = asNumber(row?.[i]);
    });
    return counts;
  }

  /** Every count of AttemptCounts in one row, in COUNTS' order (sums: null when no row matched). */
  #counting(s: Readonly<Record<AtSlot, never>>) {
    return this.#db
      .selectFrom('signin_attempts')
      .select((eb) => {
        const ofAccount = eb('account_digest', '=', s.accountDigest);
        const ofAddress = eb('address', '=', s.address);
        const inFlight = eb('pending_until', '>', s.now);
        const conditions: Record<keyof AttemptCounts, Expression<SqlBool>> = {
          pair: eb.and([ofAccount, ofAddress]),
          account: ofAccount,
          accountInFlight: eb.and([ofAccount, inFlight]),
          address: ofAddress,
          addressInFlight: eb.and([ofAddress, inFlight]),
          // NULL = NULL is not true: a client not known counts none.
          device: eb.and([ofAccount, eb('device', '=', s.device)]),
        };
        return COUNTS.map((count) =>
          eb.fn
            .sum<number | string | bigint>(eb.case().when(conditions[count]).then(1).else(0).end())
            .as(COUNT_COLUMNS[count]),
        );
      })
      .where((eb) =>
        eb.and([
          eb.or([eb('account_digest', '=', s.accountDigest), eb('address', '=', s.address)]),
          eb('at', '>', s.since),
        ]),
      );
  }

  /**
   * When the `nth` newest attempt in `scope` since `since` began (undefined when there are fewer):
   * the count drops below `nth` one window after it.
   */
  async nthNewest(scope: AttemptScope, since: number, nth: number): Promise<number | undefined> {
    let query = this.#db.selectFrom('signin_attempts').select('at').where('at', '>', BigInt(since));
    if ('accountDigest' in scope) query = query.where('account_digest', '=', scope.accountDigest);
    if ('address' in scope && scope.address !== undefined) query = query.where('address', '=', scope.address);
    if ('device' in scope) query = query.where('device', '=', scope.device);
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

  /**
   * A success forgives that account's attempts from that address and from that device (null:
   * none); without `from`, from everywhere.
   */
  async clear(accountDigest: string, from?: { address: string; device: string | null }): Promise<void> {
    let query = this.#db.deleteFrom('signin_attempts').where('account_digest', '=', accountDigest);
    if (from !== undefined)
      query = query.where((eb) => eb.or([eb('address', '=', from.address), eb('device', '=', from.device)]));
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
