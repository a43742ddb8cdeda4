import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

export interface TotpFactor {
  userId: bigint;
  sealedSecret: string;
  confirmed: boolean;
  lastStep: bigint | null;
}

/** A totp_factors row's columns, as read. */
export interface TotpFactorRow {
  user_id: bigint;
  secret_sealed: string;
  confirmed_at: Date | null;
  last_step: bigint | number | string | null;
}

export function toTotpFactor(row: TotpFactorRow): TotpFactor {
  return {
    userId: row.user_id,
    sealedSecret: row.secret_sealed,
    confirmed: row.confirmed_at !== null,
    lastStep: row.last_step === null ? null : BigInt(row.last_step),
  };
}

/** Whose wrong codes a code check counts in: the account's, or a known device's of that account. */
export type CodeGate =
  | { kind: 'account'; userId: bigint }
  | { kind: 'device'; tokenDigest: string; accountDigest: string };

/** Wrong codes as stored, and the time before which no code is checked (epoch ms, or null). */
export interface GateState {
  failures: number;
  failuresAt: number | null;
  lockedUntil: number | null;
}

const asEpoch = (value: bigint | number | string | null) => (value === null ? null : Number(value));
const gateState = (
  failures: number | bigint | string,
  failuresAt: bigint | number | string | null,
  lockedUntil: bigint | number | string | null,
): GateState => ({
  failures: Number(failures),
  failuresAt: asEpoch(failuresAt),
  lockedUntil: asEpoch(lockedUntil),
});

export class TotpRepository {
  readonly #db: Kysely<Tables>;
  readonly #rowLocks: boolean;
  /** `rowLocks`: PostgreSQL's SELECT … FOR UPDATE; SQLite's one writer at a time needs none. */
  constructor(db: Kysely<Tables>, options: { rowLocks: boolean } = { rowLocks: false }) {
    this.#db = db;
    this.#rowLocks = options.rowLocks;
  }

  async find(userId: bigint): Promise<TotpFactor | undefined> {
    const row = await this.#db
      .selectFrom('totp_factors')
      .select(['user_id', 'secret_sealed', 'confirmed_at', 'last_step'])
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row && toTotpFactor(row);
  }

  /** A new pending set-up, replacing a pending one; never one in force. False when one is in force. */
  async savePending(userId: bigint, sealedSecret: string, now: Date): Promise<boolean> {
    const result = await this.#db
      .insertInto('totp_factors')
      .values({ user_id: userId, secret_sealed: sealedSecret, created_at: now.toISOString() })
      .onConflict((oc) =>
        oc
          .column('user_id')
          .doUpdateSet({ secret_sealed: sealedSecret, created_at: now.toISOString(), last_step: null })
          .where('totp_factors.confirmed_at', 'is', null),
      )
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  /** Puts the pending set-up with this very secret in force, its confirming code's step used up. */
  async confirm(userId: bigint, sealedSecret: string, step: number, now: Date): Promise<boolean> {
    const result = await this.#db
      .updateTable('totp_factors')
      .set({ confirmed_at: now.toISOString(), last_step: step })
      .where('user_id', '=', userId)
      .where('secret_sealed', '=', sealedSecret)
      .where('confirmed_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Uses up time step `step` for the user's factor in force: false when that step or a later one
   * was already used. One conditional update, so two instances cannot both accept a code.
   */
  async useStep(userId: bigint, step: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('totp_factors')
      .set({ last_step: step })
      .where('user_id', '=', userId)
      .where('confirmed_at', 'is not', null)
      .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', BigInt(step))]))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * The account's code-guessing state, row-locked on PostgreSQL for the caller's transaction;
   * undefined when it has no factor. A known device's is signin/'s (SigninDevicesRepository).
   */
  async readGate(userId: bigint): Promise<GateState | undefined> {
    let query = this.#db
      .selectFrom('totp_factors')
      .select(['failures', 'failures_at', 'locked_until'])
      .where('user_id', '=', userId);
    if (this.#rowLocks) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row && gateState(row.failures, row.failures_at, row.locked_until);
  }

  async writeGate(userId: bigint, state: GateState): Promise<void> {
    await this.#db
      .updateTable('totp_factors')
      .set({ failures: state.failures, failures_at: state.failuresAt, locked_until: state.lockedUntil })
      .where('user_id', '=', userId)
      .execute();
  }

  /** A password reset (whoever guessed had the old password): the account's count starts again. */
  async clearFailures(userId: bigint): Promise<void> {
    await this.#db
      .updateTable('totp_factors')
      .set({ failures: 0, failures_at: null, locked_until: null })
      .where('user_id', '=', userId)
      .where('failures', '>', 0)
      .execute();
  }

  /** Whatever factor the user has, pending or in force, and their recovery codes. True when one was in force. */
  async remove(userId: bigint): Promise<boolean> {
    await this.#db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
    const removed = await this.#db
      .deleteFrom('totp_factors')
      .where('user_id', '=', userId)
      .returning('confirmed_at')
      .executeTakeFirst();
    return removed !== undefined && removed.confirmed_at !== null;
  }

  async replaceRecoveryCodes(userId: bigint, codeHashes: readonly string[]): Promise<void> {
    await this.#db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
    await this.#db
      .insertInto('recovery_codes')
      .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash })))
      .execute();
  }

  /** Deletes the code if the user has it: true exactly once per code, whoever asks at the same time. */
  async useRecoveryCode(userId: bigint, codeHash: string): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('recovery_codes')
      .where('user_id', '=', userId)
      .where('code_hash', '=', codeHash)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async recoveryCodesLeft(userId: bigint): Promise<number> {
    const row = await this.#db
      .selectFrom('recovery_codes')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
