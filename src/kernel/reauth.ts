// Re-authentication, shared by the features whose changes a session alone must not make (users,
// passkeys, TOTP, provider links). What it needs of the password and users features it declares
// here, and they meet it at composition: the kernel imports no feature.
import { Type } from 'typebox';
import type { Awaitable } from '../shared/awaitable.ts';
import { AppError, HashOverloadedError } from '../shared/errors.ts';
import { invalid } from '../shared/text.ts';

/**
 * A sign-in this recent counts as re-authentication: a passkey outlives sessions and password
 * resets, and deleting an account cannot be undone, so a borrowed device or a stolen, older token
 * must not be enough for either.
 */
export const FRESH_SIGNIN_MS = 10 * 60 * 1000;

/** Whether a sign-in at `signedInAt` is recent enough (FRESH_SIGNIN_MS) to stand for re-authentication. */
export const signedInRecently = (signedInAt: Date, now: number): boolean =>
  now - signedInAt.getTime() <= FRESH_SIGNIN_MS;

/**
 * The sign-in throttle as re-authentication uses it, keyed on the account's key (`accountKey`).
 * Met by signin/throttle.ts's SigninThrottle.
 */
export interface PasswordAttempts {
  begin(
    accountKey: string,
    address: string,
  ): Promise<
    | {
        allowed: true;
        attempt: { failed(): Promise<void>; succeeded(): Promise<void>; abandoned(): Promise<void> };
      }
    | { allowed: false; retryAfterSeconds: number }
  >;
}

/**
 * The password check as re-authentication uses it; passwords/service.ts's PasswordService meets
 * it. `Proof` is what a right password resolves, and what a change made on its strength is fenced by.
 */
export interface PasswordCheck<Proof> {
  verify(
    userId: bigint,
    password: string,
  ): Promise<{ result: 'right'; proof: Proof } | { result: 'wrong' | 'none' }>;
}

/** The account whose present password is checked. */
export interface ReauthAccount {
  readonly id: bigint;
  readonly email: string;
}

/** What re-authentication needs: the sign-in throttle and the password check. */
export interface PresentPasswordDeps<Proof> {
  attempts: PasswordAttempts;
  passwords: PasswordCheck<Proof>;
  /** The account's key in the sign-in throttle from its email (users/user.ts's emailKey). */
  accountKey: (email: string) => string;
}

/**
 * Checks the present password the way a sign-in would: through that account's sign-in throttle
 * (keyed on its email and the client's address), so guessing it here costs what guessing at
 * /api/signin does, and a wrong one counts there too. A missing one is not an attempt. An account
 * without a password has no present password: any is answered as a wrong one, counted alike.
 * Failures name `field`, the body field the password came in. Resolves the proof a change made
 * on its strength is fenced by.
 */
export async function confirmPresentPassword<Proof>(
  deps: PresentPasswordDeps<Proof>,
  user: ReauthAccount,
  password: string | undefined,
  address: string,
  field: string,
  missing: string,
): Promise<Proof> {
  if (password === undefined) throw invalid(field, missing);
  const verdict = await deps.attempts.begin(deps.accountKey(user.email), address);
  if (!verdict.allowed) {
    throw new AppError(
      'SIGNIN_FAILED',
      `${field}: too many wrong passwords for this account; try again later`,
      429,
      { 'retry-after': String(verdict.retryAfterSeconds) },
    );
  }
  let checked: Awaited<ReturnType<PasswordCheck<Proof>['verify']>>;
  try {
    checked = await deps.passwords.verify(user.id, password);
  } catch (error) {
    // Too busy to hash: never judged, so not held against the account.
    if (error instanceof HashOverloadedError) await verdict.attempt.abandoned();
    throw error;
  }
  if (checked.result !== 'right') {
    await verdict.attempt.failed();
    throw invalid(field, 'is not your present password');
  }
  await verdict.attempt.succeeded();
  return checked.proof;
}

/** The accounts as re-authentication reads them; users/repository.ts's UsersRepository meets it. */
export interface ReauthAccounts {
  findById(id: bigint): Awaitable<ReauthAccount | undefined>;
}

/**
 * Re-authentication for an action a session alone must not do (ASVS V7.5.1): removing a passkey,
 * deleting the account. Either the session's sign-in is at most FRESH_SIGNIN_MS old, or the
 * request carries the present password in `currentPassword`, checked through the account's
 * sign-in throttle like PUT /api/users/{id}'s. A password that is sent is always checked, even on
 * a fresh session: a wrong one is never let through.
 */
export class Reauthentication {
  readonly #users: ReauthAccounts;
  readonly #deps: PresentPasswordDeps<unknown>;
  readonly #now: () => number;

  constructor(
    deps: {
      users: ReauthAccounts;
      now: () => number;
    } & PresentPasswordDeps<unknown>,
  ) {
    this.#users = deps.users;
    this.#deps = { attempts: deps.attempts, passwords: deps.passwords, accountKey: deps.accountKey };
    this.#now = deps.now;
  }

  /**
   * Returns when `actor` may go on with `action` ("Removing a passkey"); otherwise throws 403
   * FORBIDDEN (an old sign-in and no password), 400 `currentPassword: …` (a wrong one) or 429
   * SIGNIN_FAILED (the throttle holds the account).
   */
  async confirm(
    actor: { userId: bigint; createdAt: Date },
    currentPassword: string | undefined,
    address: string,
    action: string,
  ): Promise<void> {
    if (currentPassword === undefined) {
      if (signedInRecently(actor.createdAt, this.#now())) return;
      throw new AppError(
        'FORBIDDEN',
        `${action} needs a recent sign-in: send your present password as currentPassword, or sign in again and retry within 10 minutes.`,
      );
    }
    const current = await this.#users.findById(actor.userId);
    if (!current) throw new AppError('UNAUTHENTICATED', 'The session has ended; sign in again.');
    await confirmPresentPassword(
      this.#deps,
      current,
      currentPassword,
      address,
      'currentPassword',
      'is required',
    );
  }
}

/** The body of a route that needs re-authentication: optional, and so is its one field. */
export const ReauthBody = Type.Object(
  {
    currentPassword: Type.Optional(
      Type.String({
        // Not limited here: a wrong one of any length is the same refusal (and counts in the throttle).
        description:
          'Your present password: needed when your sign-in is more than 10 minutes old; a wrong one counts in the sign-in throttle.',
        writeOnly: true,
      }),
    ),
  },
  { additionalProperties: false },
);
