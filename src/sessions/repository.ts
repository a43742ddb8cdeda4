import type { CompiledQuery, Kysely, Selectable } from 'kysely';
import { type SessionsTable, type Tables, timestamp } from '../db/schema.ts';

export interface SessionRecord {
  /** The public id: what the user sees and names, never the token or its hash. */
  id: string;
  userId: bigint;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

/** A session as its owner sees it in their list. */
export interface ListedSession extends Omit<SessionRecord, 'userId'> {
  userAgent: string | null;
}

/** Where a live session's times must be: not past its expiry, seen since `idleSince`. */
export interface Liveness {
  now: Date;
  idleSince: Date;
}

const FIND_COLUMNS = ['public_id', 'user_id', 'created_at', 'last_seen_at', 'expires_at'] as const;
type FoundRow = Pick<Selectable<SessionsTable>, (typeof FIND_COLUMNS)[number]>;

export interface NewSession {
  tokenHash: string;
  publicId: string;
  userId: bigint;
  now: Date;
  expiresAt: Date;
  userAgent: string | null;
}

export class SessionsRepository {
  readonly #db: Kysely<Tables>;
  #byToken: CompiledQuery<FoundRow> | undefined;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async insert(session: NewSession): Promise<void> {
    const { tokenHash, publicId, userId, now, expiresAt, userAgent } = session;
    await this.#db
      .insertInto('sessions')
      .values({
        token_hash: tokenHash,
        public_id: publicId,
        user_id: userId,
        user_agent: userAgent,
        created_at: now.toISOString(),
        last_seen_at: now.toISOString(),
        expires_at: expiresAt.toISOString(),
      })
      .execute();
  }

  async find(tokenHash: string): Promise<SessionRecord | undefined> {
    // Every authenticated request runs this: compiled once, like UsersRepository.findById, so
    // the query is not rebuilt and recompiled each time.
    this.#byToken ??= this.#db
      .selectFrom('sessions')
      .select(FIND_COLUMNS)
      .where('token_hash', '=', '')
      .compile();
    const { rows } = await this.#db.executeQuery<FoundRow>({ ...this.#byToken, parameters: [tokenHash] });
    const row = rows[0];
    return (
      row && {
        id: row.public_id,
        userId: row.user_id,
        createdAt: row.created_at,
        lastSeenAt: row.last_seen_at,
        expiresAt: row.expires_at,
      }
    );
  }

  async touch(tokenHash: string, at: Date): Promise<void> {
    await this.#db
      .updateTable('sessions')
      .set({ last_seen_at: at.toISOString() })
      .where('token_hash', '=', tokenHash)
      .execute();
  }

  async delete(tokenHash: string): Promise<void> {
    await this.#db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute();
  }

  /** A user's live sessions, newest first. */
  async listLive(userId: bigint, live: Liveness): Promise<ListedSession[]> {
    const rows = await this.#db
      .selectFrom('sessions')
      .select(['public_id', 'created_at', 'last_seen_at', 'expires_at', 'user_agent'])
      .where('user_id', '=', userId)
      .where('expires_at', '>', timestamp(live.now))
      .where('last_seen_at', '>', timestamp(live.idleSince))
      .orderBy('created_at', 'desc')
      .orderBy('public_id', 'desc')
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

  /** Ends every session of a user, but the one named by `keep` (the caller's own), if given. */
  async deleteForUser(userId: bigint, keep?: string): Promise<void> {
    let query = this.#db.deleteFrom('sessions').where('user_id', '=', userId);
    if (keep !== undefined) query = query.where('token_hash', '!=', keep);
    await query.execute();
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
