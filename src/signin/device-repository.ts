import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';

/** A device to remember for an account, as a successful sign-in stores it. */
export interface RememberedDevice {
  tokenDigest: string;
  accountDigest: string;
  now: number;
  expiresAt: number;
}

/** A known device's wrong TOTP codes (totp/service.ts counts them), as the account's are counted. */
export interface DeviceCodeFailures {
  failures: number;
  /** Epoch ms of the last wrong code, or null. */
  failuresAt: number | null;
  /** Epoch ms before which no code is checked from the device, or null. */
  lockedUntil: number | null;
}

const asEpoch = (value: bigint | number | string | null) => (value === null ? null : Number(value));

/**
 * The clients that signed in to an account before (OWASP device cookies), by token digest. The
 * only SQL on signin_devices but the sign-in grant's (grant-repository.ts): the users and TOTP
 * features keep devices in step with accounts and count wrong codes through it.
 */
export class SigninDevicesRepository {
  readonly #db: Kysely<Tables>;
  readonly #rowLocks: boolean;
  /** `rowLocks`: PostgreSQL's SELECT … FOR UPDATE of a code gate; SQLite's one writer at a time needs none. */
  constructor(db: Kysely<Tables>, options: { rowLocks: boolean }) {
    this.#db = db;
    this.#rowLocks = options.rowLocks;
  }

  async isKnown(tokenDigest: string, accountDigest: string, now: number): Promise<boolean> {
    const row = await this.#db
      .selectFrom('signin_devices')
      .select('known_until')
      .where('token_digest', '=', tokenDigest)
      .where('account_digest', '=', accountDigest)
      .where('known_until', '>', BigInt(now))
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Adds the device to the account, or renews it: its lifetime counts from its last sign-in. */
  async remember({ tokenDigest, accountDigest, now, expiresAt }: RememberedDevice): Promise<void> {
    await this.#db
      .insertInto('signin_devices')
      .values({
        token_digest: tokenDigest,
        account_digest: accountDigest,
        remembered_at: now,
        known_until: expiresAt,
      })
      .onConflict((oc) =>
        oc.columns(['token_digest', 'account_digest']).doUpdateSet({ known_until: expiresAt }),
      )
      .execute();
  }

  async deleteExpired(now: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('signin_devices')
      .where('known_until', '<=', BigInt(now))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * Forgets every device of these accounts (by the digest of their email keys): a new holder of
   * an address starts with none (users/repository.ts, in the transaction that gives it the address).
   */
  async forgetAccounts(accountDigests: readonly string[]): Promise<void> {
    if (accountDigests.length === 0) return;
    const [one] = accountDigests;
    await (accountDigests.length === 1 && one !== undefined
      ? this.#db.deleteFrom('signin_devices').where('account_digest', '=', one)
      : this.#db.deleteFrom('signin_devices').where('account_digest', 'in', accountDigests)
    ).execute();
  }

  /** Moves the devices of one account digest to another (an account's email key changed). */
  async moveAccount(fromDigest: string, toDigest: string): Promise<void> {
    await this.#db
      .updateTable('signin_devices')
      .set({ account_digest: toDigest })
      .where('account_digest', '=', fromDigest)
      .execute();
  }

  /**
   * The device's wrong codes, row-locked on PostgreSQL for the caller's transaction (the TOTP
   * code gate, totp/service.ts); undefined when the account does not know the device.
   */
  async readCodeFailures(
    tokenDigest: string,
    accountDigest: string,
  ): Promise<DeviceCodeFailures | undefined> {
    let query = this.#db
      .selectFrom('signin_devices')
      .select(['code_failures', 'code_failures_at', 'codes_locked_until'])
      .where('token_digest', '=', tokenDigest)
      .where('account_digest', '=', accountDigest);
    if (this.#rowLocks) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return (
      row && {
        failures: Number(row.code_failures),
        failuresAt: asEpoch(row.code_failures_at),
        lockedUntil: asEpoch(row.codes_locked_until),
      }
    );
  }

  async writeCodeFailures(
    tokenDigest: string,
    accountDigest: string,
    state: DeviceCodeFailures,
  ): Promise<void> {
    await this.#db
      .updateTable('signin_devices')
      .set({
        code_failures: state.failures,
        code_failures_at: state.failuresAt,
        codes_locked_until: state.lockedUntil,
      })
      .where('token_digest', '=', tokenDigest)
      .where('account_digest', '=', accountDigest)
      .execute();
  }
}
