// The audit log's part of the journal (kernel/journal.ts): a record of every event, written with
// the change's own repositories, so a record exists exactly when its change does.
import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';
import type { JournalEntry, JournalSink, SinkStatement } from '../kernel/journal.ts';
import { AuditRepository, auditRow } from './repository.ts';

export interface AuditPolicy {
  /** Whether successful sign-ins are recorded (AUDIT_SIGNINS). */
  signins: boolean;
}

/**
 * How long one tallied record counts its events (a throttled sign-in's): an hour, aligned to the
 * clock's hours, so that every instance names the same window. The log grows by at most one such
 * record per subject and hour, whatever the rate of the events.
 */
export const TALLY_WINDOW_MS = 3600_000;

/** Bulk records per insert: a few hundred rows keep every store under its parameter limit. */
const RECORDS_PER_INSERT = 500;

export function auditSink(policy: AuditPolicy): JournalSink {
  const kept = (entry: JournalEntry) =>
    entry.event !== undefined && (policy.signins || entry.event.type !== 'signin.succeeded')
      ? entry.event
      : undefined;
  return {
    async write(db: Kysely<Tables>, entry: JournalEntry): Promise<number> {
      const event = kept(entry);
      if (!event) return 0;
      const audit = new AuditRepository(db);
      if (entry.tally === undefined) await audit.record(event, entry.at);
      else {
        const now = entry.at.getTime();
        const window = new Date(now - (now % TALLY_WINDOW_MS)).toISOString();
        await audit.tally(event, `${event.type} ${entry.tally} ${window}`, entry.at);
      }
      return 1;
    },
    async writeMany(db: Kysely<Tables>, entries: readonly JournalEntry[]): Promise<number> {
      const events = entries.flatMap((entry) => kept(entry) ?? []);
      const audit = new AuditRepository(db);
      for (let i = 0; i < events.length; i += RECORDS_PER_INSERT)
        await audit.recordMany(events.slice(i, i + RECORDS_PER_INSERT), entries[0]!.at);
      return events.length;
    },
    statement: auditStatement(kept),
  };
}

const SLOTS = ['at', 'type', 'address', 'userAgent', 'details'] as const;
type AuditSlot = (typeof SLOTS)[number];

/**
 * The record in the grant's statement: its user (`granted`'s) is both the account and the actor
 * of the sign-in; a null type (a sign-in with AUDIT_SIGNINS=false) records nothing.
 */
function auditStatement(kept: (entry: JournalEntry) => JournalEntry['event']): SinkStatement<AuditSlot> {
  return {
    name: 'audited',
    slots: SLOTS,
    insert: (db, s) =>
      db
        .insertInto('audit_events')
        .columns(['created_at', 'type', 'actor_id', 'user_id', 'address', 'user_agent', 'details'])
        .expression((eb) =>
          eb
            .selectFrom('granted')
            .select([
              eb.val(s.at).as('created_at'),
              eb.val(s.type).as('type'),
              'user_id as actor_id',
              'user_id',
              eb.val(s.address).as('address'),
              eb.val(s.userAgent).as('user_agent'),
              eb.val(s.details).as('details'),
            ])
            .where(eb.cast(eb.val(s.type), 'text'), 'is not', null),
        )
        .returning('id'),
    values: (entry) => {
      const event = kept(entry);
      const row = event && auditRow(event, entry.at);
      return {
        at: row?.created_at ?? null,
        type: row?.type ?? null,
        address: row?.address ?? null,
        userAgent: row?.user_agent ?? null,
        details: row?.details ?? null,
      };
    },
  };
}
