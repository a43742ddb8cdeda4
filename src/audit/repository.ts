// The audit log's one table: what happened to an account and who did it. Written in the
// transaction of the change it records, so a record exists exactly when its change does.
import {
  type ColumnType,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type SqlBool,
  sql,
} from 'kysely';
import { timestamp as sqlTimestamp, type Tables } from '../db/schema.ts';
import { timeFromIso } from '../db/stored-time.ts';
import type { Actor } from '../kernel/scope.ts';
import { parseExact, stringifyExact } from '../shared/exact-json.ts';

export interface AuditEventsTable {
  id: ColumnType<bigint, never, never>;
  created_at: ColumnType<Date, string, never>;
  type: string;
  actor_id: ColumnType<bigint | null, bigint | null, never>;
  user_id: ColumnType<bigint | null, bigint | null, never>;
  address: ColumnType<string | null, string | null, never>;
  user_agent: ColumnType<string | null, string | null, never>;
  /** A JSON object; never a secret or a password. */
  details: ColumnType<string, string, never>;
  /** A tallied record's subject and window (null: a record of one event). */
  tally_key: ColumnType<string | null, string | null | undefined, never>;
  /** How many events a tallied record counts (1 for the others). */
  occurrences: ColumnType<bigint | number, number | undefined, bigint | number>;
  /** A tallied record's newest event (null for the others: `created_at` is its only one). */
  last_seen_at: ColumnType<Date | null, string | null | undefined, string>;
}

declare module '../db/schema.ts' {
  interface Tables {
    audit_events: AuditEventsTable;
  }
}

export interface AuditEvent extends Actor {
  type: string;
  /** The account it is about, if any. */
  userId: bigint | null;
  details: Readonly<Record<string, unknown>>;
}

/**
 * The longest User-Agent kept: enough to tell browsers apart (a desktop browser's is about 120
 * characters), never a row of a client's choosing. As sessions keep theirs.
 */
export const USER_AGENT_MAX = 256;
/** A User-Agent as kept, by every record (and, read back, by records written when more was kept). */
const shortAgent = (userAgent: string | null) =>
  userAgent === null ? null : userAgent.slice(0, USER_AGENT_MAX);

/** The types an account's activity summarises rather than lists: an attacker makes them at will. */
export const ATTEMPT_TYPES = ['signin.failed', 'signin.throttled'] as const;
// Written as in migration 0027's partial indexes, literals and all: both planners match them by their terms.
const ATTEMPT = sql<SqlBool>`type in ('signin.failed', 'signin.throttled')`;
const NOT_ATTEMPT = sql<SqlBool>`type not in ('signin.failed', 'signin.throttled')`;

/** A stored record, as the admin API and the account's activity show it. */
export interface AuditRecord {
  id: bigint;
  at: Date;
  type: string;
  actorId: bigint | null;
  userId: bigint | null;
  address: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
}

export interface AuditFilters {
  userId?: bigint | undefined;
  /** A type, or a type's leading dotted part (`signin` finds `signin.failed`); only [a-z_.]. */
  type?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Types left out (the account's activity leaves out staff reading it). */
  excludeTypes?: readonly string[] | undefined;
  /** Sign-in failures and throttling (ATTEMPT_TYPES) only, or all but them. */
  attempts?: boolean | undefined;
}

/** An account's sign-in failures and throttling, summed (the activity's one line for them). */
export interface AttemptsSummary {
  /** Failed sign-ins (signin.failed records). */
  failed: number;
  /** Throttled sign-ins (the occurrences of signin.throttled records). */
  throttled: number;
  /** Whether there may be more than were read (the sums stop at the newest `cap` records). */
  capped: boolean;
  /** The newest record of them: the line's id, address and User-Agent. */
  newest: AuditRecord;
  /** When the newest of them happened (a tally opened earlier may have counted one since). */
  lastAt: Date;
}

/** The filters as one condition (true when there are none). */
function kept(filters: AuditFilters) {
  return (eb: ExpressionBuilder<Tables, 'audit_events'>): Expression<SqlBool> => {
    const all: Expression<SqlBool>[] = [];
    if (filters.userId !== undefined) all.push(eb('user_id', '=', filters.userId));
    if (filters.type !== undefined) {
      const prefix = `${filters.type}.`;
      // substr, not LIKE: the same on both stores, with no wildcard to escape.
      all.push(
        eb.or([
          eb('type', '=', filters.type),
          eb(sql<string>`substr(type, 1, ${sql.lit(prefix.length)})`, '=', prefix),
        ]),
      );
    }
    if (filters.since !== undefined) all.push(eb('created_at', '>=', sqlTimestamp(filters.since)));
    if (filters.until !== undefined) all.push(eb('created_at', '<', sqlTimestamp(filters.until)));
    if (filters.excludeTypes && filters.excludeTypes.length > 0)
      all.push(eb('type', 'not in', filters.excludeTypes));
    if (filters.attempts !== undefined) all.push(filters.attempts ? ATTEMPT : NOT_ATTEMPT);
    return eb.and(all);
  };
}

type AuditRow = {
  id: bigint;
  created_at: Date;
  type: string;
  actor_id: bigint | null;
  user_id: bigint | null;
  address: string | null;
  user_agent: string | null;
  details: string;
  tally_key: string | null;
  occurrences: bigint | number;
  last_seen_at: Date | null;
};

/**
 * A row as the API shows it. A tallied record's details add `count`, `firstAt` (its `at`) and
 * `lastAt`; its address and User-Agent are those of the event that opened it.
 */
function recordOf(row: AuditRow): AuditRecord {
  const details = parseExact<Record<string, unknown>>(row.details);
  return {
    id: row.id,
    at: row.created_at,
    type: row.type,
    actorId: row.actor_id,
    userId: row.user_id,
    address: row.address,
    userAgent: shortAgent(row.user_agent),
    details:
      row.tally_key === null
        ? details
        : {
            ...details,
            count: Number(row.occurrences),
            firstAt: row.created_at.toISOString(),
            lastAt: (row.last_seen_at ?? row.created_at).toISOString(),
          },
  };
}

/** An event as its row stores it: the one place its User-Agent is cut and its details written. */
export function auditRow(event: AuditEvent, now: Date) {
  return {
    created_at: now.toISOString(),
    type: event.type,
    actor_id: event.actorId,
    user_id: event.userId,
    address: event.address,
    user_agent: shortAgent(event.userAgent),
    details: stringifyExact(event.details),
  };
}

export class AuditRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async record(event: AuditEvent, now: Date): Promise<void> {
    await this.recordMany([event], now);
  }

