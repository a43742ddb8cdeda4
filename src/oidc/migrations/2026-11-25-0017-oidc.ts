// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Usher as an OpenID Connect provider (issue 28): oidc-provider's stored models by the digest of
 * their id, the registered clients, the sealed keys, and the consents people gave.
 */
export function createOidc(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('oidc_models')
        .addColumn('model', 'text', (col) => col.notNull())
        .addColumn('id_digest', 'text', (col) => col.notNull())
        .addColumn('payload', 'text', (col) => col.notNull())
        .addColumn('grant_id', 'text')
        .addColumn('uid', 'text')
        .addColumn('user_code', 'text')
        .addColumn('account_id', 'text')
        .addColumn('expires_ms', 'bigint')
        .addColumn('consumed_ms', 'bigint')
        .addPrimaryKeyConstraint('oidc_models_key', ['model', 'id_digest'])
        .execute();
      await db.schema.createIndex('oidc_models_grant').on('oidc_models').column('grant_id').execute();
      await db.schema.createIndex('oidc_models_uid').on('oidc_models').columns(['model', 'uid']).execute();
      await db.schema.createIndex('oidc_models_account').on('oidc_models').column('account_id').execute();
      await db.schema.createIndex('oidc_models_expiry').on('oidc_models').column('expires_ms').execute();
      await db.schema
        .createTable('oidc_clients')
        .addColumn('client_id', 'text', (col) => col.primaryKey())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('secret_sealed', 'text')
        .addColumn('redirect_uris', 'text', (col) => col.notNull())
        .addColumn('post_logout_redirect_uris', 'text', (col) => col.notNull())
        .addColumn('grant_types', 'text', (col) => col.notNull())
        .addColumn('first_party', 'integer', (col) => col.notNull())
        .addColumn('created_at', time, (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('oidc_keys')
        .addColumn('kid', 'text', (col) => col.primaryKey())
        .addColumn('use', 'text', (col) => col.notNull())
        .addColumn('alg', 'text', (col) => col.notNull())
        .addColumn('sealed', 'text', (col) => col.notNull())
        .addColumn('created_at', time, (col) => col.notNull())
        .addColumn('signs_from_ms', 'bigint', (col) => col.notNull())
        .addColumn('retired_ms', 'bigint')
        .execute();
      await db.schema
        .createTable('oidc_consents')
        .addColumn('user_id', idColumn, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (col) =>
          col.notNull().references('oidc_clients.client_id').onDelete('cascade'),
        )
        .addColumn('scopes', 'text', (col) => col.notNull())
        .addPrimaryKeyConstraint('oidc_consents_key', ['user_id', 'client_id'])
        .execute();
      await db.schema.createIndex('oidc_consents_client').on('oidc_consents').column('client_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('oidc_consents').execute();
      await db.schema.dropTable('oidc_keys').execute();
      await db.schema.dropTable('oidc_clients').execute();
      await db.schema.dropTable('oidc_models').execute();
    },
  };
}
