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
}

declare module '../db/schema.ts' {
  interface Tables {
    audit_events: AuditEventsTable;
  }
}

/** Who did it, from where. */
export interface AuditActor {
  actorId: bigint | null;
  address: string | null;
  userAgent: string | null;
}

export interface AuditEvent extends AuditActor {
  type: string;
  /** The account it is about, if any. */
  userId: bigint | null;
  details: Readonly<Record<string, unknown>>;
}

/** The longest User-Agent kept: enough to tell browsers apart, never a row of a client's choosing. */
const USER_AGENT_MAX = 512;

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
    return eb.and(all);
  };
}

const recordOf = (row: {
  id: bigint;
  created_at: Date;
  type: string;
  actor_id: bigint | null;
  user_id: bigint | null;
  address: string | null;
  user_agent: string | null;
  details: string;
}): AuditRecord => ({
  id: row.id,
  at: row.created_at,
  type: row.type,
  actorId: row.actor_id,
  userId: row.user_id,
  address: row.address,
  userAgent: row.user_agent,
  details: parseExact<Record<string, unknown>>(row.details),
});

/** An event as its row stores it: the one place its User-Agent is cut and its details written. */
export function auditRow(event: AuditEvent, now: Date) {
  return {
    created_at: now.toISOString(),
    type: event.type,
    actor_id: event.actorId,
    user_id: event.userId,
    address: event.address,
    user_agent: event.userAgent === null ? null : event.userAgent.slice(0, USER_AGENT_MAX),
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