  /** Several records in one insert (a bulk import's). */
  async recordMany(events: readonly AuditEvent[], now: Date): Promise<void> {
    if (events.length === 0) return;
    await this.#db
      .insertInto('audit_events')
      .values(events.map((event) => auditRow(event, now)))
      .execute();
  }

  /**
   * One more of a tallied event: the record of `key` (its subject and window) is written by the
   * first, and each later one adds to its count and moves its last time, in one statement. The
   * unique key makes concurrent writers, on any instance, meet on one row: none is lost, none doubled.
   */
  async tally(event: AuditEvent, key: string, now: Date): Promise<void> {
    const at = now.toISOString();
    await this.#db
      .insertInto('audit_events')
      .values({ ...auditRow(event, now), tally_key: key, occurrences: 1, last_seen_at: at })
      .onConflict((oc) =>
        oc.column('tally_key').doUpdateSet((eb) => ({
          occurrences: eb('audit_events.occurrences', '+', 1),
          // Instances' clocks differ a little: the latest time stays.
          last_seen_at: sql<string>`case when ${eb.ref('excluded.last_seen_at')} > ${eb.ref('audit_events.last_seen_at')}
            then ${eb.ref('excluded.last_seen_at')} else ${eb.ref('audit_events.last_seen_at')} end`,
        })),
      )
      .execute();
  }

  /**
   * The sign-in failures and throttling about `userId` since `since`, summed over the newest `cap`
   * records of them (read on their partial index: an account's own events are never read for it,
   * and a flood of them is read no further than `cap`); undefined when there are none.
   */
  async attempts(userId: bigint, since: Date, cap: number): Promise<AttemptsSummary | undefined> {
    const sums = await this.#db
      .selectFrom((db) =>
        db
          .selectFrom('audit_events')
          .select(['id', 'type', 'occurrences', 'created_at', 'last_seen_at'])
          .where(kept({ userId, since, attempts: true }))
          .orderBy('id', 'desc')
          .limit(cap)
          .as('newest'),
      )
      .select((eb) => [
        eb.fn.countAll<bigint | number>().as('records'),
        eb.fn.max('id').as('id'),
        eb.fn
          .sum<string | number | bigint>(sql`case when type = 'signin.failed' then 1 else 0 end`)
          .as('failed'),
        eb.fn
          .sum<string | number | bigint>(sql`case when type = 'signin.throttled' then occurrences else 0 end`)
          .as('throttled'),
        // An expression, which SQLite's adapter leaves as the text it stores (stored-time.ts).
        eb.fn.max(sql<Date | string>`coalesce(last_seen_at, created_at)`).as('last_at'),
      ])
      .executeTakeFirstOrThrow();
    const records = Number(sums.records);
    if (records === 0 || sums.id === null) return undefined;
    const newest = await this.#db
      .selectFrom('audit_events')
      .selectAll()
      .where('id', '=', sums.id)
      .executeTakeFirstOrThrow();
    return {
      failed: Number(sums.failed),
      throttled: Number(sums.throttled),
      capped: records >= cap,
      newest: recordOf(newest),
      lastAt:
        typeof sums.last_at === 'string' ? timeFromIso(sums.last_at) : (sums.last_at ?? newest.created_at),
    };
  }

  /** Records the filters keep, newest first. */
  async search(filters: AuditFilters, offset: number, limit: number): Promise<AuditRecord[]> {
    const rows = await this.#db
      .selectFrom('audit_events')
      .selectAll()
      .where(kept(filters))
      .orderBy('id', 'desc')
      .offset(offset)
      .limit(limit)
      .execute();
    return rows.map(recordOf);
  }

  /** How many records the filters keep, counted no further than `cap`. */
  async count(filters: AuditFilters, cap: number): Promise<number> {
    const row = await this.#db
      .selectFrom((db) =>
        db.selectFrom('audit_events').select('id').where(kept(filters)).limit(cap).as('kept'),
      )
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Records older than `before`, at most `limit` of them (the purge runs in small rounds). */
  async purge(before: Date, limit: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('audit_events')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('audit_events')
          .select('id')
          .where('created_at', '<', sqlTimestamp(before))
          // By time, on its index: with nothing expired the read stops at once, whatever the table holds.
          .orderBy('created_at')
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
