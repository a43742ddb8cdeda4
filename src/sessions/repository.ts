import type { Insertable, Kysely, Selectable } from 'kysely';
import { type NamedQuery, named, positionsOf, runPrepared, type Tuple } from '../db/prepared.ts';
import { type SessionsTable, type Tables, timestamp, type UsersTable } from '../db/schema.ts';
import { type Awaitable, mapAwaitable } from '../shared/awaitable.ts';

/**
 * The row of the user a session belongs to, read in the same query as the session: a signed-in
 * request then needs no second query to know who it is (GET /api/session). Raw columns, so this
 * folder needs nothing from users/; users/repository.ts's toUser turns it into a User.
 */
export type SessionOwnerRow = Pick<
  Selectable<UsersTable>,
  'id' | 'email' | 'name' | 'created_at' | 'email_verified_at' | 'role' | 'disabled_at' | 'roles' | 'locale'
>;

export interface SessionRecord {
  /** The public id: what the user sees and names, never the token or its hash. */
  id: string;
  userId: bigint;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  /** How it was signed in to: RFC 8176 method references, space-separated (null: not recorded). */
  amr: string | null;
  owner: SessionOwnerRow;
}

/** A session as its owner sees it in their list. */
export interface ListedSession extends Omit<SessionRecord, 'userId' | 'owner' | 'amr'> {
  userAgent: string | null;
}

/** Where a live session's times must be: not past its expiry, seen since `idleSince`. */
export interface Liveness {
  now: Date;
  idleSince: Date;
}

/** The session query's select list; its reader takes each value at its position in it. */
const FOUND_COLUMNS = [
  'sessions.public_id',
  'sessions.user_id',
  'sessions.created_at',
  'sessions.last_seen_at',
  'sessions.expires_at',
  'sessions.amr',
  'users.email as owner_email',
  'users.name as owner_name',
  'users.created_at as owner_created_at',
  'users.email_verified_at as owner_email_verified_at',
  'users.role as owner_role',
  'users.disabled_at as owner_disabled_at',
  'users.roles as owner_roles',
  'users.locale as owner_locale',
] as const;
const FOUND = positionsOf(FOUND_COLUMNS);

/** The session query's first row as a record, or undefined. */
function sessionOfRows(rows: readonly Tuple[]): SessionRecord | undefined {
  const row = rows[0];
  if (!row) return undefined;
  const userId = row[FOUND.user_id] as bigint;
  return {
    id: row[FOUND.public_id] as string,
    userId,
    createdAt: row[FOUND.created_at] as Date,
    lastSeenAt: row[FOUND.last_seen_at] as Date,
    expiresAt: row[FOUND.expires_at] as Date,
    amr: row[FOUND.amr] as string | null,
    owner: {
      id: userId,
      email: row[FOUND.owner_email] as string,
      name: row[FOUND.owner_name] as string,
      created_at: row[FOUND.owner_created_at] as Date,
      email_verified_at: row[FOUND.owner_email_verified_at] as Date | null,
      role: row[FOUND.owner_role] as SessionOwnerRow['role'],
      disabled_at: row[FOUND.owner_disabled_at] as Date | null,
      roles: row[FOUND.owner_roles] as string,
      locale: row[FOUND.owner_locale] as string,
    },
  };
}

export interface NewSession {
  tokenHash: string;
  publicId: string;
  userId: bigint;
  now: Date;
  expiresAt: Date;
  userAgent: string | null;
  /** How the session was signed in to: RFC 8176 method references, space-separated. */
  amr: string | null;
}

/** A new session's row, as every insert of one writes it. */
export function sessionRow({ tokenHash, publicId, userId, now, expiresAt, userAgent, amr }: NewSession) {
  return {
    token_hash: tokenHash,
    public_id: publicId,
    user_id: userId,
    user_agent: userAgent,
    created_at: now.toISOString(),
    last_seen_at: now.toISOString(),
    expires_at: expiresAt.toISOString(),
    amr,
  } satisfies Insertable<SessionsTable>;
}

export class SessionsRepository {
  readonly #db: Kysely<Tables>;
  #byToken: NamedQuery | undefined;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async insert(session: NewSession): Promise<void> {
    await this.#db.insertInto('sessions').values(sessionRow(session)).execute();
  }

  find(tokenHash: string): Awaitable<SessionRecord | undefined> {
    // Every authenticated request runs this: compiled once and run on the connection directly,
    // like UsersRepository.findById, and answered as a value when the rows are there at once.
    this.#byToken ??= named(
      this.#db
        .selectFrom('sessions')
        .innerJoin('users', 'users.id', 'sessions.user_id')
        .select(FOUND_COLUMNS)
        .where('sessions.token_hash', '=', '')
        .compile(),
    );
    return mapAwaitable(runPrepared(this.#db, this.#byToken, [tokenHash]), sessionOfRows);
  }

  async touch(tokenHash: string, at: Date): Promise<void> {
    await this.#db
      .updateTable('sessions')
      .set({ last_seen_at: at.toISOString() })
      .where('token_hash', '=', tokenHash)
      .execute();
  }

  /** Ends the session with this token; its public id, or undefined when it was gone already. */
  async delete(tokenHash: string): Promise<string | undefined> {
    const row = await this.#db
      .deleteFrom('sessions')
      .where('token_hash', '=', tokenHash)
      .returning('public_id')
      .executeTakeFirst();
    return row?.public_id ?? undefined;
  }

  /** A user's live sessions, newest first, at most `limit`. */
  async listLive(userId: bigint, live: Liveness, limit: number): Promise<ListedSession[]> {
    const rows = await this.#db
      .selectFrom('sessions')
      .select(['public_id', 'created_at', 'last_seen_at', 'expires_at', 'user_agent'])
      .where('user_id', '=', userId)
      .where('expires_at', '>', timestamp(live.now))
      .where('last_seen_at', '>', timestamp(live.idleSince))
      .orderBy('created_at', 'desc')
      .orderBy('public_id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.public_id,
      createdAt: row.created_at,
      lastSeenAt: row.last_seen_at,
      expiresAt: row.expires_at,
      userAgent: row.user_agent,
    }));
  }

  /**
   * Ends the user's live session with this public id; false when the user has none by that id
   * (another user's, an expired or an unknown one: all alike to the caller).
   */
  async deleteLive(userId: bigint, publicId: string, live: Liveness): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('sessions')
      .where('public_id', '=', publicId)
      .where('user_id', '=', userId)
      .where('expires_at', '>', timestamp(live.now))
      .where('last_seen_at', '>', timestamp(live.idleSince))
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Ends every session of a user, but the one named by `keep` (the caller's own), if given; the
   * public ids of those it ended, for the audit record and the session.ended event.
   */
  async deleteForUser(userId: bigint, keep?: string): Promise<string[]> {
    let query = this.#db.deleteFrom('sessions').where('user_id', '=', userId);
    if (keep !== undefined) query = query.where('token_hash', '!=', keep);
    const rows = await query.returning('public_id').execute();
    return rows.flatMap((row) => (row.public_id === null ? [] : [row.public_id]));
  }

  /** Removes sessions past their absolute expiry or idle since `idleBefore`. */
  async deleteExpired(now: Date, idleBefore: Date): Promise<number> {
    const result = await this.#db
      .deleteFrom('sessions')
      .where((eb) =>
        eb.or([eb('expires_at', '<=', timestamp(now)), eb('last_seen_at', '<=', timestamp(idleBefore))]),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
