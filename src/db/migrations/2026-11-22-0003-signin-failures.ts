import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
type DialectName = 'sqlite' | 'postgres';

/**
 * Failed sign-ins, one row each, so every instance sharing the database counts them together.
 * Times are epoch milliseconds: plain integers compare and subtract alike on both engines.
 */
export function createSigninFailures(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signin_failures')
        .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('account_key', 'text', (col) => col.notNull())
        .addColumn('address', 'text', (col) => col.notNull())
        .addColumn('failed_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('signin_failures_account')
        .on('signin_failures')
        .columns(['account_key', 'address', 'failed_at'])
        .execute();
      await db.schema
        .createIndex('signin_failures_address')
        .on('signin_failures')
        .columns(['address', 'failed_at'])
        .execute();
      await db.schema.createIndex('signin_failures_time').on('signin_failures').column('failed_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('signin_failures').execute();
    },
  };
}
