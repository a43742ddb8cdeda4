// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * TOTP second factor (issue 14):
 * - totp_factors: one per user; the secret encrypted (AES-256-GCM, base64 of iv, tag and
 *   ciphertext), confirmed_at null while the set-up is pending, and last_step, the RFC 6238 time
 *   step of the last code accepted, so a code is never accepted twice, whichever instance sees it;
 * - recovery_codes: SHA-256 (hex) of each unused recovery code; a used one is deleted.
 */
export function createTotp(dialect: Dialect): Migration {
  const timestamp = dialect === 'postgres' ? 'timestamptz' : 'text';
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('totp_factors')
        .addColumn('user_id', idColumn, (col) => col.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('secret_sealed', 'text', (col) => col.notNull())
        .addColumn('created_at', timestamp, (col) => col.notNull())
        .addColumn('confirmed_at', timestamp)
        .addColumn('last_step', 'bigint')
        .execute();
      await db.schema
        .createTable('recovery_codes')
        .addColumn('user_id', idColumn, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('code_hash', 'text', (col) => col.notNull())
        .addPrimaryKeyConstraint('recovery_codes_pk', ['user_id', 'code_hash'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('recovery_codes').execute();
      await db.schema.dropTable('totp_factors').execute();
    },
  };
}
