import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** When a browser first came to an interaction's login page, and the Usher session it had then. */
export interface LoginBaseline {
  /** Epoch milliseconds. */
  seenMs: number;
  /** The session's public id, or null: none. */
  sessionId: string | null;
}

/**
 * The login baselines of interactions that want a new sign-in (oidc/tables.ts). The uid is no
 * credential: the page also needs the interaction's signed cookie, and rows are written only
 * once the provider has found the interaction by it.
 */
export class OidcLoginBaselinesRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /**
   * The interaction's baseline: the one noted first, whichever request got there first (two tabs,
   * two instances), or this one if none was.
   */
  async note(uid: string, first: LoginBaseline & { expiresMs: number }): Promise<LoginBaseline> {
    await this.#db
      .insertInto('oidc_login_baselines')
      .values({ uid, seen_ms: first.seenMs, session_id: first.sessionId, expires_ms: first.expiresMs })
      .onConflict((oc) => oc.column('uid').doNothing())
      .execute();
    const row = await this.#db
      .selectFrom('oidc_login_baselines')
      .select(['seen_ms', 'session_id'])
      .where('uid', '=', uid)
      .executeTakeFirst();
    // Only a purge racing this very request could have taken the row: the baseline is then this one.
    return row ? { seenMs: Number(row.seen_ms), sessionId: row.session_id } : first;
  }

  /** Baselines whose interaction has expired, at most `limit` of them (the purge runs in rounds). */
  async deleteExpired(now: number, limit: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('oidc_login_baselines')
      .where('uid', 'in', (eb) =>
        eb
          .selectFrom('oidc_login_baselines')
          .select('uid')
          .where('expires_ms', '<=', BigInt(now))
          .orderBy('expires_ms')
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
