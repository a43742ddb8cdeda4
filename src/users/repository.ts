import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import { paged } from '../db/paging.ts';
import { type NamedQuery, named, runPrepared, type Tuple } from '../db/prepared.ts';
import { countedTotal, pageInIdOrder, type RangeCounts } from '../db/range-pages.ts';
import { type Tables, USER_COUNT_SPAN, type UsersTable } from '../db/schema.ts';
import { type Awaitable, mapAwaitable } from '../shared/awaitable.ts';
import type { PageRequest } from '../shared/paging.ts';
import { accountDigest, emailKey, type User, type UserSortKey } from './user.ts';

/** A user's columns, in the order userOfTuple reads them. */
export const USER_COLUMNS = ['id', 'email', 'name', 'created_at', 'email_verified_at'] as const;

type UserRow = Pick<Selectable<UsersTable>, (typeof USER_COLUMNS)[number]>;

/** A users row (also as sessions/ reads it with a session) as the rest of the code sees it. */
export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    createdAt: row.created_at,
    emailVerified: row.email_verified_at !== null,
  };
}

/** USER_COLUMNS' values in order, as the direct path (db/prepared.ts) returns them. */
type Columns<C extends readonly (keyof UserRow)[]> = { readonly [K in keyof C]: UserRow[C[K]] };
type UserTuple = Columns<typeof USER_COLUMNS>;
/** The position of `V` in the tuple `T`, as a literal type. */
type IndexOf<T extends readonly unknown[], V, Seen extends unknown[] = []> = T extends readonly [
  infer Head,
  ...infer Rest,
]
  ? Head extends V
    ? Seen['length']
    : IndexOf<Rest, V, [...Seen, Head]>
  : never;
const userAt = <K extends (typeof USER_COLUMNS)[number]>(column: K) =>
  USER_COLUMNS.indexOf(column) as IndexOf<typeof USER_COLUMNS, K>;
/** Each column's position in USER_COLUMNS, typed as that position, so each value keeps its type. */
const USER_AT = {
  id: userAt('id'),
  email: userAt('email'),
  name: userAt('name'),
  created_at: userAt('created_at'),
  email_verified_at: userAt('email_verified_at'),
};

/**
 * A user from USER_COLUMNS' values at the start of a tuple (a query may select more after them):
 * toUser's fields straight from the array, since through a row object first read 0.3 µs more per
 * lookup.
 */
export function userOfTuple(tuple: Tuple): User {
  const row = tuple as UserTuple;
  return {
    id: row[USER_AT.id],
    email: row[USER_AT.email],
    name: row[USER_AT.name],
    createdAt: row[USER_AT.created_at],
    emailVerified: row[USER_AT.email_verified_at] !== null,
  };
}

const firstUser = (rows: readonly Tuple[]): User | undefined => {
  const row = rows[0];
  return row && userOfTuple(row);
};

export class EmailTakenError extends Error {
  constructor() {
    super('email taken');
    this.name = 'EmailTakenError';
  }
}

export interface NewUser {
  email: string;
  emailKey: string;
  name: string;
  passwordHash: string;
}

export interface Credentials {
  user: User;
  passwordHash: string;
}

export interface UsersRepositoryOptions {
  /** PostgreSQL: share-lock a user row read to check its hash (SQLite's transactions lock the file). */
  rowLocks: boolean;
}

