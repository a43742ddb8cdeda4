import { HashOverloadedError, PASSWORD_INPUT_MAX, type PasswordHasher } from '../passwords/hasher.ts';
import { AppError } from '../shared/errors.ts';
import { invalid } from '../shared/text.ts';
import type { Credentials } from './repository.ts';
import { emailKey } from './user.ts';

/**
 * The sign-in throttle as re-authentication uses it. Declared here, and met by auth/throttle.ts's
 * SigninThrottle, so users/ does not depend on auth/ (which depends on users/).
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
 * Checks the present password the way a sign-in would: through that account's sign-in throttle
 * (keyed on its email and the client's address), so guessing it here costs what guessing at
 * /api/signin does, and a wrong one counts there too. A missing one is not an attempt. Failures
 * name `field`, the body field the password came in.
 */
export async function confirmPresentPassword(
  deps: { attempts: PasswordAttempts; hasher: PasswordHasher },
  current: Credentials,
  password: string | undefined,
  address: string,
  field: string,
  missing: string,
): Promise<void> {
  if (password === undefined) throw invalid(field, missing);
  const verdict = await deps.attempts.begin(emailKey(current.user.email), address);
  if (!verdict.allowed) {
    throw new AppError(
      'SIGNIN_FAILED',
      `${field}: too many wrong passwords for this account; try again later`,
      429,
      { 'retry-after': String(verdict.retryAfterSeconds) },
    );
  }
  let right: boolean;
  try {
    // Longer than any password can be: wrong without hashing it (NFKC could grow it 18-fold).
    right =
      password.length <= PASSWORD_INPUT_MAX && (await deps.hasher.verify(password, current.passwordHash));
  } catch (error) {
    // Too busy to hash: never judged, so not held against the account.
    if (error instanceof HashOverloadedError) await verdict.attempt.abandoned();
    throw error;
  }
  if (!right) {
    await verdict.attempt.failed();
    throw invalid(field, 'is not your present password');
  }
  await verdict.attempt.succeeded();
}
