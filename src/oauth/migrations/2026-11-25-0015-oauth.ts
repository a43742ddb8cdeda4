// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Sign-in with a provider (issue 27, CONTRACT "Sign in with a provider"): the sign-ins under way
 * (by the SHA-256 of their state, 10 minutes, single-use) and the identities linked to accounts,
 * unique by (provider, issuer, subject). An identity goes with its account.
 */
export function createOAuth(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('oauth_states')
        .addColumn('state_digest', 'text', (col) => col.primaryKey())
        .addColumn('provider', 'text', (col) => col.notNull())
        .addColumn('binding_digest', 'text', (col) => col.notNull())
        .addColumn('code_verifier', 'text', (col) => col.notNull())
        .addColumn('nonce', 'text', (col) => col.notNull())
        .addColumn('redirect_to', 'text', (col) => col.notNull())
        .addColumn('intent', 'text', (col) => col.notNull())
        .addColumn('user_id', idColumn, (col) => col.references('users.id').onDelete('cascade'))
        .addColumn('expires_ms', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('oauth_states_expiry').on('oauth_states').column('expires_ms').execute();
      await db.schema.createIndex('oauth_states_user').on('oauth_states').column('user_id').execute();
      await db.schema
        .createTable('identities')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('user_id', idColumn, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('provider', 'text', (col) => col.notNull())
        .addColumn('issuer', 'text', (col) => col.notNull())
        .addColumn('subject', 'text', (col) => col.notNull())
        .addColumn('email', 'text', (col) => col.notNull())
        .addColumn('proven', 'integer', (col) => col.notNull())
        .addColumn('created_at', dialect === 'postgres' ? 'timestamptz' : 'text', (col) => col.notNull())
        .addUniqueConstraint('identities_key', ['provider', 'issuer', 'subject'])
        .execute();
      await db.schema.createIndex('identities_user').on('identities').column('user_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('identities').execute();
      await db.schema.dropTable('oauth_states').execute();
    },
  };
}
