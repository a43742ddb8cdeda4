import { type Kysely, sql } from 'kysely';
import type { Tables } from '../db/schema.ts';
import type { MailSigninsTable } from './tables.ts';

/** A used or voided link or code expires at the epoch (as account tokens do), so it still counts. */
const USED = 0;

export interface NewMailSignin {
  kind: MailSigninsTable['kind'];
  secretHash: string;
  salt: string | null;
  email: string;
  emailKey: string;
  userId: bigint | null;
  redirectTo: string | null;
  locale: string | null;
  now: number;
  expiresAt: number;
}

export interface StoredMailSignin {
  id: bigint;
  secretHash: string;
  salt: string | null;
  email: string;
  emailKey: string;
  userId: bigint | null;
  redirectTo: string | null;
  locale: string | null;
}

const COLUMNS = [
  'id',
  'secret_hash',
  'salt',
  'email',
  'email_key',
  'user_id',
  'redirect_to',
  'locale',
] as const;

const stored = (row: {
  id: bigint;
  secret_hash: string;
  salt: string | null;
  email: string;
  email_key: string;
  user_id: bigint | null;
  redirect_to: string | null;
  locale: string | null;
}): StoredMailSignin => ({
  id: BigInt(row.id),
  secretHash: row.secret_hash,
  salt: row.salt,
  email: row.email,
  emailKey: row.email_key,
  userId: row.user_id === null ? null : BigInt(row.user_id),
  redirectTo: row.redirect_to,
  locale: row.locale,
});

/** The sign-in links and codes mailed, by the hash of their secret. */
export class MailSigninsRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: { rowLocks: boolean };
  constructor(db: Kysely<Tables>, options: { rowLocks: boolean }) {
    this.#db = db;
    this.#options = options;
  }

  async add(entry: NewMailSignin): Promise<void> {
    await this.#db
      .insertInto('mail_signins')
      .values({
        kind: entry.kind,
        secret_hash: entry.secretHash,
        salt: entry.salt,
        email: entry.email,
        email_key: entry.emailKey,
        user_id: entry.userId,
        redirect_to: entry.redirectTo,
        locale: entry.locale,
        created_at: entry.now,
        expires_at: entry.expiresAt,
      })
      .execute();
  }

  /** Links and codes mailed to the email since `since`, used or not (each one a mail). */
  async countSince(emailKey: string, since: number): Promise<number> {
    const row = await this.#db
      .selectFrom('mail_signins')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .where('email_key', '=', emailKey)
      .where('created_at', '>', BigInt(since))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The live link with this token hash. */
  async findLink(secretHash: string, now: number): Promise<StoredMailSignin | undefined> {
    const row = await this.#db
      .selectFrom('mail_signins')
      .select(COLUMNS)
      .where('secret_hash', '=', secretHash)
      .where('kind', '=', 'link')
      .where('expires_at', '>', BigInt(now))
      .executeTakeFirst();
    return row && stored(row);
  }

  /**
   * Takes one try of each of the email's live codes that has tries left, in one statement, before
   * any code is compared: those it took, newest first, are the codes this try may be checked
   * against. Two tries at once cannot both take a code's last try (PostgreSQL re-reads the row's
   * count after waiting for the other's update; SQLite runs one statement at a time), so at most
   * `maxTries` codes are ever compared with one live code (decision 341).
   */
  async takeTry(emailKey: string, now: number, maxTries: number): Promise<StoredMailSignin[]> {
    const rows = await this.#db
      .updateTable('mail_signins')
      .set((eb) => ({ failures: eb('failures', '+', 1) }))
      .where('email_key', '=', emailKey)
      .where('kind', '=', 'code')
      .where('expires_at', '>', BigInt(now))
      .where('failures', '<', maxTries)
      .returning(COLUMNS)
      .execute();
    return rows.map(stored).sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }

  /**
   * Uses a live link or code, and with it every other live one of its email: all of them expire in
   * one statement, which locks the email's rows in one order (two uses for one email, a link and
   * a code, wait for each other instead of deadlocking). True when `id` was among them; otherwise
   * the caller rolls the statement back (another use won, and the others must stay as they were).
   * A code's use took its try before (takeTry): its count includes that try.
   */
  async spend(emailKey: string, id: bigint, now: number, maxTries: number): Promise<boolean> {
    const rows = await this.#db
      .updateTable('mail_signins')
      .set({ expires_at: USED })
      .where('email_key', '=', emailKey)
      .where('expires_at', '>', BigInt(now))
      .returning(['id', 'failures'])
      .execute();
    return rows.some((row) => BigInt(row.id) === id && Number(row.failures) <= maxTries);
  }

  /**
   * Holds the email until the caller's transaction ends (PostgreSQL; SQLite has one writer at a
   * time): the mails counted for it and the one added are seen together by every instance.
   */
  async holdEmail(emailKey: string): Promise<void> {
    if (!this.#options.rowLocks) return;
    await sql`select pg_advisory_xact_lock(hashtextextended(${`mail-signin:${emailKey}`}, 0))`.execute(
      this.#db,
    );
  }

  /**
   * Removes rows made and expired before `before` (they can neither be used nor count): a used
   * row expires at 0 at once, but counts until it is older than the window.
   */
  async purgeExpired(before: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('mail_signins')
      .where('expires_at', '<', BigInt(before))
      .where('created_at', '<', BigInt(before))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
