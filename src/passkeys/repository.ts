import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../db/errors.ts';
import type { ChallengePurpose, Tables } from '../db/schema.ts';

/** A passkey as its owner sees it. */
export interface PasskeyView {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** What verifying an assertion needs of a stored passkey. */
export interface StoredPasskey {
  id: string;
  credentialId: string;
  userId: bigint;
  publicKey: Uint8Array<ArrayBuffer>;
  counter: number;
  transports: string[];
}

export interface NewPasskey {
  id: string;
  credentialId: string;
  userId: bigint;
  name: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  createdAt: Date;
}

/** The credential id is already registered (to this user or another). */
export class CredentialTakenError extends Error {
  constructor() {
    super('credential already registered');
  }
}

function parseTransports(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}

export class PasskeysRepository {
  readonly #db: Kysely<Tables>;
  readonly #rowLocks: boolean;
  /** `rowLocks`: PostgreSQL's row locks for countHeld; SQLite's one writer at a time needs none. */
  constructor(db: Kysely<Tables>, options: { rowLocks: boolean }) {
    this.#db = db;
    this.#rowLocks = options.rowLocks;
  }

  async saveChallenge(
    challenge: string,
    purpose: ChallengePurpose,
    userId: bigint | null,
    expiresAt: number,
  ) {
    await this.#db
      .insertInto('webauthn_challenges')
      .values({ challenge, purpose, user_id: userId, expires_at: expiresAt })
      .execute();
  }

  /**
   * Spends a challenge: deleted and returned in one statement, so of two simultaneous uses (on
   * any instances) exactly one gets it. Expired ones are not returned (housekeeping removes them).
   * A registration challenge is only good for the user it was issued to.
   */
  async consumeChallenge(
    challenge: string,
    purpose: ChallengePurpose,
    userId: bigint | null,
    now: number,
  ): Promise<boolean> {
    let query = this.#db
      .deleteFrom('webauthn_challenges')
      .where('challenge', '=', challenge)
      .where('purpose', '=', purpose)
      .where('expires_at', '>', BigInt(now));
    query = userId === null ? query.where('user_id', 'is', null) : query.where('user_id', '=', userId);
    const rows = await query.returning('challenge').execute();
    return rows.length === 1;
  }

  async deleteExpiredChallenges(now: number): Promise<void> {
    await this.#db.deleteFrom('webauthn_challenges').where('expires_at', '<=', BigInt(now)).execute();
  }

  async insert(passkey: NewPasskey): Promise<void> {
    try {
      await this.#db
        .insertInto('passkeys')
        .values({
          id: passkey.id,
          credential_id: passkey.credentialId,
          user_id: passkey.userId,
          name: passkey.name,
          public_key: Buffer.from(passkey.publicKey).toString('base64url'),
          counter: passkey.counter,
          transports: JSON.stringify(passkey.transports),
          created_at: passkey.createdAt.toISOString(),
          last_used_at: null,
        })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) throw new CredentialTakenError();
      throw error;
    }
  }

  /** A user's credential ids, to exclude from a new registration. */
  async credentialsOf(userId: bigint): Promise<{ id: string; transports: string[] }[]> {
    const rows = await this.#db
      .selectFrom('passkeys')
      .select(['credential_id', 'transports'])
      .where('user_id', '=', userId)
      .execute();
    return rows.map((r) => ({ id: r.credential_id, transports: parseTransports(r.transports) }));
  }

  /** How many passkeys the user has. */
  async count(userId: bigint): Promise<number> {
    const row = await this.#db
      .selectFrom('passkeys')
      .select(({ fn }) => fn.countAll<number | string | bigint>().as('passkeys'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    return Number(row.passkeys);
  }

  /**
   * How many passkeys the user has, each share-locked (PostgreSQL) until the transaction ends: a
   * passkey removed at the same moment is either counted gone or waits for this commit.
   */
  async countHeld(userId: bigint): Promise<number> {
    const query = this.#db.selectFrom('passkeys').select('id').where('user_id', '=', userId);
    return (await (this.#rowLocks ? query.forShare() : query).execute()).length;
  }

  async list(userId: bigint, limit: number): Promise<PasskeyView[]> {
    const rows = await this.#db
      .selectFrom('passkeys')
      .select(['id', 'name', 'created_at', 'last_used_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at, lastUsedAt: r.last_used_at }));
  }

  async findByCredentialId(credentialId: string): Promise<StoredPasskey | undefined> {
    const row = await this.#db
      .selectFrom('passkeys')
      .select(['id', 'credential_id', 'user_id', 'public_key', 'counter', 'transports'])
      .where('credential_id', '=', credentialId)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        credentialId: row.credential_id,
        userId: row.user_id,
        publicKey: new Uint8Array(Buffer.from(row.public_key, 'base64url')),
        counter: Number(row.counter),
        transports: parseTransports(row.transports),
      }
    );
  }

  /**
   * Records a use, only if the counter is still the one the assertion was checked against: two
   * simultaneous sign-ins with one assertion (or a cloned authenticator racing the real one)
   * cannot both pass.
   */
  async recordUse(id: string, expectedCounter: number, newCounter: number, at: Date): Promise<boolean> {
    const result = await this.#db
      .updateTable('passkeys')
      .set({ counter: newCounter, last_used_at: at.toISOString() })
      .where('id', '=', id)
      .where('counter', '=', BigInt(expectedCounter))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Deletes one of the user's passkeys; answers its name, for the notice (undefined: none such). */
  async delete(userId: bigint, id: string): Promise<string | undefined> {
    const row = await this.#db
      .deleteFrom('passkeys')
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .returning('name')
      .executeTakeFirst();
    return row?.name;
  }

  /** Deletes every passkey of the user (support removing lost factors); answers how many. */
  async deleteAll(userId: bigint): Promise<number> {
    const rows = await this.#db
      .deleteFrom('passkeys')
      .where('user_id', '=', userId)
      .returning('id')
      .execute();
    return rows.length;
  }
}
