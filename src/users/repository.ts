import type { CompiledQuery, Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import { paged } from '../db/paging.ts';
import type { Tables } from '../db/schema.ts';
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

  async list(paging: PageRequest<UserSortKey>): Promise<User[]> {
    const query = this.#db.selectFrom('users').select(USER_COLUMNS);
    const rows = await paged(query, paging, SORT_COLUMNS[paging.sort]).execute();
    return rows.map(toUser);
  }

  async count(): Promise<number> {
    const row = await this.#db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
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
