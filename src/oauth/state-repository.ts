import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** A provider sign-in under way, as its callback reads it. */
export interface PendingSignin {
  provider: string;
  bindingDigest: string;
  codeVerifier: string;
  nonce: string;
  redirectTo: string;
  intent: 'signin' | 'link';
  userId: bigint | undefined;
}

/** Provider sign-ins under way, by the SHA-256 of their state (the state itself is never stored). */
export class OAuthStatesRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async create(stateDigest: string, pending: PendingSignin, expiresAt: number): Promise<void> {
    await this.#db
      .insertInto('oauth_states')
      .values({
        state_digest: stateDigest,
        provider: pending.provider,
        binding_digest: pending.bindingDigest,
        code_verifier: pending.codeVerifier,
        nonce: pending.nonce,
        redirect_to: pending.redirectTo,
        intent: pending.intent,
        user_id: pending.userId ?? null,
        expires_ms: expiresAt,
      })
      .execute();
  }

  /**
   * Takes the state: deleted and returned in one statement, so of two callbacks with one state
   * exactly one gets it (a replay gets nothing). Undefined when unknown, used or expired.
   */
  async take(stateDigest: string, now: number): Promise<PendingSignin | undefined> {
    const row = await this.#db
      .deleteFrom('oauth_states')
      .where('state_digest', '=', stateDigest)
      .returningAll()
      .executeTakeFirst();
    if (!row || Number(row.expires_ms) <= now) return undefined;
    return {
      provider: row.provider,
      bindingDigest: row.binding_digest,
      codeVerifier: row.code_verifier,
      nonce: row.nonce,
      redirectTo: row.redirect_to,
      intent: row.intent,
      userId: row.user_id === null ? undefined : BigInt(row.user_id),
    };
  }

  async deleteExpired(now: number): Promise<void> {
    await this.#db.deleteFrom('oauth_states').where('expires_ms', '<=', BigInt(now)).execute();
  }
}
