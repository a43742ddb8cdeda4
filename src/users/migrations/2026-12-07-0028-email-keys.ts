// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { createHash } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

const BATCH = 1000;
const ASCII = /^[\x21-\x7e]*$/;

/** users/user.ts's emailKey as it was when this landed (decision 352). */
function emailKey(email: string): string {
  const trimmed = email.trim();
  if (ASCII.test(trimmed)) return trimmed.toLowerCase();
  const folded = trimmed.normalize('NFKC').toLowerCase().normalize('NFKC');
  const at = folded.lastIndexOf('@');
  if (at < 0) return folded;
  const domain = folded.slice(at + 1);
  if (ASCII.test(domain) || domain.includes('%')) return folded;
  const ascii = domainToASCII(domain);
  return ascii === '' ? folded : `${folded.slice(0, at)}@${ascii}`;
}

// users/rules.ts's checkEmail as it was when this landed: an address NFKC turns into one these
// refuse (`＜` becomes `<`, a display name to a mailer) is not rewritten.
const ATOM = String.raw`[^\s@."(),:;<>[\]\\\p{Cc}\p{Cf}\p{Cs}]+`;
const EMAIL_SHAPE = new RegExp(`^${ATOM}(\\.${ATOM})*@${ATOM}(\\.${ATOM})+$`, 'u');
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}]/u;
const ADDRESS_SYNTAX = /["(),:;<>[\]\\]/;

/** The address an unverified account is mailed at from now on: its NFKC form, if that is one. */
function storedForm(row: Row): string {
  if (row.email_verified_at !== null) return row.email;
  const email = row.email.normalize('NFKC');
  const fine =
    [...email].length <= 254 &&
    !INVISIBLE.test(email) &&
    !ADDRESS_SYNTAX.test(email) &&
    EMAIL_SHAPE.test(email);
  return fine ? email : row.email;
}

/** users/user.ts's accountDigest: how signin_devices names an account. */
const digest = (key: string) => createHash('sha256').update(key).digest('hex');

interface Row {
  id: bigint | number;
  email: string;
  email_key: string;
  email_verified_at: unknown;
}
type Db = Kysely<{
  users: Row;
  email_key_collisions: { user_id: bigint | number; email_key: string };
  signin_devices: { account_digest: string };
}>;

/**
 * One normalisation of emails for identity (issue 40, decisions 352-355): every stored email key
 * is recomputed as NFKC, lower case, NFKC again, with an IDNA domain. An address of printable
 * ASCII keeps its key (it was already its lower case), so only the rows with other characters are
 * read, in batches in id order. Where two accounts' new keys are one, nothing is merged: the
 * account that already holds the key keeps it, else the oldest takes it; each other account keeps
 * its old key and a row in email_key_collisions (the key it would have) until an admin resolves it
 * (`usher users collisions`; a warning per set at every start). An unverified account's address
 * is stored in its NFKC form too, so that mail goes to the address compared; a verified one is
 * left as its owner proved it. Known devices follow their account's key.
 */
export function normaliseEmailKeys(dialect: Dialect): Migration {
  const idColumn = dialect === 'postgres' ? 'bigint' : 'integer';
  // Characters beyond ASCII make the text longer in bytes than in characters on both stores.
  const wide =
    dialect === 'postgres'
      ? sql<boolean>`octet_length(email) <> char_length(email)`
      : sql<boolean>`length(cast(email as blob)) <> length(email)`;
  return {
    async up(kysely: Kysely<unknown>) {
      // SQLite runs a migration outside a transaction: every step can be run again after a kill.
      await kysely.schema
        .createTable('email_key_collisions')
        .ifNotExists()
        .addColumn('user_id', idColumn, (col) => col.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('email_key', 'text', (col) => col.notNull())
        .execute();
      await kysely.schema
        .createIndex('email_key_collisions_key')
        .ifNotExists()
        .on('email_key_collisions')
        .column('email_key')
        .execute();
      const db = kysely as unknown as Db;
      const holder = async (key: string) =>
        db.selectFrom('users').select('id').where('email_key', '=', key).executeTakeFirst();
      // signin_devices is keyed by device first: read by account only here, through an index made
      // for the pass (and only if a key moves), so each move is not a scan of every device.
      let indexed = false;
      const rekey = async (row: Row, key: string, email: string) => {
        await db.updateTable('users').set({ email_key: key, email }).where('id', '=', row.id).execute();
        if (!indexed) {
          await kysely.schema
            .createIndex('signin_devices_account_0028')
            .ifNotExists()
            .on('signin_devices')
            .column('account_digest')
            .execute();
          indexed = true;
        }
        await db.deleteFrom('signin_devices').where('account_digest', '=', digest(key)).execute();
        await db
          .updateTable('signin_devices')
          .set({ account_digest: digest(key) })
          .where('account_digest', '=', digest(row.email_key))
          .execute();
      };
      for (let after: bigint | number = 0; ; ) {
        const rows = await db
          .selectFrom('users')
          .select(['id', 'email', 'email_key', 'email_verified_at'])
          .where('id', '>', after)
          .where(wide)
          .orderBy('id')
          .limit(BATCH)
          .execute();
        if (rows.length === 0) break;
        for (const row of rows) {
          const key = emailKey(row.email);
          const email = storedForm(row);
          if (key === row.email_key) {
            if (email !== row.email)
              await db.updateTable('users').set({ email }).where('id', '=', row.id).execute();
          } else if (await holder(key)) {
            await db
              .insertInto('email_key_collisions')
              .values({ user_id: row.id, email_key: key })
              .onConflict((oc) => oc.column('user_id').doNothing())
              .execute();
          } else await rekey(row, key, email);
        }
        after = rows.at(-1)!.id;
      }
      // A key held by an account that moved on to another one later in the pass is free again.
      const waiting = await db
        .selectFrom('email_key_collisions')
        .innerJoin('users', 'users.id', 'email_key_collisions.user_id')
        .select(['users.id', 'users.email', 'users.email_key', 'users.email_verified_at'])
        .select('email_key_collisions.email_key as next')
        .orderBy('users.id')
        .execute();
      for (const row of waiting) {
        if (await holder(row.next)) continue;
        await rekey(row, row.next, storedForm(row));
        await db.deleteFrom('email_key_collisions').where('user_id', '=', row.id).execute();
      }
      if (indexed) await kysely.schema.dropIndex('signin_devices_account_0028').ifExists().execute();
    },
    async down(kysely: Kysely<unknown>) {
      // The keys stay as recomputed: the old ones folded less, and every new key is still unique.
      await kysely.schema.dropTable('email_key_collisions').execute();
    },
  };
}
