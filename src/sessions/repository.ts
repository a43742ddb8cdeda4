import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

export interface SessionRecord {
  userId: bigint;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

export interface SessionsRepositoryOptions {
  /** PostgreSQL: lock the user row while a session is created against its hash (SQLite locks the file). */
  rowLocks: boolean;
}

export class SessionsRepository {
  readonly #db: Kysely<Tables>;
  readonly #rowLocks: boolean;
  constructor(db: Kysely<Tables>, options: SessionsRepositoryOptions) {
    this.#db = db;
    this.#rowLocks = options.rowLocks;
  }

  async insert(tokenHash: string, userId: bigint, now: Date, expiresAt: Date): Promise<void> {
    await insertSession(this.#db, tokenHash, userId, now, expiresAt);
  }

  /**
   * Inserts the session only while the user still has `passwordHash`, in one transaction. On
   * PostgreSQL the user row is share-locked, so a password change either committed before (and
   * the session is not created) or waits until after (and its revocation ends this session).
   */
  async insertIfPasswordHash(
    tokenHash: string,
    userId: bigint,
    passwordHash: string,
    now: Date,
    expiresAt: Date,
  ): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const check = trx
        .selectFrom('users')
        .select('id')
        .where('id', '=', userId)
        .where('password_hash', '=', passwordHash);
      if (!(await (this.#rowLocks ? check.forShare() : check).executeTakeFirst())) return false;
      await insertSession(trx, tokenHash, userId, now, expiresAt);
      return true;
    });
  }

  async find(tokenHash: string): Promise<SessionRecord | undefined> {
    const row = await this.#db
      .selectFrom('sessions')
      .select(['user_id', 'created_at', 'last_seen_at', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    return (
      row && {
        userId: BigInt(row.user_id),
        createdAt: new Date(row.created_at),
        lastSeenAt: new Date(row.last_seen_at),
        expiresAt: new Date(row.expires_at),
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
        eb.or([
          eb('expires_at', '<=', now.toISOString()),
          eb('last_seen_at', '<=', idleBefore.toISOString()),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

async function insertSession(
  db: Kysely<Tables>,
  tokenHash: string,
  userId: bigint,
  now: Date,
  expiresAt: Date,
): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      token_hash: tokenHash,
      user_id: userId,
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: expiresAt.toISOString(),
    })
    .execute();
}
