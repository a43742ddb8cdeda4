// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Languages (issue 31): each account's `locale`, a BCP 47 tag in its canonical form (de-AT,
 * pt-BR), that mails to it are written in (the best match Usher has texts for). Every account
 * there is gets `en`, the language Usher wrote in until now. Adding a column with a constant
 * default rewrites no rows on PostgreSQL (11 and later) nor on SQLite.
 */
export function addUserLocale(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('users')
        .addColumn('locale', 'text', (col) => col.notNull().defaultTo('en'))
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('users').dropColumn('locale').execute();
    },
  };
}
