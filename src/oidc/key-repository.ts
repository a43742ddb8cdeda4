import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** A provider key as stored: its private part still sealed. */
export interface StoredKey {
  kid: string;
  use: 'sig' | 'cookie';
  alg: string;
  sealed: string;
  createdAt: Date;
  signsFrom: number;
  retiredAt: number | undefined;
}

/** The provider's signing keys and cookie secret (oidc/keys.ts decides what they mean). */
export class OidcKeysRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /** Inserts the key; a key of that kid already there (another instance's first keys) stays. */
  async insert(key: Omit<StoredKey, 'retiredAt'>): Promise<void> {
    await this.#db
      .insertInto('oidc_keys')
      .values({
        kid: key.kid,
        use: key.use,
        alg: key.alg,
        sealed: key.sealed,
        created_at: key.createdAt.toISOString(),
        signs_from_ms: key.signsFrom,
      })
      .onConflict((oc) => oc.column('kid').doNothing())
      .execute();
  }

  /** Every key, retired ones included, oldest first. */
  async list(): Promise<StoredKey[]> {
    const rows = await this.#db
      .selectFrom('oidc_keys')
      .selectAll()
      .orderBy('signs_from_ms')
      .orderBy('kid')
      .execute();
    return rows.map((row) => ({
      kid: row.kid,
      use: row.use as StoredKey['use'],
      alg: row.alg,
      sealed: row.sealed,
      createdAt: new Date(row.created_at),
      signsFrom: Number(row.signs_from_ms),
      retiredAt: row.retired_ms === null ? undefined : Number(row.retired_ms),
    }));
  }

  /** A cheap fingerprint of the key set, so instances notice a rotation without reading keys. */
  async version(): Promise<string> {
    const row = await this.#db
      .selectFrom('oidc_keys')
      .select(({ fn }) => [
        fn.countAll<number | string | bigint>().as('keys'),
        fn.count<number | string | bigint>('retired_ms').as('retired'),
      ])
      .executeTakeFirstOrThrow();
    return `${row.keys}/${row.retired}`;
  }

  async retire(kid: string, at: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('oidc_keys')
      .set({ retired_ms: at })
      .where('kid', '=', kid)
      .where('retired_ms', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
