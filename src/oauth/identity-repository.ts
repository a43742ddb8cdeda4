import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { Tables } from '../db/schema.ts';

/** The key an identity is known by: never its email. */
export interface IdentityKey {
  provider: string;
  issuer: string;
  subject: string;
}

export interface Identity {
  id: string;
  userId: bigint;
  provider: string;
  email: string;
  createdAt: Date;
  /** See IdentitiesTable.proven (tables.ts). */
  proven: boolean;
}

/** The identity's key is linked already (to this account or another): the unique index decided. */
export class IdentityTakenError extends Error {
  constructor() {
    super('identity taken');
    this.name = 'IdentityTakenError';
  }
}

const COLUMNS = ['id', 'user_id', 'provider', 'email', 'created_at', 'proven'] as const;

export class IdentitiesRepository {
  readonly #db: Kysely<Tables>;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  async find(key: IdentityKey): Promise<Identity | undefined> {
    const row = await this.#db
      .selectFrom('identities')
      .select(COLUMNS)
      .where('provider', '=', key.provider)
      .where('issuer', '=', key.issuer)
      .where('subject', '=', key.subject)
      .executeTakeFirst();
    return row && toIdentity(row);
  }

  /** Links the identity; IdentityTakenError when its key is linked already (race-safe). */
  async insert(
    identity: IdentityKey & { id: string; userId: bigint; email: string; proven: boolean; now: Date },
  ): Promise<Identity> {
    try {
      const row = await this.#db
        .insertInto('identities')
        .values({
          id: identity.id,
          user_id: identity.userId,
          provider: identity.provider,
          issuer: identity.issuer,
          subject: identity.subject,
          email: identity.email,
          proven: identity.proven ? 1 : 0,
          created_at: identity.now.toISOString(),
        })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow();
      return toIdentity(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new IdentityTakenError();
      throw error;
    }
  }

  /** The email the provider gives now, shown on the account page. */
  async updateEmail(id: string, email: string): Promise<void> {
    await this.#db
      .updateTable('identities')
      .set({ email })
      .where('id', '=', id)
      .where('email', '<>', email)
      .execute();
  }

  async list(userId: bigint): Promise<Identity[]> {
    const rows = await this.#db
      .selectFrom('identities')
      .select(COLUMNS)
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toIdentity);
  }

  /**
   * How many of the account's identities but `exceptId` can sign in: those of `providers`, the
   * ones configured now (an identity of a provider no longer configured cannot).
   */
  async countOthers(userId: bigint, exceptId: string, providers: readonly string[]): Promise<number> {
    if (providers.length === 0) return 0;
    const row = await this.#db
      .selectFrom('identities')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('user_id', '=', userId)
      .where('id', '<>', exceptId)
      .where('provider', 'in', providers)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Unlinks one of the user's identities; undefined when the user has none with that id. */
  async delete(userId: bigint, id: string): Promise<Identity | undefined> {
    const row = await this.#db
      .deleteFrom('identities')
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .returning(COLUMNS)
      .executeTakeFirst();
    return row && toIdentity(row);
  }

  /**
   * Removes the account's unproven identities; those it removed (their id and provider). Called by
   * users/email-proven.ts's rule whenever the account's email is proven.
   */
  async deleteUnproven(userId: bigint): Promise<{ id: string; provider: string }[]> {
    return this.#db
      .deleteFrom('identities')
      .where('user_id', '=', userId)
      .where('proven', '=', 0)
      .returning(['id', 'provider'])
      .execute();
  }
}

function toIdentity(row: {
  id: string;
  user_id: bigint;
  provider: string;
  email: string;
  created_at: Date;
  proven: number | bigint;
}): Identity {
  return {
    id: row.id,
    userId: BigInt(row.user_id),
    provider: row.provider,
    email: row.email,
    createdAt: row.created_at,
    proven: Number(row.proven) === 1,
  };
}
