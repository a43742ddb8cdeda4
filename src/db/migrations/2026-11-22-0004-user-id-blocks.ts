import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { DialectName } from '../database.ts';
import { USER_ID_BLOCK } from '../schema.ts';

/**
 * How many users each block of 1,024 ids holds, kept exact by triggers in the same transaction as
 * every insert and delete, whatever writes them (the API, the CLI, plain SQL). The sum is the total
 * without counting the table, and a running sum finds which block page N of the id order starts
 * in, so a deep page reads at most one block's worth of rows instead of skipping every row before
 * it (docs/decisions.md, "Deep pages").
 *
 * Also indexes the other sort orders of GET /api/users, so their first pages need no full sort.
 */
export function createUserIdBlocks(dialect: DialectName): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('user_id_blocks')
        .addColumn('block', 'bigint', (col) => col.primaryKey())
        .addColumn('users', 'bigint', (col) => col.notNull())
        .execute();
      if (dialect === 'postgres') {
        // Statement-level triggers see all rows of a bulk insert at once: one upsert per block,
        // in block order so that two bulk writers lock blocks in the same order.
        await sql`
          create function usher_count_inserted_users() returns trigger language plpgsql as $$
          begin
            insert into user_id_blocks (block, users)
              select id / ${sql.lit(USER_ID_BLOCK)}, count(*) from inserted group by 1 order by 1
              on conflict (block) do update set users = user_id_blocks.users + excluded.users;
            return null;
          end $$`.execute(db);
        await sql`
          create function usher_count_deleted_users() returns trigger language plpgsql as $$
          begin
            update user_id_blocks b set users = b.users - d.n
              from (select id / ${sql.lit(USER_ID_BLOCK)} as block, count(*) as n
                      from deleted group by 1) d
              where b.block = d.block;
            return null;
          end $$`.execute(db);
        await sql`
          create trigger users_count_inserted after insert on users
            referencing new table as inserted for each statement
            execute function usher_count_inserted_users()`.execute(db);
        await sql`
          create trigger users_count_deleted after delete on users
            referencing old table as deleted for each statement
            execute function usher_count_deleted_users()`.execute(db);
      } else {
        await sql`
          create trigger users_count_inserted after insert on users begin
            insert into user_id_blocks (block, users) values (new.id / ${sql.lit(USER_ID_BLOCK)}, 1)
              on conflict (block) do update set users = users + 1;
          end`.execute(db);
        await sql`
          create trigger users_count_deleted after delete on users begin
            update user_id_blocks set users = users - 1 where block = old.id / ${sql.lit(USER_ID_BLOCK)};
          end`.execute(db);
      }
      // After the triggers: on PostgreSQL creating them waited for writers in flight and holds
      // off new ones until this migration commits, so no row is counted twice or missed.
      await sql`
        insert into user_id_blocks (block, users)
          select id / ${sql.lit(USER_ID_BLOCK)}, count(*) from users group by 1`.execute(db);

      await db.schema.createIndex('users_name').on('users').columns(['name', 'id']).execute();
      await db.schema.createIndex('users_created_at').on('users').columns(['created_at', 'id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('users_created_at').execute();
      await db.schema.dropIndex('users_name').execute();
      if (dialect === 'postgres') {
        await sql`drop trigger users_count_inserted on users`.execute(db);
        await sql`drop trigger users_count_deleted on users`.execute(db);
        await sql`drop function usher_count_inserted_users`.execute(db);
        await sql`drop function usher_count_deleted_users`.execute(db);
      } else {
        await sql`drop trigger users_count_inserted`.execute(db);
        await sql`drop trigger users_count_deleted`.execute(db);
      }
      await db.schema.dropTable('user_id_blocks').execute();
    },
  };
}
