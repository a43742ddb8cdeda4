// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Lockout that an attacker cannot impose on the owner (issue 25, decision 145):
 * - signin_devices: the browsers and apps that signed in to an account before (OWASP's device
 *   cookies), as the SHA-256 of the device token and the throttle's account digest; such a client
 *   is judged by its own failures, not the account's or its network's;
 * - signin_attempts.device: the device an attempt came from, when it was a known one, so that its
 *   failures can be counted on their own;
 * - totp_factors.failures, failures_at and locked_until: wrong codes after the right password
 *   (forgotten one a day after the last), and the time before which no code is checked again (the
 *   growing delay); signin_devices' code_failures, code_failures_at and codes_locked_until are the
 *   same for a known device, which the account's delay does not hold (decision 146).
 */
export function createSigninDevices(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signin_devices')
        .addColumn('token_digest', 'text', (col) => col.notNull())
        .addColumn('account_digest', 'text', (col) => col.notNull())
        .addColumn('remembered_at', 'bigint', (col) => col.notNull())
        .addColumn('known_until', 'bigint', (col) => col.notNull())
        .addColumn('code_failures', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('code_failures_at', 'bigint')
        .addColumn('codes_locked_until', 'bigint')
        .addPrimaryKeyConstraint('signin_devices_pk', ['token_digest', 'account_digest'])
        .execute();
      await db.schema
        .createIndex('signin_devices_expiry')
        .on('signin_devices')
        .column('known_until')
        .execute();
      await db.schema.alterTable('signin_attempts').addColumn('device', 'text').execute();
      await db.schema
        .alterTable('totp_factors')
        .addColumn('failures', 'integer', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('totp_factors').addColumn('failures_at', 'bigint').execute();
      await db.schema.alterTable('totp_factors').addColumn('locked_until', 'bigint').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('totp_factors').dropColumn('locked_until').execute();
      await db.schema.alterTable('totp_factors').dropColumn('failures_at').execute();
      await db.schema.alterTable('totp_factors').dropColumn('failures').execute();
      await db.schema.alterTable('signin_attempts').dropColumn('device').execute();
      await db.schema.dropTable('signin_devices').execute();
    },
  };
}
