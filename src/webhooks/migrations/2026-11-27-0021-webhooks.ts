// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type ColumnDefinitionBuilder, type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Webhooks (issue 30): the receivers admins register, the event types each listens to (one row
 * per pair, so that recording an event is one INSERT … SELECT that writes nothing when no one
 * listens), and the deliveries: one row per event and receiver, written in the transaction of the
 * change, claimed with a lease by one instance at a time, in order per (receiver, user).
 */
export function createWebhooks(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  const identity = (col: ColumnDefinitionBuilder) =>
    dialect === 'postgres'
      ? col.primaryKey().generatedByDefaultAsIdentity()
      : col.primaryKey().autoIncrement();
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webhooks')
        .addColumn('id', idColumn, identity)
        .addColumn('url', 'text', (col) => col.notNull())
        // The event types as registered (a JSON array), for showing; webhook_events is what is matched.
        .addColumn('events', 'text', (col) => col.notNull())
        // AES-256-GCM under ENCRYPTION_KEY: the signing secret must be read back to sign.
        .addColumn('secret_sealed', 'text', (col) => col.notNull())
        .addColumn('created_at', time, (col) => col.notNull())
        .addColumn('created_by', idColumn)
        .execute();
      await db.schema
        .createTable('webhook_events')
        .addColumn('event_type', 'text', (col) => col.notNull())
        .addColumn('webhook_id', idColumn, (col) =>
          col.notNull().references('webhooks.id').onDelete('cascade'),
        )
        .addPrimaryKeyConstraint('webhook_events_pk', ['event_type', 'webhook_id'])
        .execute();
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', idColumn, identity)
        .addColumn('webhook_id', idColumn, (col) =>
          col.notNull().references('webhooks.id').onDelete('cascade'),
        )
        // Standard Webhooks' webhook-id: one per event, the same at every attempt.
        .addColumn('message_id', 'text', (col) => col.notNull())
        .addColumn('event_type', 'text', (col) => col.notNull())
        // The order key: no foreign key, a user.deleted delivery outlives its user.
        .addColumn('user_id', idColumn, (col) => col.notNull())
        // The body exactly as it is sent (JSON).
        .addColumn('payload', 'text', (col) => col.notNull())
        .addColumn('created_at', time, (col) => col.notNull())
        .addColumn('status', 'text', (col) => col.notNull().defaultTo('pending'))
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
        // Epoch milliseconds: compared with the clock in every claim.
        .addColumn('retry_until', 'bigint', (col) => col.notNull())
        .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_until', 'bigint')
        .addColumn('last_attempt_at', time)
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('sent_at', time)
        .execute();
      // Due deliveries, found without reading the finished ones.
      await sql`create index webhook_deliveries_due on webhook_deliveries (next_attempt_at, id) where status = 'pending'`.execute(
        db,
      );
      // "Is an earlier delivery of this receiver for this user still pending?": each claim asks.
      await sql`create index webhook_deliveries_order on webhook_deliveries (webhook_id, user_id, id) where status = 'pending'`.execute(
        db,
      );
      // A receiver's deliveries, newest first (the admin API), and finished ones by age (purge).
      await db.schema
        .createIndex('webhook_deliveries_webhook')
        .on('webhook_deliveries')
        .columns(['webhook_id', 'id'])
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_created')
        .on('webhook_deliveries')
        .column('created_at')
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('webhook_deliveries').execute();
      await db.schema.dropTable('webhook_events').execute();
      await db.schema.dropTable('webhooks').execute();
    },
  };
}
