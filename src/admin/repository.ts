// The admin's reads and writes of accounts: search by any part of an email or name (indexed on
// both stores: admin/ migration 0019), the admin's view of one account, roles, and disabling.
import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import type { AccountRole, Tables } from '../db/schema.ts';
import type { PageRequest } from '../shared/paging.ts';
import { parseRoles } from '../users/user.ts';

export const ADMIN_SORT_KEYS = ['id', 'email', 'name', 'createdAt', 'lastSignInAt'] as const;
export type AdminSortKey = (typeof ADMIN_SORT_KEYS)[number];

const SORT_COLUMNS = {
  id: 'id',
  email: 'email_key',
  name: 'name',
  createdAt: 'created_at',
  lastSignInAt: 'last_signin_at',
} as const satisfies Record<AdminSortKey, string>;

export interface UserFilters {
  /** Part of the email or the name, any letter case; undefined or empty: every user. */
  q?: string | undefined;
  status?: 'active' | 'disabled' | undefined;
  verified?: boolean | undefined;
  role?: AccountRole | undefined;
}

/** An account as support staff see it. */
export interface AdminUserRecord {
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
}

const ADMIN_COLUMNS = [
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
] as const;

interface AdminRow {
  id: bigint;
  email: string;
  name: string;
  role: AccountRole;
  roles: string;
  created_at: Date;
  email_verified_at: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  last_signin_at: Date | null;
}

function toRecord(row: AdminRow): AdminUserRecord {
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
  };
}

/** `%`, `_` and the escape itself taken literally in a LIKE pattern (ESCAPE '\'). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Trigrams need three characters: a shorter query is matched by a scan. */
const TRIGRAM = 3;

export interface AdminRepositoryOptions {
  postgres: boolean;
}

export class AdminRepository {
  readonly #db: Kysely<Tables>;
  readonly #postgres: boolean;
  constructor(db: Kysely<Tables>, options: AdminRepositoryOptions) {
    this.#db = db;
    this.#postgres = options.postgres;
  }

  /** The condition "email or name contains `q`", in the form each store's index serves. */
  #contains(q: string): Expression<SqlBool> {
    const folded = q.toLowerCase();
    const pattern = `%${likeLiteral(folded)}%`;
    const scan = sql<SqlBool>`(email_key like ${pattern} escape '\\' or lower(name) like ${pattern} escape '\\')`;
    // PostgreSQL: pg_trgm's GIN indexes serve the LIKE itself (and recheck it).
    if (this.#postgres || [...folded].length < TRIGRAM) return scan;
    // SQLite: the FTS5 trigram table finds the candidates (a phrase of the query's trigrams,
    // quotes doubled); the LIKE keeps exactly what contains the query (FTS folds case its own way).
    const phrase = `"${folded.replaceAll('"', '""')}"`;
    return sql<SqlBool>`(id in (select rowid from users_search where users_search match ${phrase}) and ${scan})`;
  }

  #filtered(filters: UserFilters) {
    let query = this.#db.selectFrom('users');
    if (filters.q) query = query.where(this.#contains(filters.q));
    if (filters.status === 'active') query = query.where('disabled_at', 'is', null);
    if (filters.status === 'disabled') query = query.where('disabled_at', 'is not', null);
    if (filters.verified === true) query = query.where('email_verified_at', 'is not', null);
    if (filters.verified === false) query = query.where('email_verified_at', 'is', null);
    if (filters.role) query = query.where('role', '=', filters.role);
    return query;
  }

  /** The number of users the filters keep. */
  async count(filters: UserFilters): Promise<number> {
    const row = await this.#filtered(filters)
      .select(({ fn }) => fn.countAll<number | string | bigint>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** One page of the users the filters keep, in the page's order (then by id). */
  async search(filters: UserFilters, paging: PageRequest<AdminSortKey>): Promise<AdminUserRecord[]> {
    const direction = paging.descending ? 'desc' : 'asc';
    let query = this.#filtered(filters).select(ADMIN_COLUMNS);
    const column = SORT_COLUMNS[paging.sort];
    // Never-signed-in accounts last in either direction, as on both stores alike.
    if (column === 'last_signin_at') query = query.orderBy(sql`last_signin_at is null`);
    query = query.orderBy(column, direction);
    if (column !== 'id') query = query.orderBy('id', direction);
    const rows = await query.limit(paging.size).offset(paging.offset).execute();
    return rows.map(toRecord);
  }

  async find(id: bigint): Promise<AdminUserRecord | undefined> {
    const row = await this.#db
      .selectFrom('users')
      .select(ADMIN_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async setRole(id: bigint, role: AccountRole, now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ role, updated_at: now.toISOString() })
      .where('id', '=', id)
      .execute();
  }

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

  /** The email counts as verified (from `now`, or since it was) or not. */
  async setEmailVerified(id: bigint, verified: boolean, now: Date): Promise<void> {
    const at = now.toISOString();
    let query = this.#db
      .updateTable('users')
      .set({ email_verified_at: verified ? at : null, updated_at: at });
    if (verified) query = query.where('email_verified_at', 'is', null);
    await query.where('id', '=', id).execute();
  }

  /** Disables the account (keeping the first time and reason if it already was); false if it is gone. */
  async disable(id: bigint, reason: string | null, now: Date): Promise<boolean> {
    const result = await this.#db
      .updateTable('users')
      .set({ disabled_at: now.toISOString(), disabled_reason: reason, updated_at: now.toISOString() })
      .where('id', '=', id)
      .where('disabled_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async enable(id: bigint, now: Date): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({ disabled_at: null, disabled_reason: null, updated_at: now.toISOString() })
      .where('id', '=', id)
      .execute();
  }
}
