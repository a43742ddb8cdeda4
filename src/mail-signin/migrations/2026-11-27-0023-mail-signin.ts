// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Sign-in by mail (issue 31, CONTRACT "Sign-in by mail, languages, and users from other systems"):
 * - reset_requests becomes the table of every mail ask that must answer alike whether or not the
 *   email has an account: `kind` is `password-reset` (the rows it held), `email-link` or
 *   `email-code`; a link ask keeps where to send the browser, and every ask the language of the
 *   client that made it (the mail's, when the email has no account yet);
 * - mail_signins: the links and codes mailed. Only a SHA-256 of a link's token is kept, and of a
 *   code only an HMAC keyed by the row's own random salt; `user_id` is null for an email with no
 *   account (EMAIL_SIGNIN_CREATES_ACCOUNTS), which the use creates. A used or voided row expires
 *   at 0 and still counts towards the mails per account per window until it is purged.
 */
export function createMailSignin(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('reset_requests')
        .addColumn('kind', 'text', (col) => col.notNull().defaultTo('password-reset'))
        .execute();
      await db.schema.alterTable('reset_requests').addColumn('redirect_to', 'text').execute();
      await db.schema.alterTable('reset_requests').addColumn('locale', 'text').execute();

      await db.schema
        .createTable('mail_signins')
        .addColumn('id', idColumn, (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('secret_hash', 'text', (col) => col.notNull())
        .addColumn('salt', 'text')
        .addColumn('email', 'text', (col) => col.notNull())
        .addColumn('email_key', 'text', (col) => col.notNull())
        .addColumn('user_id', idColumn, (col) => col.references('users.id').onDelete('cascade'))
        .addColumn('redirect_to', 'text')
        .addColumn('locale', 'text')
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .addColumn('failures', 'integer', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('mail_signins_secret').on('mail_signins').column('secret_hash').execute();
      await db.schema
        .createIndex('mail_signins_email')
        .on('mail_signins')
        .columns(['email_key', 'created_at'])
        .execute();
      await db.schema.createIndex('mail_signins_expiry').on('mail_signins').column('expires_at').execute();
      await db.schema.createIndex('mail_signins_user').on('mail_signins').column('user_id').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('mail_signins').execute();
      await db.schema.alterTable('reset_requests').dropColumn('locale').execute();
      await db.schema.alterTable('reset_requests').dropColumn('redirect_to').execute();
      await db.schema.alterTable('reset_requests').dropColumn('kind').execute();
    },
  };
}
