// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';
const COPY_BATCH = 1000;

interface Tables {
  signin_failures: { id: bigint; account_key: string; address: string; failed_at: bigint | string | number };
  signin_attempts: { account_digest: string; address: string; at: bigint; pending_until: bigint | null };
}

/**
 * Sign-in attempts replace sign-in failures. An attempt is recorded (reserved) before its hash is
 * computed, so simultaneous guesses count against each other; `pending_until` marks it in flight
 * until it is settled (a failure keeps the row, a success deletes it), and a process killed
 * mid-attempt leaves a row that turns into a settled failure when the lease runs out. The account
 * is stored as the SHA-256 of its email key, so a key costs 64 bytes whatever the client sent.
 * The failures recorded before this migration are carried over, so upgrading forgives nobody.
 */
export function createSigninAttempts(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('signin_attempts')
        .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('account_digest', 'text', (col) => col.notNull())
        .addColumn('address', 'text', (col) => col.notNull())
        .addColumn('at', 'bigint', (col) => col.notNull())
        .addColumn('pending_until', 'bigint')
        .execute();
      await db.schema
        .createIndex('signin_attempts_account')
        .on('signin_attempts')
        .columns(['account_digest', 'at'])
        .execute();
      await db.schema
        .createIndex('signin_attempts_address')
        .on('signin_attempts')
        .columns(['address', 'at'])
        .execute();
      await db.schema.createIndex('signin_attempts_time').on('signin_attempts').column('at').execute();

      const rowsDb = db as unknown as Kysely<Tables>;
      let after = -1n;
      for (;;) {
        const rows = await rowsDb
          .selectFrom('signin_failures')
          .select(['id', 'account_key', 'address', 'failed_at'])
          .where('id', '>', after)
          .orderBy('id')
          .limit(COPY_BATCH)
          .execute();
        if (rows.length === 0) break;
        await rowsDb
          .insertInto('signin_attempts')
          .values(
            rows.map((row) => ({
              account_digest: createHash('sha256').update(row.account_key).digest('hex'),
              address: row.address,
              at: BigInt(row.failed_at),
              pending_until: null,
            })),
          )
          .execute();
        after = BigInt(rows[rows.length - 1]!.id);
      }
      await db.schema.dropTable('signin_failures').execute();
    },
    async down(db: Kysely<unknown>) {
      // The digests cannot be turned back into keys; failures are forgotten on the way down.
      await db.schema
        .createTable('signin_failures')
        .addColumn('id', dialect === 'postgres' ? 'bigint' : 'integer', (col) =>
          dialect === 'postgres'
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        )
        .addColumn('account_key', 'text', (col) => col.notNull())
        .addColumn('address', 'text', (col) => col.notNull())
        .addColumn('failed_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.dropTable('signin_attempts').execute();
    },
  };
}
