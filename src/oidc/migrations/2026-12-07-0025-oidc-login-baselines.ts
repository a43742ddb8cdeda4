// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * prompt=login decided on the server (issue 40): for an interaction that wants a new sign-in, when
 * the browser first came to its page (milliseconds) and the Usher session it had then. It took the
 * place of the `usher_reauth` cookie, which a client could write. One row per such interaction,
 * expiring with it (10 minutes); the expiry is indexed for the housekeeping's purge.
 */
export function createOidcLoginBaselines(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('oidc_login_baselines')
        .addColumn('uid', 'text', (col) => col.primaryKey())
        .addColumn('seen_ms', 'bigint', (col) => col.notNull())
        .addColumn('session_id', 'text')
        .addColumn('expires_ms', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('oidc_login_baselines_expiry')
        .on('oidc_login_baselines')
        .column('expires_ms')
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('oidc_login_baselines').execute();
    },
  };
}