export class UsersRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: UsersRepositoryOptions;
  #byId: NamedQuery | undefined;
  constructor(db: Kysely<Tables>, options: UsersRepositoryOptions) {
    this.#db = db;
    this.#options = options;
  }

  /**
   * True when the user exists and still has this password hash. In a transaction on PostgreSQL
   * the row stays share-locked until it ends, so a concurrent password change or deletion waits
   * for it (and then sees what it wrote), or committed before and this answers false.
   */
  async hasPasswordHash(id: bigint, passwordHash: string): Promise<boolean> {
    const query = this.#db
      .selectFrom('users')
      .select('id')
      .where('id', '=', id)
      .where('password_hash', '=', passwordHash);
    return (await (this.#options.rowLocks ? query.forShare() : query).executeTakeFirst()) !== undefined;
  }

  /** The user, or undefined; a value rather than a promise when the rows are there at once (SQLite). */
  findById(id: bigint): Awaitable<User | undefined> {
    // The hottest query: compiled once, then run with each id on the connection directly
    // (db/prepared.ts), instead of rebuilding and recompiling the same SQL on every lookup.
    this.#byId ??= named(this.#db.selectFrom('users').select(USER_COLUMNS).where('id', '=', 0n).compile());
    return mapAwaitable(runPrepared(this.#db, this.#byId, [id]), firstUser);
  }

  async findCredentials(emailKey: string): Promise<Credentials | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select([...USER_COLUMNS, 'password_hash'])
      .where('email_key', '=', emailKey)
      .executeTakeFirst();
    return row && { user: toUser(row), passwordHash: row.password_hash };
  }

  /** The user and their hash, by id: to check a password the user types again. */
  async findCredentialsById(id: bigint): Promise<Credentials | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select([...USER_COLUMNS, 'password_hash'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row && { user: toUser(row), passwordHash: row.password_hash };
  }

  /** Inserts a user; throws EmailTakenError when the email key is already used (race-safe). */
  async insert(user: NewUser): Promise<User> {
    const now = new Date().toISOString();
    try {
      const row = await this.#db
        .insertInto('users')
        .values({
          email: user.email,
          email_key: user.emailKey,
          name: user.name,
          password_hash: user.passwordHash,
          created_at: now,
          updated_at: now,
        })
        .returning(USER_COLUMNS)
        .executeTakeFirstOrThrow();
      await this.#forgetDevices(user.emailKey);
      return toUser(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new EmailTakenError();
      throw error;
    }
  }

  async #emailKeyOf(id: bigint): Promise<{ email_key: string } | undefined> {
    const query = this.#db.selectFrom('users').select('email_key').where('id', '=', id);
    return (this.#options.rowLocks ? query.forUpdate() : query).executeTakeFirst();
  }

  /**
   * Known devices (auth/device-repository.ts) are stored by the digest of the email, which the
   * sign-in throttle knows before any account is read. They belong to the account, not to the
   * address: a new holder of an address starts with none (or tokens an earlier holder collected
   * would be known devices of the new account), and devices move with an email change. Called by
   * the writes that give an address to an account or take it away, in their transaction.
   */
  async #forgetDevices(key: string): Promise<void> {
    await this.#db.deleteFrom('signin_devices').where('account_digest', '=', accountDigest(key)).execute();
  }

  async #moveDevices(from: string, to: string): Promise<void> {
    await this.#forgetDevices(to);
    await this.#db
      .updateTable('signin_devices')
      .set({ account_digest: accountDigest(to) })
      .where('account_digest', '=', accountDigest(from))
      .execute();
  }

  /** Replaces the hash only if it is still the one that was verified, so a concurrent change wins. */
  async replacePasswordHash(id: bigint, expected: string, next: string): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ password_hash: next })
      .where('id', '=', id)
      .where('password_hash', '=', expected)
      .execute();
  }

  /** The email is shown to reach its owner (kept as it is if it already was). */
  async markEmailVerified(id: bigint, at: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ email_verified_at: at.toISOString() })
      .where('id', '=', id)
      .where('email_verified_at', 'is', null)
      .execute();
  }

  async setPasswordHash(id: bigint, passwordHash: string): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ password_hash: passwordHash, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .execute();
  }

  /** One page in an order other than id: a walk of that order's index (the service bounds its depth). */
  async list(paging: PageRequest<UserSortKey>): Promise<User[]> {
    const query = this.#db.selectFrom('users').select(USER_COLUMNS);
    const rows = await paged(query, paging, SORT_COLUMNS[paging.sort], {
      unique: paging.sort === 'email',
    }).execute();
    return rows.map(toUser);
  }

  /** One page in id order and the total: the per-range counts find both, so page 50,000 costs what page 1 does. */
  async listInIdOrder(paging: PageRequest<UserSortKey>): Promise<{ users: User[]; total: number }> {
    const query = this.#db.selectFrom('users').select(USER_COLUMNS);
    const { rows, total } = await pageInIdOrder(this.#db, USER_COUNTS, query, paging);
    return { users: rows.map(toUser), total };
  }

  /** The number of users, from the per-range counts rather than a scan of the table. */
  count(): Promise<number> {
    return countedTotal(this.#db, USER_COUNTS);
  }

  /**
   * Replaces email and name, and the hash when one is given. Throws EmailTakenError when another
   * user has the email key. Resolves undefined when the user no longer exists, or no longer has
   * `ifPasswordHash` when that is given.
   */
  async update(id: bigint, changes: UserChanges): Promise<User | undefined> {
    try {
      // A new email takes the account's known devices along: the key they are stored under is
      // read in this transaction, locked on PostgreSQL, so a concurrent change cannot strand them.
      const before = changes.unverify ? await this.#emailKeyOf(id) : undefined;
      let query = this.#db
        .updateTable('users')
        .set({
          email: changes.email,
          email_key: changes.emailKey,
          name: changes.name,
          updated_at: new Date().toISOString(),
          ...(changes.passwordHash === undefined ? {} : { password_hash: changes.passwordHash }),
          ...(changes.unverify ? { email_verified_at: null } : {}),
        })
        .where('id', '=', id);
      if (changes.ifPasswordHash !== undefined)
        query = query.where('password_hash', '=', changes.ifPasswordHash);
      const row = await query.returning(USER_COLUMNS).executeTakeFirst();
      if (row && before && before.email_key !== changes.emailKey)
        await this.#moveDevices(before.email_key, changes.emailKey);
      return row && toUser(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new EmailTakenError();
      throw error;
    }
  }

  /**
   * Deletes the user; their sessions, products and reviews go with them (foreign-key cascades).
   * Answers the user as the row was when deleted (undefined: no such user), for a goodbye mail.
   */
  async delete(id: bigint): Promise<User | undefined> {
    const row = await this.#db
      .deleteFrom('users')
      .where('id', '=', id)
      .returning(USER_COLUMNS)
      .executeTakeFirst();
    if (row) await this.#forgetDevices(emailKey(row.email));
    return row && toUser(row);
  }
}

const SORT_COLUMNS = { id: 'id', name: 'name', email: 'email_key', createdAt: 'created_at' } as const;
const USER_COUNTS: RangeCounts = { table: 'user_counts', column: 'users', span: USER_COUNT_SPAN };

export interface UserChanges {
  email: string;
  emailKey: string;
  name: string;
  passwordHash?: string | undefined;
  /** Only if the stored hash is still this one (the one the present password was checked against). */
  ifPasswordHash?: string | undefined;
  /** The email is a new one: not verified until a link mailed to it is followed. */
  unverify?: boolean;
}
