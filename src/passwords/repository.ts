import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

export interface PasswordCredentialsRepositoryOptions {
  /** PostgreSQL: lock a credential row read to check or guard it (SQLite's transactions lock the file). */
  rowLocks: boolean;
}

/**
 * The password hashes, one row per account that has a password (password_credentials): the only
 * SQL that reads or writes them, apart from the sign-in's own statements (auth/signer-repository.ts,
 * signin/grant-repository.ts: the exceptions docs/tables.md lists). The password service
 * (passwords/service.ts), sign-in, and the features that ask whether an account has one use it.
 */
export class PasswordCredentialsRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: PasswordCredentialsRepositoryOptions;
  constructor(db: Kysely<Tables>, options: PasswordCredentialsRepositoryOptions) {
    this.#db = db;
    this.#options = options;
  }

  /** The user's hash; undefined when they have no password (or do not exist). */
  async find(userId: bigint): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('password_credentials')
      .select('hash')
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row?.hash;
  }

  /** Whether the user has a password. */
  async exists(userId: bigint): Promise<boolean> {
    const row = await this.#db
      .selectFrom('password_credentials')
      .select('user_id')
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Whether the user has a password, its row share-locked (PostgreSQL) in a transaction until it
   * ends: a removal at the same moment either committed before (false) or waits for this commit.
   */
  async existsHeld(userId: bigint): Promise<boolean> {
    const query = this.#db.selectFrom('password_credentials').select('user_id').where('user_id', '=', userId);
    return (await (this.#options.rowLocks ? query.forShare() : query).execute()).length > 0;
  }

  /**
   * True when the user still has this hash. In a transaction on PostgreSQL the credential row
   * stays share-locked until it ends, so a concurrent password change or deletion waits for it
   * (and then sees what it wrote), or committed before and this answers false.
   */
  async holds(userId: bigint, hash: string): Promise<boolean> {
    const query = this.#db
      .selectFrom('password_credentials')
      .select('user_id')
      .where('user_id', '=', userId)
      .where('hash', '=', hash);
    return (await (this.#options.rowLocks ? query.forShare() : query).executeTakeFirst()) !== undefined;
  }

  /** Sets the user's password, whether or not they had one. */
  async set(userId: bigint, hash: string, at: Date): Promise<void> {
    await this.#db
      .insertInto('password_credentials')
      .values({ user_id: userId, hash, changed_at: at.getTime() })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ hash, changed_at: at.getTime() }))
      .execute();
  }

  /** The passwords of accounts that have none yet (new ones: a bulk import), in one statement. */
  async insertMany(rows: readonly { userId: bigint; hash: string }[], at: Date): Promise<void> {
    if (rows.length === 0) return;
    await this.#db
      .insertInto('password_credentials')
      .values(rows.map(({ userId, hash }) => ({ user_id: userId, hash, changed_at: at.getTime() })))
      .execute();
  }

  /**
   * Replaces the hash only if it is still `expected`, so a concurrent change wins; false when it
   * was not. `at`: when the password changed; without it (the same password hashed anew) the
   * time it was set stays.
   */
  async replace(userId: bigint, expected: string, next: string, at?: Date): Promise<boolean> {
    const result = await this.#db
      .updateTable('password_credentials')
      .set(at === undefined ? { hash: next } : { hash: next, changed_at: at.getTime() })
      .where('user_id', '=', userId)
      .where('hash', '=', expected)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * PostgreSQL: locks the user's credential row, if any, before the user row is deleted (which
   * deletes it by cascade), so a deletion takes the credential's lock before the user's, in the
   * order every password write and the sign-in's fence take them, and none of them deadlock.
   */
  async lockForDelete(userId: bigint): Promise<void> {
    if (!this.#options.rowLocks) return;
    await this.#db
      .selectFrom('password_credentials')
      .select('user_id')
      .where('user_id', '=', userId)
      .forUpdate()
      .execute();
  }
}
