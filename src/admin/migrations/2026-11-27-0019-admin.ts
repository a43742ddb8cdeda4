// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Administration (issue 29): the index that finds users by any part of their email or name at a
 * million users (docs/benchmarks.md, round 12), and the audit log's table (admin calls now; every
 * account event with the audit issue).
 *
 * PostgreSQL: pg_trgm's GIN indexes on the folded email and name keys, used by `LIKE '%q%'`.
 * SQLite: an FTS5 table with the trigram tokenizer over the same two columns, kept by triggers.
 */
export function createAdmin(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      if (dialect === 'postgres') {
        // A trusted extension since PostgreSQL 13: the database's owner may create it.
        await sql`create extension if not exists pg_trgm`.execute(db);
        await sql`create index users_email_trgm on users using gin (email_key gin_trgm_ops)`.execute(db);
        await sql`create index users_name_trgm on users using gin (name_key gin_trgm_ops)`.execute(db);
      } else {
        await sql`create virtual table users_search using fts5(
          email_key, name_key, content='users', content_rowid='id', tokenize='trigram')`.execute(db);
        await sql`insert into users_search (users_search) values ('rebuild')`.execute(db);
        await sql`create trigger users_search_insert after insert on users begin
          insert into users_search (rowid, email_key, name_key) values (new.id, new.email_key, new.name_key);
        end`.execute(db);
        await sql`create trigger users_search_delete after delete on users begin
          insert into users_search (users_search, rowid, email_key, name_key)
            values ('delete', old.id, old.email_key, old.name_key);
        end`.execute(db);
        await sql`create trigger users_search_update after update of email_key, name_key on users begin
          insert into users_search (users_search, rowid, email_key, name_key)
            values ('delete', old.id, old.email_key, old.name_key);
          insert into users_search (rowid, email_key, name_key) values (new.id, new.email_key, new.name_key);
        end`.execute(db);
      }
      await db.schema
        .createTable('audit_events')
        .addColumn('id', idColumn, (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('created_at', time, (col) => col.notNull())
        .addColumn('type', 'text', (col) => col.notNull())
        // No foreign keys: the record outlives the accounts it names.
        .addColumn('actor_id', idColumn)
        .addColumn('user_id', idColumn)
        .addColumn('address', 'text')
        .addColumn('user_agent', 'text')
        .addColumn('details', 'text', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('audit_events_user')
        .on('audit_events')
        .columns(['user_id', 'id'])
        .execute();
      await db.schema.createIndex('audit_events_at').on('audit_events').column('created_at').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('audit_events').execute();
      if (dialect === 'postgres') {
        await sql`drop index users_name_trgm`.execute(db);
        await sql`drop index users_email_trgm`.execute(db);
      } else {
        for (const trigger of ['users_search_update', 'users_search_delete', 'users_search_insert'])
          await sql`drop trigger ${sql.raw(trigger)}`.execute(db);
        await sql`drop table users_search`.execute(db);
      }
    },
  };
}
