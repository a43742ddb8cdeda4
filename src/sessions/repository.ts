import type { Kysely } from 'kysely';
import { type Tables, timestamp } from '../db/schema.ts';

export interface SessionRecord {
  userId: bigint;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

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
    const row = await this.#db
      .selectFrom('sessions')
      .select(['user_id', 'created_at', 'last_seen_at', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    return (
      row && {
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
