import type { Kysely } from 'kysely';
import { positionsOf, runPrepared, type SlottedQuery, slotted } from '../db/prepared.ts';
import type { Tables } from '../db/schema.ts';
import { type TotpFactor, toTotpFactor } from '../totp/index.ts';
import { USER_COLUMNS, userOfTuple } from '../users/index.ts';
import type { User } from '../users/user.ts';

/** The account an email names, as a password sign-in needs it: one read. */
export interface Signer {
  user: User;
  /** Undefined for an account without a password. */
  passwordHash: string | undefined;
  /** The account's TOTP factor, in force or pending; undefined without one. */
  totp: TotpFactor | undefined;
}

/**
 * The one read of a password sign-in: the account an email names, its password hash and its TOTP
 * factor in one round trip (a sign-in's database work runs on the same cores as its hash).
 */
export class SignerRepository {
  readonly #db: Kysely<Tables>;
  // Built once, named (db/prepared.ts): every password sign-in runs it.
  #signer: SlottedQuery<'emailKey'> | undefined;
  constructor(db: Kysely<Tables>) {
    this.#db = db;
  }

  /** The user with this email key, their hash and their TOTP factor. */
  async findSigner(emailKey: string): Promise<Signer | undefined> {
    this.#signer ??= slotted(['emailKey'], (s) =>
      this.#db
        .selectFrom('users')
        .leftJoin('password_credentials', 'password_credentials.user_id', 'users.id')
        .leftJoin('totp_factors', 'totp_factors.user_id', 'users.id')
        .select([...USER_COLUMNS.map((column) => `users.${column}` as const), ...SIGNER_COLUMNS])
        .where('users.email_key', '=', s.emailKey),
    );
    const rows = await runPrepared(this.#db, this.#signer.query, this.#signer.parameters({ emailKey }));
    const row = rows[0];
    if (!row) return undefined;
    // The user's columns come first, then SIGNER_COLUMNS, each at its position there.
    const at = (column: keyof typeof SIGNER_AT) => row[USER_COLUMNS.length + SIGNER_AT[column]];
    const totpUserId = at('totp_user_id') as bigint | null;
    const sealed = at('secret_sealed') as string | null;
    return {
      user: userOfTuple(row),
      passwordHash: (at('password_hash') as string | null) ?? undefined,
      totp:
        totpUserId === null || sealed === null
          ? undefined
          : toTotpFactor({
              user_id: totpUserId,
              secret_sealed: sealed,
              confirmed_at: at('confirmed_at') as Date | null,
              last_step: at('last_step') as bigint | number | null,
            }),
    };
  }
}

/** findSigner's columns after the user's; its reader takes each at its position here. */
const SIGNER_COLUMNS = [
  'password_credentials.hash as password_hash',
  'totp_factors.user_id as totp_user_id',
  'totp_factors.secret_sealed',
  'totp_factors.confirmed_at',
  'totp_factors.last_step',
] as const;
const SIGNER_AT = positionsOf(SIGNER_COLUMNS);
