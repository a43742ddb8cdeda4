import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { runPrepared, type SlottedQuery, slotted } from '../db/prepared.ts';
import type { Tables } from '../db/schema.ts';

/** One stored instance of an oidc-provider model, as its adapter hands it over. */
export interface StoredModel {
  payload: Record<string, unknown>;
  grantId?: string | undefined;
  uid?: string | undefined;
  userCode?: string | undefined;
  /** Epoch milliseconds, or undefined for no expiry. */
  expiresAt: number | undefined;
}

const digestOf = (id: string) => createHash('sha256').update(id).digest('base64url');

const UPSERT_SLOTS = [
  'model',
  'id_digest',
  'payload',
  'grant_id',
  'uid',
  'user_code',
  'account_id',
  'expires_ms',
] as const;
type UpsertSlot = (typeof UPSERT_SLOTS)[number];

/**
 * The models whose payload keeps its `jti`: a session is also found by its uid (an interaction's
 * link to it) and must come back whole. It is no credential alone: the provider asks for the Usher
 * session as well (oidc/provider.ts). Every other model's id is its value, kept only as a digest.
 */
const KEEPS_ID = new Set(['Session']);

/**
 * oidc-provider's models (oidc/tables.ts). Every lookup takes the time: an expired row reads as
 * absent, whether or not the background purge has removed it yet.
 */
