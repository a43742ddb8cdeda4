import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
type DialectName = 'sqlite' | 'postgres';
/** The widths of the id ranges counted (the app's USER_COUNT_SPAN must stay equal to these). */
const USER_COUNT_SPAN = { wide: 65_536, narrow: 1_024 } as const;

/**
 * How many users each range of ids holds, at two widths (USER_COUNT_SPAN), kept exact by
 * triggers in the same transaction as every insert and delete, whatever writes them (the API, the
 * CLI, plain SQL). Their sum is the total without counting the table; walking the wide ranges and
 * then the narrow ones inside one finds where page N of the id order starts, so a deep page reads
 * a few dozen count rows and at most one narrow range of users instead of skipping every user
 * before it (docs/decisions.md, "Deep pages").
 *
 * Also indexes the other sort orders of GET /api/users, so their first pages need no full sort.
 */
export function createUserCounts(dialect: DialectName): Migration {
  const spans = sql.raw(
    Object.values(USER_COUNT_SPAN)
      .map((span) => `select ${span} as span`)
      .join(' union all '),
  );
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('user_counts')
        .addColumn('span', 'bigint', (col) => col.notNull())
        .addColumn('first_id', 'bigint', (col) => col.notNull())
        .addColumn('users', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('user_counts_pkey', ['span', 'first_id'])
        .execute();
      if (dialect === 'postgres') {
        // Statement-level triggers see all rows of a bulk write at once: one upsert per range,
        // in key order so that two bulk writers lock ranges in the same order.
        await sql`
          create function usher_count_inserted_users() returns trigger language plpgsql as $$
          begin
            insert into user_counts (span, first_id, users)
              select s.span, i.id - i.id % s.span, count(*)
                from inserted i cross join (${spans}) s group by 1, 2 order by 1, 2
              on conflict (span, first_id) do update set users = user_counts.users + excluded.users;
            return null;
          end $$`.execute(db);
        await sql`
          create function usher_count_deleted_users() returns trigger language plpgsql as $$
          begin
            update user_counts c set users = c.users - d.n
              from (select s.span, o.id - o.id % s.span as first_id, count(*) as n
                      from deleted o cross join (${spans}) s group by 1, 2) d
              where c.span = d.span and c.first_id = d.first_id;
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
            insert into user_counts (span, first_id, users)
              select s.span, new.id - new.id % s.span, 1 from (${spans}) s where true
              on conflict (span, first_id) do update set users = users + 1;
          end`.execute(db);
        const decrements = Object.values(USER_COUNT_SPAN).map(
          (span) => sql`update user_counts set users = users - 1
                          where span = ${sql.lit(span)} and first_id = old.id - old.id % ${sql.lit(span)};`,
        );
        await sql`
          create trigger users_count_deleted after delete on users begin
            ${sql.join(decrements, sql` `)}
          end`.execute(db);
      }
      // After the triggers: on PostgreSQL creating them waited for writers in flight and holds
      // off new ones until this migration commits, so no user is counted twice or missed.
      await sql`
        insert into user_counts (span, first_id, users)
          select s.span, u.id - u.id % s.span, count(*) from users u cross join (${spans}) s
          group by 1, 2`.execute(db);

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
      await db.schema.dropTable('user_counts').execute();
    },
  };
}
