// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type Kysely, type SqlBool, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Tallied audit records (issue 40, finding 4): an event a client can repeat at its own rate (a
 * throttled sign-in costs it no hashing) is one record per subject and window, counted, not one
 * per request. `tally_key` names the subject and window (unique: several instances counting the
 * same one meet on it, INSERT … ON CONFLICT adds to the count in one statement); `occurrences`
 * counts, `last_seen_at` is the newest. Other records keep a null key (never equal to another) and
 * one occurrence.
 *
 * An account's activity lists its own events apart from sign-in failures by anyone, which it
 * summarises: a partial index each, so a flood of either kind is never read past to find the other.
 */
export function createAuditTallies(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  // Literals, as the activity's queries write them: both planners match a partial index by its terms.
  const attempts = sql<SqlBool>`type in ('signin.failed', 'signin.throttled')`;
  const others = sql<SqlBool>`type not in ('signin.failed', 'signin.throttled')`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('audit_events').addColumn('tally_key', 'text').execute();
      await db.schema
        .alterTable('audit_events')
        .addColumn('occurrences', idColumn, (col) => col.notNull().defaultTo(1))
        .execute();
      await db.schema.alterTable('audit_events').addColumn('last_seen_at', time).execute();
      await db.schema
        .createIndex('audit_events_tally')
        .unique()
        .on('audit_events')
        .column('tally_key')
        .execute();
      await db.schema
        .createIndex('audit_events_user_own')
        .on('audit_events')
        .columns(['user_id', 'id'])
        .where(others)
        .execute();
      await db.schema
        .createIndex('audit_events_user_attempts')
        .on('audit_events')
        .columns(['user_id', 'id'])
        .where(attempts)
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('audit_events_user_attempts').execute();
      await db.schema.dropIndex('audit_events_user_own').execute();
      await db.schema.dropIndex('audit_events_tally').execute();
      for (const column of ['last_seen_at', 'occurrences', 'tally_key'])
        await db.schema.alterTable('audit_events').dropColumn(column).execute();
    },
  };
}
