// Frozen once landed, as every migration: every value it uses is written here.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** The example feature's table: notes, each an account's, removed with it. */
export function createExampleNotes(dialect: 'sqlite' | 'postgres'): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('example_notes')
        .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('user_id', 'bigint', (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('text', 'text', (col) => col.notNull())
        .addColumn('added_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('example_notes_by_user')
        .on('example_notes')
        .columns(['user_id', 'id'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('example_notes').execute();
    },
  };
}
