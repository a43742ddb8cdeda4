import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
type DialectName = 'sqlite' | 'postgres';

/**
 * Sessions (only a SHA-256 of each token is stored), products, and reviews nested under products.
 * Deleting a user deletes their sessions, products and reviews; deleting a product deletes its
 * reviews (docs/decisions.md).
 */
export function createSessionsProductsReviews(dialect: DialectName): Migration {
  const pg = dialect === 'postgres';
  const idType = pg ? 'bigint' : 'integer';
  const timestamp = pg ? 'timestamptz' : 'text';
  // Sorting by a text column compares code points on both engines: SQLite's default (BINARY) and
  // PostgreSQL's "C" collation agree, where a locale collation would order differently.
  const sortableText = pg ? sql`text collate "C"` : 'text';

  return {
    async up(db: Kysely<unknown>) {
      if (pg) {
        await sql`alter table users alter column name type text collate "C"`.execute(db);
        await sql`alter table users alter column email_key type text collate "C"`.execute(db);
      }
      await db.schema
        .createTable('sessions')
        .addColumn('token_hash', 'text', (col) => col.primaryKey())
        .addColumn('user_id', idType, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('last_seen_at', timestamp, (col) => col.notNull())
        .addColumn('expires_at', timestamp, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('sessions_user_id').on('sessions').column('user_id').execute();

      await db.schema
        .createTable('products')
        .addColumn('id', idType, (col) =>
          pg ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
        )
        .addColumn('name', sortableText, (col) => col.notNull())
        .addColumn('description', 'text', (col) => col.notNull())
        .addColumn('price', 'bigint', (col) => col.notNull())
        .addColumn('owner_id', idType, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('products_owner_id').on('products').column('owner_id').execute();

      await db.schema
        .createTable('reviews')
        .addColumn('id', idType, (col) =>
          pg ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
        )
        .addColumn('product_id', idType, (col) => col.notNull().references('products.id').onDelete('cascade'))
        .addColumn('author_id', idType, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('rating', 'integer', (col) => col.notNull())
        .addColumn('text', 'text', (col) => col.notNull())
        .addColumn('written_at', timestamp, (col) => col.notNull())
        .addColumn('updated_at', timestamp, (col) => col.notNull())
        .execute();
      // Lists of one product's reviews, in any of their sort orders, read this index.
      await db.schema.createIndex('reviews_product_id').on('reviews').columns(['product_id', 'id']).execute();
      await db.schema.createIndex('reviews_author_id').on('reviews').column('author_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('reviews').execute();
      await db.schema.dropTable('products').execute();
      await db.schema.dropTable('sessions').execute();
    },
  };
}
