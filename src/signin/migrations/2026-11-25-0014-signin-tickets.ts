// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Second-factor tickets (issue 26, CONTRACT "Accounts and sign-in methods"): a sign-in method with
 * no body to carry a TOTP code (a provider, a mail link) leaves a ticket instead of a session when
 * the account has TOTP in force; POST /api/signin/second-factor spends it with a code. Only the
 * ticket's SHA-256 is kept; a ticket lives 5 minutes and dies with its 5th wrong code.
 */
export function createSigninTickets(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signin_tickets')
        .addColumn('token_digest', 'text', (col) => col.primaryKey())
        .addColumn('user_id', idColumn, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('method', 'text', (col) => col.notNull())
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .addColumn('failures', 'integer', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex('signin_tickets_expiry')
        .on('signin_tickets')
        .column('expires_at')
        .execute();
      await db.schema.createIndex('signin_tickets_user').on('signin_tickets').column('user_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('signin_tickets').execute();
    },
  };
}