export class OidcModelsRepository {
  readonly #db: Kysely<Tables>;
  // Every token the provider issues from a code or a refresh token runs these: built once, named,
  // and run on the connection directly (db/prepared.ts).
  #upsert: SlottedQuery<UpsertSlot> | undefined;
  #find: SlottedQuery<'model' | 'digest' | 'now'> | undefined;
  #consume: SlottedQuery<'model' | 'digest' | 'now'> | undefined;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async upsert(model: string, id: string, stored: StoredModel): Promise<void> {
    const payload = KEEPS_ID.has(model) ? stored.payload : { ...stored.payload, jti: undefined };
    this.#upsert ??= slotted(UPSERT_SLOTS, (s) => {
      const row = {
        payload: s.payload,
        grant_id: s.grant_id,
        uid: s.uid,
        user_code: s.user_code,
        account_id: s.account_id,
        expires_ms: s.expires_ms,
      };
      return this.#db
        .insertInto('oidc_models')
        .values({ model: s.model, id_digest: s.id_digest, ...row })
        .onConflict((oc) => oc.columns(['model', 'id_digest']).doUpdateSet(row));
    });
    await runPrepared(
      this.#db,
      this.#upsert.query,
      this.#upsert.parameters({
        model,
        id_digest: digestOf(id),
        payload: JSON.stringify(payload),
        grant_id: stored.grantId ?? null,
        uid: stored.uid ?? null,
        user_code: stored.userCode ?? null,
        account_id: typeof stored.payload.accountId === 'string' ? stored.payload.accountId : null,
        expires_ms: stored.expiresAt ?? null,
      }),
    );
  }

  async find(model: string, id: string, now: number): Promise<Record<string, unknown> | undefined> {
    this.#find ??= slotted(['model', 'digest', 'now'], (s) =>
      this.#db
        .selectFrom('oidc_models')
        .select(['payload', 'consumed_ms'])
        .where('model', '=', s.model)
        .where('id_digest', '=', s.digest)
        .where((eb) => eb.or([eb('expires_ms', 'is', null), eb('expires_ms', '>', s.now)])),
    );
    const rows = await runPrepared(
      this.#db,
      this.#find.query,
      this.#find.parameters({ model, digest: digestOf(id), now: BigInt(now) }),
    );
    const row = rows[0];
    return (
      row && {
        ...payloadOf({ payload: row[0] as string, consumed_ms: row[1] as bigint | number | null }),
        ...(KEEPS_ID.has(model) ? {} : { jti: id }),
      }
    );
  }

  async findBy(
    model: string,
    column: 'uid' | 'user_code',
    value: string,
    now: number,
  ): Promise<{ id: string; payload: Record<string, unknown> } | undefined> {
    const row = await this.#db
      .selectFrom('oidc_models')
      .select(['payload', 'consumed_ms'])
      .where('model', '=', model)
      .where(column, '=', value)
      .where((eb) => eb.or([eb('expires_ms', 'is', null), eb('expires_ms', '>', BigInt(now))]))
      .executeTakeFirst();
    if (!row) return undefined;
    const payload = payloadOf(row);
    return { id: String(payload.jti), payload };
  }

  /**
   * Spends a code or a refresh token: true only for the one use that found it unspent, so of two
   * simultaneous exchanges exactly one goes on (the statement is atomic on both stores).
   */
  async consume(model: string, id: string, now: number): Promise<boolean> {
    this.#consume ??= slotted(['model', 'digest', 'now'], (s) =>
      this.#db
        .updateTable('oidc_models')
        .set({ consumed_ms: s.now })
        .where('model', '=', s.model)
        .where('id_digest', '=', s.digest)
        .where('consumed_ms', 'is', null)
        .returning('model'),
    );
    const rows = await runPrepared(
      this.#db,
      this.#consume.query,
      this.#consume.parameters({ model, digest: digestOf(id), now }),
    );
    return rows.length === 1;
  }

  async destroy(model: string, id: string): Promise<void> {
    await this.#db
      .deleteFrom('oidc_models')
      .where('model', '=', model)
      .where('id_digest', '=', digestOf(id))
      .execute();
  }

  /** Everything a grant issued (codes, tokens), of any model. */
  async revokeGrant(grantId: string): Promise<void> {
    await this.#db.deleteFrom('oidc_models').where('grant_id', '=', grantId).execute();
  }

  /**
   * The grant of a stored code or token, and everything it issued, the grant itself included: a
   * token issued from it afterwards is refused too (the library looks its grant up at every use).
   */
  async revokeGrantOf(model: string, id: string): Promise<void> {
    const row = await this.#db
      .selectFrom('oidc_models')
      .select('grant_id')
      .where('model', '=', model)
      .where('id_digest', '=', digestOf(id))
      .executeTakeFirst();
    if (!row?.grant_id) return;
    await this.#db
      .deleteFrom('oidc_models')
      .where((eb) =>
        eb.or([
          eb('grant_id', '=', row.grant_id),
          eb.and([eb('model', '=', 'Grant'), eb('id_digest', '=', digestOf(row.grant_id!))]),
        ]),
      )
      .execute();
  }

  /**
   * Everything the provider holds for a person: grants, codes, refresh and opaque access tokens,
   * provider sessions. A password change or reset calls it in its transaction: whoever had the
   * old password may have let an app in with it, and that app's access ends with it.
   */
  async revokeAccount(userId: bigint): Promise<void> {
    await this.#db.deleteFrom('oidc_models').where('account_id', '=', userId.toString()).execute();
  }

  /**
   * Expired rows, at most `limit` of them in this one statement: the housekeeping calls it in rounds
   * (db/purge.ts), so a flood's worth of expired rows is never one long statement holding the table
   * (SQLite's single writer) or one huge transaction (PostgreSQL).
   */
  async deleteExpired(now: number, limit: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('oidc_models')
      .where('expires_ms', '<=', BigInt(now))
      .where(({ eb, refTuple, selectFrom }) =>
        eb(
          refTuple('model', 'id_digest'),
          'in',
          selectFrom('oidc_models')
            .select(['model', 'id_digest'])
            .where('expires_ms', '<=', BigInt(now))
            // By expiry, on its index: with nothing expired the read stops at once.
            .orderBy('expires_ms')
            .limit(limit)
            .$asTuple('model', 'id_digest'),
        ),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** The stored payload with what the row keeps apart put back: `consumed` as oidc-provider reads it. */
function payloadOf(row: { payload: string; consumed_ms: bigint | number | null }): Record<string, unknown> {
  const payload = JSON.parse(row.payload) as Record<string, unknown>;
  if (row.consumed_ms !== null) payload.consumed = Math.floor(Number(row.consumed_ms) / 1000);
  return payload;
}
