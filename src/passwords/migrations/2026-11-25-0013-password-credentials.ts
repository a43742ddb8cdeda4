// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Credentials apart from the user (issue 26, point 2; decision 170): an account may have no
 * password (made through a provider, a mail link, or by an operator), so the hash moves from
 * users.password_hash to password_credentials, one row per account that has a password, with the
 * time it was set as epoch ms (as 0011 and 0012 store times). Every hash is copied across; its
 * changed_at is the user row's updated_at, the last time the account (and so at most then its
 * password) changed. Then users.password_hash goes: neither store keeps it in an index or a
 * constraint other than NOT NULL, so both drop it in place.
 */
export function createPasswordCredentials(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  // users.updated_at (timestamptz on PostgreSQL, ISO 8601 text on SQLite) as epoch milliseconds.
  const updatedAtMs =
    dialect === 'postgres'
      ? sql`(extract(epoch from updated_at) * 1000)::bigint`
      : sql`cast(round((julianday(updated_at) - 2440587.5) * 86400000) as integer)`;
  return {
    async up(db: Kysely<unknown>) {
      // SQLite runs migrations without a transaction around them (no transactional DDL in
      // Kysely's adapter), so a process killed half-way must find each step safe to run again:
      // the table may be there already, some hashes copied, the column gone.
      if (dialect === 'sqlite') {
        const { rows } = await sql<{ n: number }>`select count(*) as n from pragma_table_info('users')
          where name = 'password_hash'`.execute(db);
        if (Number(rows[0]?.n ?? 0) === 0) {
          await sql`create table if not exists password_credentials (user_id integer primary key
            references users (id) on delete cascade, hash text not null, changed_at bigint not null)`.execute(
            db,
          );
          return;
        }
      }
      await db.schema
        .createTable('password_credentials')
        .ifNotExists()
        .addColumn('user_id', idColumn, (col) => col.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('hash', 'text', (col) => col.notNull())
        .addColumn('changed_at', 'bigint', (col) => col.notNull())
        .execute();
      await sql`insert into password_credentials (user_id, hash, changed_at)
        select id, password_hash, ${updatedAtMs} from users where true
        on conflict (user_id) do nothing`.execute(db);
      await db.schema.alterTable('users').dropColumn('password_hash').execute();
    },
    async down(db: Kysely<unknown>) {
      // Back to a NOT NULL column: an account without a password gets a hash no password matches.
      await db.schema
        .alterTable('users')
        .addColumn('password_hash', 'text', (col) => col.notNull().defaultTo('!'))
        .execute();
      await sql`update users set password_hash = coalesce(
        (select hash from password_credentials where password_credentials.user_id = users.id), '!')`.execute(
        db,
      );
      await db.schema.dropTable('password_credentials').execute();
    },
  };
}
