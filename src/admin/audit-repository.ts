// The audit log's one table: what happened to an account and who did it. Written in the
// transaction of the change it records, so a record exists exactly when its change does.
import type { ColumnType, Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

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

export class AuditRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async record(event: AuditEvent, now: Date): Promise<void> {
    await this.#db
      .insertInto('audit_events')
      .values({
        created_at: now.toISOString(),
        type: event.type,
        actor_id: event.actorId,
        user_id: event.userId,
        address: event.address,
        user_agent: event.userAgent === null ? null : event.userAgent.slice(0, USER_AGENT_MAX),
        details: JSON.stringify(event.details, (_key, value) =>
          typeof value === 'bigint' ? String(value) : value,
        ),
      })
      .execute();
  }
}
