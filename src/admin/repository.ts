// The admin's search of accounts by any part of an email or name, indexed on both stores by
// admin/ migration 0019 (pg_trgm on users' folded keys; SQLite's FTS5 users_search, joined to
// users by rowid). The one place outside users/ that reads the users table, named as an exception
// in docs/tables.md: its statements are written for the indexes this feature made. Every other
// read and write of an account is users/'s (UsersRepository).
import { type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { AccountRole, Tables } from '../db/schema.ts';
import type { PageRequest } from '../shared/paging.ts';
import {
  ACCOUNT_COLUMNS,
  type AccountRecord,
  type AccountRow,
  emailKey,
  nameKey,
  toAccountRecord,
} from '../users/index.ts';

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
export type AdminUserRecord = AccountRecord;

/** `%`, `_` and the escape itself taken literally in a LIKE pattern (ESCAPE '\'). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A query folded as the keys it is compared with are (users/user.ts). */
const folded = (q: string) => ({ email: emailKey(q), name: nameKey(q.trim()) });

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

  /**
   * SQLite, a query of three characters or more: the FTS5 MATCH that finds exactly the users whose
   * folded email or name contains it (a phrase of the query's trigrams per column, quotes
   * doubled: consecutive trigrams are the substring itself). Undefined on PostgreSQL, whose
   * pg_trgm indexes serve the LIKE itself, and for shorter queries, which have no trigram.
   */
  #match(q: string): string | undefined {
    const { email, name } = folded(q);
    if (this.#postgres || Math.min([...email].length, [...name].length) < TRIGRAM) return undefined;
    const phrase = (text: string) => `"${text.replaceAll('"', '""')}"`;
    return `email_key : ${phrase(email)} OR name_key : ${phrase(name)}`;
  }

  /** Every filter as a condition on `users`, `q` in the form the store's index serves. */
  #conditions(filters: UserFilters, match: string | undefined): RawBuilder<SqlBool>[] {
    const conditions: RawBuilder<SqlBool>[] = [];
    if (filters.q && match !== undefined)
      conditions.push(sql`users.id in (select rowid from users_search where users_search match ${match})`);
    else if (filters.q) {
      const { email, name } = folded(filters.q);
      conditions.push(
        sql`(users.email_key like ${`%${likeLiteral(email)}%`} escape '\\' or users.name_key like ${`%${likeLiteral(name)}%`} escape '\\')`,
      );
    }
    if (filters.status === 'active') conditions.push(sql`users.disabled_at is null`);
    if (filters.status === 'disabled') conditions.push(sql`users.disabled_at is not null`);
    if (filters.verified === true) conditions.push(sql`users.email_verified_at is not null`);
    if (filters.verified === false) conditions.push(sql`users.email_verified_at is null`);
    if (filters.role) conditions.push(sql`users.role = ${filters.role}`);
    return conditions;
  }

  #filtered(filters: UserFilters) {
    const match = filters.q ? this.#match(filters.q) : undefined;
    return this.#conditions(filters, match).reduce(
      (query, condition) => query.where(condition),
      this.#db.selectFrom('users'),
    );
  }

  /**
   * How many users the filters keep, counted up to `cap` (a common query keeps hundreds of
   * thousands: their exact count would cost more than the page). On SQLite a query alone is
   * counted in the FTS5 table, without reading users.
   */
  async count(filters: UserFilters, cap: number): Promise<number> {
    const match = filters.q ? this.#match(filters.q) : undefined;
    const onlyQuery =
      filters.status === undefined && filters.verified === undefined && filters.role === undefined;
    const matching =
      match !== undefined && onlyQuery
        ? sql`select 1 from users_search where users_search match ${match} limit ${cap}`
        : sql`${this.#filtered(filters).select(sql`1`.as('one')).limit(cap)}`;
    const { rows } = await sql<{
      n: number | string | bigint;
    }>`select count(*) as n from (${matching}) as matching`.execute(this.#db);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * One page of the users the filters keep and how many they keep, counted up to `cap`.
   *
   * PostgreSQL: the matching ids first, unordered, up to `cap` (pg_trgm's bitmap scan for a rare
   * query, a scan that stops early for a common one); when fewer than `cap` match, the page is
   * read among them. Asked for the page in id order directly, the planner walks the primary key
   * expecting matches to be everywhere, and reads the whole table for a query that matches few
   * users (300 ms at a million; docs/benchmarks.md, round 12). SQLite: the page, then the count
   * unless the first page already holds every match.
   */
  async searchPage(
    filters: UserFilters,
    paging: PageRequest<AdminSortKey>,
    cap: number,
  ): Promise<{ items: AdminUserRecord[]; total: number }> {
    if (this.#postgres && (filters.q || filters.status || filters.verified !== undefined || filters.role)) {
      const matching = await this.#filtered(filters).select('id').limit(cap).execute();
      if (matching.length < cap) {
        if (paging.offset >= matching.length) return { items: [], total: matching.length };
        const among = this.#db.selectFrom('users').where(
          'id',
          'in',
          matching.map((row) => row.id),
        );
        return { items: await this.#ordered(among, paging), total: matching.length };
      }
      return { items: await this.search(filters, paging), total: cap };
    }
    const items = await this.search(filters, paging);
    const total =
      paging.offset === 0 && items.length < paging.size ? items.length : await this.count(filters, cap);
    return { items, total };
  }

  /** The page of `query`'s users in the page's order (then by id). */
  async #ordered(
    query: SelectQueryBuilder<Tables, 'users', object>,
    paging: PageRequest<AdminSortKey>,
  ): Promise<AdminUserRecord[]> {
    const direction = paging.descending ? 'desc' : 'asc';
    let ordered = query.select(ACCOUNT_COLUMNS);
    const column = SORT_COLUMNS[paging.sort];
    // Never-signed-in accounts last in either direction, as on both stores alike.
    if (column === 'last_signin_at') ordered = ordered.orderBy(sql`last_signin_at is null`);
    ordered = ordered.orderBy(column, direction);
    if (column !== 'id') ordered = ordered.orderBy('id', direction);
    const rows = await ordered.limit(paging.size).offset(paging.offset).execute();
    return rows.map(toAccountRecord);
  }

  /** One page of the users the filters keep, in the page's order (then by id). */
  async search(filters: UserFilters, paging: PageRequest<AdminSortKey>): Promise<AdminUserRecord[]> {
    const direction = paging.descending ? 'desc' : 'asc';
    const match = filters.q ? this.#match(filters.q) : undefined;
    if (match !== undefined && paging.sort === 'id') {
      // SQLite in id order: the FTS5 table walked in rowid order drives the page, so a query that
      // matches a quarter of a million users still stops at the page's last row.
      const conditions = [
        sql<SqlBool>`users_search match ${match}`,
        ...this.#conditions({ ...filters, q: undefined }, undefined),
      ];
      const { rows } =
        await sql<AccountRow>`select ${sql.join(ACCOUNT_COLUMNS.map((c) => sql.ref(`users.${c}`)))}
        from users_search join users on users.id = users_search.rowid
        where ${sql.join(conditions, sql` and `)}
        order by users_search.rowid ${sql.raw(direction)} limit ${paging.size} offset ${paging.offset}`.execute(
          this.#db,
        );
      return rows.map(toAccountRecord);
    }
    return this.#ordered(this.#filtered(filters), paging);
  }
}
