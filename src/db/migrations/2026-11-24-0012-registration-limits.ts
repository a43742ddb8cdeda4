// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Limits counted in the shared database, so every instance counts together (issue 25):
 * limit_events holds one row per counted event, by scope (what is limited: registrations per
 * client address, email changes per account, email-change mails per mailbox) and subject (the
 * address key, the user id, a digest of the mailbox), with its time in epoch ms. Rows older than
 * the window are purged in the background.
 */
export function createRegistrationLimits(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('limit_events')
        .addColumn('id', idColumn, (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('scope', 'text', (col) => col.notNull())
        .addColumn('subject', 'text', (col) => col.notNull())
        .addColumn('at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('limit_events_subject')
        .on('limit_events')
        .columns(['scope', 'subject', 'at'])
        .execute();
      await db.schema.createIndex('limit_events_at').on('limit_events').column('at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('limit_events').execute();
    },
  };
}
