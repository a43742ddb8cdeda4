import { type Kysely, type Selectable, sql } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import { paged } from '../db/paging.ts';
import { type NamedQuery, named, runPrepared, type Tuple } from '../db/prepared.ts';
import { countedTotal, pageInIdOrder, type RangeCounts } from '../db/range-pages.ts';
import { type Tables, USER_COUNT_SPAN, type UsersTable } from '../db/schema.ts';
import { PasswordCredentialsRepository } from '../passwords/index.ts';
import { type Awaitable, mapAwaitable } from '../shared/awaitable.ts';
import { DEFAULT_LOCALE } from '../shared/locale.ts';
import type { PageRequest } from '../shared/paging.ts';
import './tables.ts';
import { type AccountRole, accountDigest, nameKey, parseRoles, type User, type UserSortKey } from './user.ts';

/** A user's columns, in the order userOfTuple reads them. */
export const USER_COLUMNS = [
  'id',
  'email',
  'name',
  'created_at',
  'email_verified_at',
  'role',
  'disabled_at',
  'locale',
] as const;

type UserRow = Pick<Selectable<UsersTable>, (typeof USER_COLUMNS)[number]>;

/** A users row (also as sessions/ reads it with a session) as the rest of the code sees it. */
export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    createdAt: row.created_at,
    emailVerified: row.email_verified_at !== null,
    role: row.role,
    disabled: row.disabled_at !== null,
    locale: row.locale,
  };
}

/** An account as support staff see it (admin/): a User's fields and what only staff are shown. */
export interface AccountRecord {
  id: bigint;
  email: string;
  name: string;
  role: AccountRole;
  roles: string[];
  createdAt: Date;
  emailVerified: boolean;
  disabledAt: Date | null;
  disabledReason: string | null;
  lastSignInAt: Date | null;
  /** The account's language (BCP 47), for the mail staff send it. */
  locale: string;
}

/** An AccountRecord's columns. */
export const ACCOUNT_COLUMNS = [
  'id',
  'email',
  'name',
  'role',
  'roles',
  'created_at',
  'email_verified_at',
  'disabled_at',
  'disabled_reason',
  'last_signin_at',
  'locale',
] as const;

/** The row an AccountRecord is read from. */
export type AccountRow = Pick<Selectable<UsersTable>, (typeof ACCOUNT_COLUMNS)[number]>;

export function toAccountRecord(row: AccountRow): AccountRecord {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    roles: parseRoles(row.roles),
    createdAt: row.created_at,
    emailVerified: row.email_verified_at !== null,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
    lastSignInAt: row.last_signin_at,
    locale: row.locale,
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
  role: userAt('role'),
  disabled_at: userAt('disabled_at'),
  locale: userAt('locale'),
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
    role: row[USER_AT.role],
    disabled: row[USER_AT.disabled_at] !== null,
    locale: row[USER_AT.locale],
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
  /** A canonical BCP 47 tag; the column's default (`en`) when absent. */
  locale?: string | undefined;
}

/** An account a bulk import makes: when the other system made it, and whether it verified the email. */
export interface ImportedUser extends NewUser {
  createdAt?: Date | undefined;
  emailVerifiedAt?: Date | undefined;
}

/**
 * An account's known devices (signin/device-repository.ts), which signin/ stores by the digest of
 * the account's email key: they follow the key, in the transaction that gives or takes it.
 */
export interface AccountDevices {
  forgetAccounts(accountDigests: readonly string[]): Promise<void>;
  moveAccount(fromDigest: string, toDigest: string): Promise<void>;
}

export interface UsersRepositoryOptions {
  /** PostgreSQL: lock the rows a check reads until its transaction ends (SQLite's transactions lock the file). */
  rowLocks: boolean;
  /** The known devices, on the same connection or transaction as the repository. */
  devices: (db: Kysely<Tables>) => AccountDevices;
}

