import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
type DialectName = 'sqlite' | 'postgres';

export function createUsers(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('users')
        .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (col) =>
          // SQLite: an INTEGER PRIMARY KEY is the 64-bit rowid; AUTOINCREMENT stops a deleted
          // user's id from ever being handed to someone else. PostgreSQL: a bigint identity.
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('email', 'text', (col) => col.notNull())
        // Uniqueness is enforced on a key the application normalises (trim + lower case) so both
        // engines agree exactly, Unicode included, instead of relying on NOCASE or citext.
        .addColumn('email_key', 'text', (col) => col.notNull().unique())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('password_hash', 'text', (col) => col.notNull())
        .addColumn('created_at', dialect === 'postgres' ? 'timestamptz' : 'text', (col) => col.notNull())
        .addColumn('updated_at', dialect === 'postgres' ? 'timestamptz' : 'text', (col) => col.notNull())
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('users').execute();
    },
  };
}
