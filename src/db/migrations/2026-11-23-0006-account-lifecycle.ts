// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * The account lifecycle (issue 13):
 * - users.email_verified_at: when the address was proven to reach its owner (null: not yet);
 * - sessions.public_id (the id a user sees and names to end a session; never the token or its
 *   hash) and sessions.user_agent; sessions that exist get a random public id;
 * - account_tokens: password-reset and email-verification tokens, stored only as SHA-256 hashes,
 *   single use, with an expiry;
 * - reset_requests: each POST /api/password/forgot, recorded as it arrives and worked out in the
 *   background, so the answer takes the same time whether or not the email has an account;
 * - mail_outbox: every message, recorded in the transaction of the change that caused it and
 *   delivered by a background sender that claims it with a lease.
 */
export function createAccountLifecycle(dialect: Dialect): Migration {
  const timestamp = dialect === 'postgres' ? 'timestamptz' : 'text';
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('users').addColumn('email_verified_at', timestamp).execute();

      await db.schema.alterTable('sessions').addColumn('public_id', 'text').execute();
      await db.schema.alterTable('sessions').addColumn('user_agent', 'text').execute();
      const randomId =
        dialect === 'postgres'
          ? sql`replace(gen_random_uuid()::text, '-', '')`
          : sql`lower(hex(randomblob(16)))`;
      await sql`update sessions set public_id = ${randomId} where public_id is null`.execute(db);
      await db.schema.createIndex('sessions_public_id').on('sessions').column('public_id').unique().execute();
      await db.schema
        .createIndex('sessions_user')
        .on('sessions')
        .columns(['user_id', 'created_at'])
        .execute();

      await db.schema
        .createTable('account_tokens')
        .addColumn('token_hash', 'text', (col) => col.primaryKey())
        .addColumn('user_id', idColumn, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('purpose', 'text', (col) => col.notNull())
        // For email verification: the address the token proves (a later change makes it stale).
        .addColumn('email', 'text')
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('expires_at', timestamp, (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('account_tokens_user')
        .on('account_tokens')
        .columns(['user_id', 'purpose', 'created_at'])
        .execute();

      await db.schema
        .createTable('reset_requests')
        .addColumn('id', idColumn, (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('email_key', 'text', (col) => col.notNull())
        .addColumn('address', 'text', (col) => col.notNull())
        .addColumn('at', 'bigint', (col) => col.notNull())
        .addColumn('done', 'integer', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex('reset_requests_address')
        .on('reset_requests')
        .columns(['address', 'at'])
        .execute();
      await db.schema
        .createIndex('reset_requests_pending')
        .on('reset_requests')
        .columns(['done', 'id'])
        .execute();

      await db.schema
        .createTable('mail_outbox')
        .addColumn('id', idColumn, (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('recipient', 'text', (col) => col.notNull())
        .addColumn('subject', 'text', (col) => col.notNull())
        .addColumn('text_body', 'text', (col) => col.notNull())
        .addColumn('html_body', 'text', (col) => col.notNull())
        // pending, sent or failed
        .addColumn('status', 'text', (col) => col.notNull().defaultTo('pending'))
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
        // Epoch ms: when the next attempt may start, and until when a sender's claim holds.
        .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
        .addColumn('claimed_until', 'bigint')
        .addColumn('claimed_by', 'text')
        .addColumn('sent_at', timestamp)
        .addColumn('last_error', 'text')
        .execute();
      await db.schema
        .createIndex('mail_outbox_due')
        .on('mail_outbox')
        .columns(['status', 'next_attempt_at'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('mail_outbox').execute();
      await db.schema.dropTable('reset_requests').execute();
      await db.schema.dropTable('account_tokens').execute();
      await db.schema.dropIndex('sessions_user').execute();
      await db.schema.dropIndex('sessions_public_id').execute();
      await db.schema.alterTable('sessions').dropColumn('user_agent').execute();
      await db.schema.alterTable('sessions').dropColumn('public_id').execute();
      await db.schema.alterTable('users').dropColumn('email_verified_at').execute();
    },
  };
}