export class UsersRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: UsersRepositoryOptions;
  readonly #credentials: PasswordCredentialsRepository;
  #devices: AccountDevices | undefined;
  #byId: NamedQuery | undefined;
  constructor(db: Kysely<Tables>, options: UsersRepositoryOptions) {
    this.#db = db;
    this.#options = options;
    this.#credentials = new PasswordCredentialsRepository(db, options);
  }

  /**
   * In a transaction that will insert a row referring to the user (a session): takes the user
   * row's KEY SHARE lock first (PostgreSQL), so an account deletion waits for it rather than
   * meeting it half-way (each holding a row the other needs). Nothing to do on SQLite.
   */
  async holdForReference(id: bigint): Promise<void> {
    if (!this.#options.rowLocks) return;
    await this.#db.selectFrom('users').select('id').where('id', '=', id).forKeyShare().executeTakeFirst();
  }

  /**
   * For sign-in (auth/service.ts): true when the user exists and still has this password hash
   * (passwords/repository.ts's `holds`: share-locked on PostgreSQL in a transaction).
   */
  hasPasswordHash(id: bigint, passwordHash: string): Promise<boolean> {
    return this.#credentials.holds(id, passwordHash);
  }

  /**
   * The ids of the admins who can sign in, locked (PostgreSQL) until the transaction ends: two
   * admins removing each other at once are decided one after the other, so one admin stays.
   */
  async lockActiveAdmins(): Promise<bigint[]> {
    const query = this.#db
      .selectFrom('users')
      .select('id')
      .where('role', '=', 'admin')
      // Also what the partial index users_staff is made for, so SQLite reads it instead of the table.
      .where('role', '<>', 'user')
      .where('disabled_at', 'is', null)
      .orderBy('id');
    // NO KEY UPDATE: a sign-in's foreign-key check (KEY SHARE) is not held up by it.
    const rows = await (this.#options.rowLocks ? query.forNoKeyUpdate() : query).execute();
    return rows.map((row) => row.id);
  }

  /** The user, or undefined; a value rather than a promise when the rows are there at once (SQLite). */
  findById(id: bigint): Awaitable<User | undefined> {
    // The hottest query: compiled once, then run with each id on the connection directly
    // (db/prepared.ts), instead of rebuilding and recompiling the same SQL on every lookup.
    this.#byId ??= named(this.#db.selectFrom('users').select(USER_COLUMNS).where('id', '=', 0n).compile());
    return mapAwaitable(runPrepared(this.#db, this.#byId, [id]), firstUser);
  }

  /** The user with this email key (emailKey of their email), or undefined. */
  async findByEmailKey(emailKey: string): Promise<User | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select(USER_COLUMNS)
      .where('email_key', '=', emailKey)
      .executeTakeFirst();
    return row && toUser(row);
  }

  /**
   * The user and the email key stored for them, for a change of their email (users/user.ts
   * savedEmail): an account migration 0028 kept apart holds an older key than its email's.
   */
  async findForChange(id: bigint): Promise<{ user: User; emailKey: string } | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select([...USER_COLUMNS, 'email_key'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row && { user: toUser(row), emailKey: row.email_key };
  }

  /**
   * The accounts whose emails share a key (migration 0028, decision 355), by set: the account that
   * holds the key first, then those kept on their old keys, in id order.
   */
  async emailKeyCollisions(): Promise<EmailKeyCollision[]> {
    const flagged = await this.#db
      .selectFrom('email_key_collisions')
      .innerJoin('users', 'users.id', 'email_key_collisions.user_id')
      .select([...USER_COLUMNS.map((c) => `users.${c}` as const), 'email_key_collisions.email_key as next'])
      .orderBy('email_key_collisions.email_key')
      .orderBy('users.id')
      .execute();
    const sets = new Map<string, EmailKeyCollision>();
    for (const row of flagged) {
      let set = sets.get(row.next);
      if (!set) {
        const holder = await this.findByEmailKey(row.next);
        set = { emailKey: row.next, holder, keptApart: [] };
        sets.set(row.next, set);
      }
      set.keptApart.push(toUser(row));
    }
    return [...sets.values()];
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
          name_key: nameKey(user.name),
          created_at: now,
          updated_at: now,
          ...(user.locale === undefined ? {} : { locale: user.locale }),
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

  /**
   * Inserts accounts in one statement (a bulk import): those whose email key is already taken are
   * left out. Answers the users inserted, by email key.
   */
  async insertMany(users: readonly ImportedUser[]): Promise<Map<string, User>> {
    if (users.length === 0) return new Map();
    const now = new Date().toISOString();
    const rows = await this.#db
      .insertInto('users')
      .values(
        users.map((user) => ({
          email: user.email,
          email_key: user.emailKey,
          name: user.name,
          name_key: nameKey(user.name),
          created_at: user.createdAt?.toISOString() ?? now,
          updated_at: now,
          email_verified_at: user.emailVerifiedAt?.toISOString() ?? null,
          locale: user.locale ?? DEFAULT_LOCALE,
        })),
      )
      .onConflict((oc) => oc.column('email_key').doNothing())
      .returning([...USER_COLUMNS, 'email_key'])
      .execute();
    const inserted = new Map(rows.map((row) => [row.email_key, toUser(row)]));
    await this.#knownDevices().forgetAccounts([...inserted.keys()].map(accountDigest));
    return inserted;
  }

  async #emailKeyOf(id: bigint): Promise<{ email_key: string } | undefined> {
    const query = this.#db.selectFrom('users').select('email_key').where('id', '=', id);
    return (this.#options.rowLocks ? query.forUpdate() : query).executeTakeFirst();
  }

  /**
   * Known devices (signin/device-repository.ts) are stored by the digest of the email, which the
   * sign-in throttle knows before any account is read. They belong to the account, not to the
   * address: a new holder of an address starts with none (or tokens an earlier holder collected
   * would be known devices of the new account), and devices move with an email change. Called by
   * the writes that give an address to an account or take it away, in their transaction.
   */
  async #forgetDevices(key: string): Promise<void> {
    await this.#knownDevices().forgetAccounts([accountDigest(key)]);
  }

  async #moveDevices(from: string, to: string): Promise<void> {
    await this.#forgetDevices(to);
    await this.#knownDevices().moveAccount(accountDigest(from), accountDigest(to));
  }

  // Made when first needed: most repositories, built with every transaction, never change an email.
  #knownDevices(): AccountDevices {
    this.#devices ??= this.#options.devices(this.#db);
    return this.#devices;
  }

  /**
   * A key its holder gave up (deleted, or moved to another address) goes at once to the oldest
   * account migration 0028 kept waiting for it (decision 356), in the same transaction: the
   * migration's own rule, and no one else can register the address in between (the old holder's
   * row holds the key's index entry until the commit). Its known devices move with it.
   */
  async #handOn(key: string): Promise<void> {
    const waiting = await this.#db
      .selectFrom('email_key_collisions')
      .select('user_id')
      .where('email_key', '=', key)
      .orderBy('user_id')
      .execute();
    for (const { user_id: id } of waiting) {
      // Locked, then read again: a change of its own address may have committed meanwhile.
      const row = await this.#emailKeyOf(id);
      const still = await this.#db
        .selectFrom('email_key_collisions')
        .select('user_id')
        .where('user_id', '=', id)
        .where('email_key', '=', key)
        .executeTakeFirst();
      if (!row || !still) continue;
      await this.#db
        .updateTable('users')
        .set({ email_key: key, updated_at: new Date().toISOString() })
        .where('id', '=', id)
        .execute();
      await this.#moveDevices(row.email_key, key);
      await this.#db.deleteFrom('email_key_collisions').where('user_id', '=', id).execute();
      return;
    }
  }

  /**
   * For sign-in's rehash (auth/service.ts): replaces the hash only if it is still the one that was
   * verified, so a concurrent change wins (passwords/repository.ts's `replace`).
   */
  async replacePasswordHash(id: bigint, expected: string, next: string): Promise<void> {
    await this.#credentials.replace(id, expected, next);
  }

  /** The application's own roles of a user, for the tokens Usher issues. */
  async rolesOf(id: bigint): Promise<string[]> {
    const row = await this.#db.selectFrom('users').select('roles').where('id', '=', id).executeTakeFirst();
    return row ? parseRoles(row.roles) : [];
  }

  async setRole(id: bigint, role: AccountRole, now: Date = new Date()): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ role, updated_at: now.toISOString() })
      .where('id', '=', id)
      .execute();
  }

  /**
   * Locks the account's row (PostgreSQL) until the transaction ends, so that changes decided on
   * what the account has (its ways to sign in) are taken one after the other; false when there is
   * no such account.
   */
  async lock(id: bigint): Promise<boolean> {
    const query = this.#db.selectFrom('users').select('id').where('id', '=', id);
    return (await (this.#options.rowLocks ? query.forUpdate() : query).executeTakeFirst()) !== undefined;
  }

  /** The account as support staff see it (admin/). */
  async findAccount(id: bigint): Promise<AccountRecord | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select(ACCOUNT_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toAccountRecord(row);
  }

  /** The application's own roles, carried in the tokens Usher issues. */
  async setRoles(id: bigint, roles: readonly string[], now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ roles: JSON.stringify(roles), updated_at: now.toISOString() })
      .where('id', '=', id)
      .execute();
  }

  async setName(id: bigint, name: string, now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ name, updated_at: now.toISOString() })
      .where('id', '=', id)
      .execute();
  }

  /**
   * The email counts as not verified. Marking it verified proves it, which only EmailProven does
   * (users/email-proven.ts, decision 343).
   */
  async unverifyEmail(id: bigint, now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ email_verified_at: null, updated_at: now.toISOString() })
      .where('id', '=', id)
      .execute();
  }

  /** Disables the account with this reason (since the first time, if it already was). */
  async disable(id: bigint, reason: string | null, now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({
        disabled_at: sql<string>`coalesce(disabled_at, ${now.toISOString()})`,
        disabled_reason: reason,
        updated_at: now.toISOString(),
      })
      .where('id', '=', id)
      .execute();
  }

  async enable(id: bigint, now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ disabled_at: null, disabled_reason: null, updated_at: now.toISOString() })
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
   * Replaces email and name, and the email key when one is given that differs from the stored
   * one. Throws EmailTakenError when another user has the email key. Resolves undefined when the
   * user no longer exists.
   */
  async update(id: bigint, changes: UserChanges): Promise<User | undefined> {
    try {
      // A new key takes the account's known devices along: the key they are stored under is
      // read in this transaction, locked on PostgreSQL, so a concurrent change cannot strand them.
      const before = changes.emailKey === undefined ? undefined : await this.#emailKeyOf(id);
      const newKey = before && before.email_key !== changes.emailKey ? changes.emailKey : undefined;
      const query = this.#db
        .updateTable('users')
        .set({
          email: changes.email,
          ...(newKey === undefined ? {} : { email_key: newKey }),
          name: changes.name,
          name_key: nameKey(changes.name),
          ...(changes.locale === undefined ? {} : { locale: changes.locale }),
          updated_at: new Date().toISOString(),
          ...(changes.unverify ? { email_verified_at: null } : {}),
        })
        .where('id', '=', id);
      const row = await query.returning(USER_COLUMNS).executeTakeFirst();
      if (row && before && newKey !== undefined) {
        await this.#moveDevices(before.email_key, newKey);
        // An account kept apart by migration 0028 is resolved by its new address.
        await this.#db.deleteFrom('email_key_collisions').where('user_id', '=', id).execute();
        await this.#handOn(before.email_key);
      }
      return row && toUser(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new EmailTakenError();
      throw error;
    }
  }

  /**
   * Locks what a deletion of the user locks first (the password credential: PostgreSQL), so that
   * checks before the deletion take their locks in the order every sign-in and deletion does.
   */
  async lockForDelete(id: bigint): Promise<void> {
    await this.#credentials.lockForDelete(id);
  }

  /**
   * Deletes the user; their sessions, products and reviews go with them (foreign-key cascades).
   * Answers the user as the row was when deleted (undefined: no such user), for a goodbye mail.
   */
  async delete(id: bigint): Promise<User | undefined> {
    // The credential row is locked first, as password writes and sign-in's fence lock it before
    // the user row (PostgreSQL; the deletion takes it by cascade otherwise, after the user row).
    if (this.#options.rowLocks && !this.#db.isTransaction)
      return this.#db.transaction().execute((trx) => new UsersRepository(trx, this.#options).delete(id));
    await this.#credentials.lockForDelete(id);
    const row = await this.#db
      .deleteFrom('users')
      .where('id', '=', id)
      .returning([...USER_COLUMNS, 'email_key'])
      .executeTakeFirst();
    if (!row) return undefined;
    // The key stored, not the email's: an account kept apart by migration 0028 holds an older key,
    // and its email's key (and the devices under it) is another account's.
    await this.#forgetDevices(row.email_key);
    await this.#handOn(row.email_key);
    return toUser(row);
  }
}

const SORT_COLUMNS = { id: 'id', name: 'name', email: 'email_key', createdAt: 'created_at' } as const;
const USER_COUNTS: RangeCounts = { table: 'user_counts', column: 'users', span: USER_COUNT_SPAN };

/** Accounts whose emails have one key: the one holding it, and those kept on their old keys. */
export interface EmailKeyCollision {
  emailKey: string;
  /**
   * Undefined only where no account held the key when listed: a holder's deletion or new address
   * hands the key on to the oldest kept-apart account in the same transaction (decision 356).
   */
  holder: User | undefined;
  keptApart: User[];
}

export interface UserChanges {
  email: string;
  /** The email's key when it changes (users/user.ts savedEmail); the stored key stays when absent. */
  emailKey?: string | undefined;
  name: string;
  /** The email is a new one: not verified until a link mailed to it is followed. */
  unverify?: boolean;
  /** A new language (a canonical BCP 47 tag); kept as it is when absent. */
  locale?: string | undefined;
}
