// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Passkeys (issue 14):
 * - passkeys: one WebAuthn credential of a user. `id` is the public id users see and name;
 *   `credential_id` (base64url) is the authenticator's, unique across users; `public_key` is the
 *   COSE key, base64url text (the same on both stores, no bytea/BLOB driver differences);
 *   `counter` is the last signature counter seen; `transports` a JSON array of strings.
 * - webauthn_challenges: every challenge handed out, so options from one instance verify on
 *   another; `expires_at` in epoch ms; deleted when used (single use) or by housekeeping.
 */
export function createPasskeys(dialect: Dialect): Migration {
  const timestamp = dialect === 'postgres' ? 'timestamptz' : 'text';
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('passkeys')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('credential_id', 'text', (col) => col.notNull().unique())
        .addColumn('user_id', idColumn, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('public_key', 'text', (col) => col.notNull())
        .addColumn('counter', 'bigint', (col) => col.notNull())
        .addColumn('transports', 'text', (col) => col.notNull())
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('last_used_at', timestamp)
        .execute();
      await db.schema
        .createIndex('passkeys_user')
        .on('passkeys')
        .columns(['user_id', 'created_at'])
        .execute();

      await db.schema
        .createTable('webauthn_challenges')
        .addColumn('challenge', 'text', (col) => col.primaryKey())
        // 'register' (bound to the user who asked) or 'signin' (anyone's passkey)
        .addColumn('purpose', 'text', (col) => col.notNull())
        .addColumn('user_id', idColumn, (col) => col.references('users.id').onDelete('cascade'))
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('webauthn_challenges_expiry')
        .on('webauthn_challenges')
        .column('expires_at')
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('webauthn_challenges').execute();
      await db.schema.dropTable('passkeys').execute();
    },
  };
}
