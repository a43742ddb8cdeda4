import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
type DialectName = 'sqlite' | 'postgres';
/** The widths of the id ranges counted (the app's PRODUCT_COUNT_SPAN must stay equal to these). */
const PRODUCT_COUNT_SPAN = { wide: 65_536, narrow: 1_024 } as const;

/**
 * Catalog lists that cannot stall the server, and creations that are counted (issue 25):
 *
 * - an index on (sort key, id) for every sort order of products and reviews, so that a page is a
 *   walk of an index in either direction rather than a sort of the table;
 * - product_counts: products per range of ids at two widths, like user_counts (migration 0004):
 *   the total without counting the table, and where a deep page in id order starts;
 * - review_counts: each product's number of reviews;
 * - creation_limits: per user and kind ('product', 'review'), how many they own now (`owned`) and
 *   until when their creations so far, spaced at the allowed rate, reach (`paced_until`, epoch ms).
 *
 * The counts are kept exact by triggers in the same transaction as every insert and delete,
 * whatever writes them (the API, cascades from a deleted user or product, plain SQL).
 */
export function createCatalogLimits(dialect: DialectName): Migration {
  const pg = dialect === 'postgres';
  const idType = pg ? 'bigint' : 'integer';
  const spans = sql.raw(
    Object.values(PRODUCT_COUNT_SPAN)
      .map((span) => `select ${span} as span`)
      .join(' union all '),
  );
  return {
    async up(db: Kysely<unknown>) {
      for (const [name, columns] of [
        ['products_name', ['name', 'id']],
        ['products_price', ['price', 'id']],
        ['products_created_at', ['created_at', 'id']],
      ] as const) {
        await db.schema
          .createIndex(name)
          .on('products')
          .columns([...columns])
          .execute();
      }
      for (const [name, columns] of [
        ['reviews_product_written_at', ['product_id', 'written_at', 'id']],
        ['reviews_product_rating', ['product_id', 'rating', 'id']],
      ] as const) {
        await db.schema
          .createIndex(name)
          .on('reviews')
          .columns([...columns])
          .execute();
      }

      await db.schema
        .createTable('product_counts')
        .addColumn('span', 'bigint', (col) => col.notNull())
        .addColumn('first_id', 'bigint', (col) => col.notNull())
        .addColumn('products', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('product_counts_pkey', ['span', 'first_id'])
        .execute();
      await db.schema
        .createTable('review_counts')
        .addColumn('product_id', idType, (col) =>
          col.primaryKey().references('products.id').onDelete('cascade'),
        )
        .addColumn('reviews', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('creation_limits')
        .addColumn('user_id', idType, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('owned', 'bigint', (col) => col.notNull())
        .addColumn('paced_until', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('creation_limits_pkey', ['user_id', 'kind'])
        .execute();

      if (pg) {
        // Statement-level triggers see all rows of a bulk write at once: one upsert per range or
        // user, in key order. The creator's row first: a creation through the API has locked it
        // already (catalog/service.ts), so both take the shared range rows last.
        await sql`
          create function usher_count_inserted_products() returns trigger language plpgsql as $$
          begin
            insert into creation_limits (user_id, kind, owned, paced_until)
              select owner_id, 'product', count(*), 0 from inserted group by 1 order by 1
              on conflict (user_id, kind) do update set owned = creation_limits.owned + excluded.owned;
            insert into product_counts (span, first_id, products)
              select s.span, i.id - i.id % s.span, count(*)
                from inserted i cross join (${spans}) s group by 1, 2 order by 1, 2
              on conflict (span, first_id) do update set products = product_counts.products + excluded.products;
            return null;
          end $$`.execute(db);
        await sql`
          create function usher_count_deleted_products() returns trigger language plpgsql as $$
          begin
            update creation_limits c set owned = c.owned - d.n
              from (select owner_id, count(*) as n from deleted group by 1) d
              where c.user_id = d.owner_id and c.kind = 'product';
            update product_counts c set products = c.products - d.n
              from (select s.span, o.id - o.id % s.span as first_id, count(*) as n
                      from deleted o cross join (${spans}) s group by 1, 2) d
              where c.span = d.span and c.first_id = d.first_id;
            return null;
          end $$`.execute(db);
        await sql`
          create function usher_count_inserted_reviews() returns trigger language plpgsql as $$
          begin
            insert into creation_limits (user_id, kind, owned, paced_until)
              select author_id, 'review', count(*), 0 from inserted group by 1 order by 1
              on conflict (user_id, kind) do update set owned = creation_limits.owned + excluded.owned;
            insert into review_counts (product_id, reviews)
              select product_id, count(*) from inserted group by 1 order by 1
              on conflict (product_id) do update set reviews = review_counts.reviews + excluded.reviews;
            return null;
          end $$`.execute(db);
        await sql`
          create function usher_count_deleted_reviews() returns trigger language plpgsql as $$
          begin
            update creation_limits c set owned = c.owned - d.n
              from (select author_id, count(*) as n from deleted group by 1) d
              where c.user_id = d.author_id and c.kind = 'review';
            update review_counts c set reviews = c.reviews - d.n
              from (select product_id, count(*) as n from deleted group by 1) d
              where c.product_id = d.product_id;
            return null;
          end $$`.execute(db);
        for (const table of ['products', 'reviews'] as const) {
          await sql`
            create trigger ${sql.raw(`${table}_counted_inserted`)} after insert on ${sql.table(table)}
              referencing new table as inserted for each statement
              execute function ${sql.raw(`usher_count_inserted_${table}`)}()`.execute(db);
          await sql`
            create trigger ${sql.raw(`${table}_counted_deleted`)} after delete on ${sql.table(table)}
              referencing old table as deleted for each statement
              execute function ${sql.raw(`usher_count_deleted_${table}`)}()`.execute(db);
        }
      } else {
        await sql`
          create trigger products_counted_inserted after insert on products begin
            insert into creation_limits (user_id, kind, owned, paced_until)
              values (new.owner_id, 'product', 1, 0)
              on conflict (user_id, kind) do update set owned = owned + 1;
            insert into product_counts (span, first_id, products)
              select s.span, new.id - new.id % s.span, 1 from (${spans}) s where true
              on conflict (span, first_id) do update set products = products + 1;
          end`.execute(db);
        const decrements = Object.values(PRODUCT_COUNT_SPAN).map(
          (span) => sql`update product_counts set products = products - 1
                          where span = ${sql.lit(span)} and first_id = old.id - old.id % ${sql.lit(span)};`,
        );
        await sql`
          create trigger products_counted_deleted after delete on products begin
            update creation_limits set owned = owned - 1 where user_id = old.owner_id and kind = 'product';
            ${sql.join(decrements, sql` `)}
          end`.execute(db);
        await sql`
          create trigger reviews_counted_inserted after insert on reviews begin
            insert into creation_limits (user_id, kind, owned, paced_until)
              values (new.author_id, 'review', 1, 0)
              on conflict (user_id, kind) do update set owned = owned + 1;
            insert into review_counts (product_id, reviews) values (new.product_id, 1)
              on conflict (product_id) do update set reviews = reviews + 1;
          end`.execute(db);
        await sql`
          create trigger reviews_counted_deleted after delete on reviews begin
            update creation_limits set owned = owned - 1 where user_id = old.author_id and kind = 'review';
            update review_counts set reviews = reviews - 1 where product_id = old.product_id;
          end`.execute(db);
      }

      // After the triggers: on PostgreSQL creating them waited for writers in flight and holds
      // off new ones until this migration commits, so nothing is counted twice or missed.
      await sql`
        insert into product_counts (span, first_id, products)
          select s.span, p.id - p.id % s.span, count(*) from products p cross join (${spans}) s
          group by 1, 2`.execute(db);
      await sql`
        insert into review_counts (product_id, reviews)
          select product_id, count(*) from reviews group by 1`.execute(db);
      await sql`
        insert into creation_limits (user_id, kind, owned, paced_until)
          select owner_id, 'product', count(*), 0 from products group by 1
          union all
          select author_id, 'review', count(*), 0 from reviews group by 1`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (pg) {
        for (const table of ['products', 'reviews'] as const) {
          await sql`drop trigger ${sql.raw(`${table}_counted_inserted`)} on ${sql.table(table)}`.execute(db);
          await sql`drop trigger ${sql.raw(`${table}_counted_deleted`)} on ${sql.table(table)}`.execute(db);
          await sql`drop function ${sql.raw(`usher_count_inserted_${table}`)}`.execute(db);
          await sql`drop function ${sql.raw(`usher_count_deleted_${table}`)}`.execute(db);
        }
      } else {
        for (const table of ['products', 'reviews'] as const) {
          await sql`drop trigger ${sql.raw(`${table}_counted_inserted`)}`.execute(db);
          await sql`drop trigger ${sql.raw(`${table}_counted_deleted`)}`.execute(db);
        }
      }
      await db.schema.dropTable('creation_limits').execute();
      await db.schema.dropTable('review_counts').execute();
      await db.schema.dropTable('product_counts').execute();
      for (const name of ['reviews_product_rating', 'reviews_product_written_at']) {
        await db.schema.dropIndex(name).execute();
      }
      for (const name of ['products_created_at', 'products_price', 'products_name']) {
        await db.schema.dropIndex(name).execute();
      }
    },
  };
}
