import type { CompiledQuery, Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import { paged } from '../db/paging.ts';
import { type Tables, USER_ID_BLOCK } from '../db/schema.ts';
import type { PageRequest } from '../shared/paging.ts';
import type { User } from './user.ts';

const USER_COLUMNS = ['id', 'email', 'name', 'created_at', 'updated_at'] as const;

interface UserRow {
  id: bigint | string;
  email: string;
  name: string;
  created_at: Date | string;
  updated_at: Date | string;
}

function toUser(row: UserRow): User {
  return {
    id: BigInt(row.id),
    email: row.email,
    name: row.name,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

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

export class UsersRepository {
  readonly #db: Kysely<Tables>;
  #byId: CompiledQuery<UserRow> | undefined;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async findById(id: bigint): Promise<User | undefined> {
    // The hottest query: compiled once, then run with each id, instead of rebuilding and
    // recompiling the same SQL on every lookup (measured in docs/benchmarks.md).
    this.#byId ??= this.#db.selectFrom('users').select(USER_COLUMNS).where('id', '=', 0n).compile();
    const { rows } = await this.#db.executeQuery<UserRow>({ ...this.#byId, parameters: [id] });
    return rows[0] && toUser(rows[0]);
  }

  async findCredentials(emailKey: string): Promise<Credentials | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select([...USER_COLUMNS, 'password_hash'])
      .where('email_key', '=', emailKey)
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
      return toUser(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new EmailTakenError();
      throw error;
    }
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

  async setPasswordHash(id: bigint, passwordHash: string): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ password_hash: passwordHash, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .execute();
  }

  /** One page and the total. In id order (the default) a deep page costs what page 1 does. */
  async list(paging: PageRequest<UserSortKey>): Promise<{ users: User[]; total: number }> {
    if (paging.sort === 'id') return this.#listById(paging);
    const query = this.#db.selectFrom('users').select(USER_COLUMNS);
    const [rows, total] = await Promise.all([
      paged(query, paging, SORT_COLUMNS[paging.sort]).execute(),
      this.count(),
    ]);
    return { users: rows.map(toUser), total };
  }

  /** The number of users, from the per-block counts rather than a scan of the table. */
  async count(): Promise<number> {
    const row = await this.#db
      .selectFrom('user_id_blocks')
      .select((eb) => eb.fn.sum<bigint | string | number | null>('users').as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n ?? 0);
  }

  /**
   * Finds the block of ids the page starts in from a running sum of the per-block counts, then
   * reads from that block's first id, skipping only the rows of that block before the page.
   */
  async #listById(paging: PageRequest<UserSortKey>): Promise<{ users: User[]; total: number }> {
    const order = paging.descending ? 'desc' : 'asc';
    const running = this.#db.selectFrom('user_id_blocks').select((eb) => [
      'block',
      'users',
      eb.fn
        .sum<bigint | string>('users')
        .over((w) => w.orderBy('block', order))
        .as('through'),
      eb.fn.sum<bigint | string>('users').over().as('total'),
    ]);
    const start = await this.#db
      .selectFrom(running.as('r'))
      .select(['block', 'users', 'through', 'total'])
      .where('through', '>', BigInt(paging.offset))
      .orderBy('block', order)
      .limit(1)
      .executeTakeFirst();
    if (!start) return { users: [], total: await this.count() };
    const block = BigInt(start.block) * BigInt(USER_ID_BLOCK);
    const skip = paging.offset - (Number(start.through) - Number(start.users));
    const query = this.#db.selectFrom('users').select(USER_COLUMNS);
    const rows = await (paging.descending
      ? query.where('id', '<', block + BigInt(USER_ID_BLOCK)).orderBy('id', 'desc')
      : query.where('id', '>=', block).orderBy('id', 'asc')
    )
      .limit(paging.size)
      .offset(skip)
      .execute();
    return { users: rows.map(toUser), total: Number(start.total) };
  }

  /**
   * Replaces email and name, and the hash when one is given. Throws EmailTakenError when another
   * user has the email key. Resolves undefined when the user no longer exists.
   */
  async update(id: bigint, changes: UserChanges): Promise<User | undefined> {
    try {
      const row = await this.#db
        .updateTable('users')
        .set({
          email: changes.email,
          email_key: changes.emailKey,
          name: changes.name,
          updated_at: new Date().toISOString(),
          ...(changes.passwordHash === undefined ? {} : { password_hash: changes.passwordHash }),
        })
        .where('id', '=', id)
        .returning(USER_COLUMNS)
        .executeTakeFirst();
      return row && toUser(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new EmailTakenError();
      throw error;
    }
  }

  /** Deletes the user; their sessions, products and reviews go with them (foreign-key cascades). */
  async delete(id: bigint): Promise<boolean> {
    const result = await this.#db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}

export const USER_SORT_KEYS = ['id', 'name', 'email', 'createdAt'] as const;
export type UserSortKey = (typeof USER_SORT_KEYS)[number];
const SORT_COLUMNS = { id: 'id', name: 'name', email: 'email_key', createdAt: 'created_at' } as const;

export interface UserChanges {
  email: string;
  emailKey: string;
  name: string;
  passwordHash?: string;
}
