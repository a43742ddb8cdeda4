import type { UsersRepository } from '../users/repository.ts';
import { emailKey, type User } from '../users/user.ts';
import type { PasswordHasher } from './passwords.ts';
import type { SigninThrottle } from './throttle.ts';

export type SigninOutcome =
  | { ok: true; user: User }
  | { ok: false; reason: 'credentials'; userId: bigint | undefined }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

export class AuthService {
  readonly #users: UsersRepository;
  readonly #hasher: PasswordHasher;
  readonly #throttle: SigninThrottle;

  constructor(users: UsersRepository, hasher: PasswordHasher, throttle: SigninThrottle) {
    this.#users = users;
    this.#hasher = hasher;
    this.#throttle = throttle;
  }

  /**
   * Checks an email and password from a client address. Throttled attempts are refused before any
   * hashing, the right password included. An unknown email costs one dummy hash, the same work as
   * a wrong password, so neither the answer nor its timing tells whether the account exists.
   */
  async signIn(email: string, password: string, address: string): Promise<SigninOutcome> {
    // No registered email holds U+0000 (registration refuses it), and PostgreSQL cannot even
    // compare it: such an email is an unknown account, counted under a storable key.
    const unstorable = email.includes('\u0000');
    const key = unstorable ? emailKey(email).replaceAll('\u0000', '\ufffd') : emailKey(email);
    const verdict = await this.#throttle.check(key, address);
    if (!verdict.allowed)
      return { ok: false, reason: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds };

    const found = key === '' || unstorable ? undefined : await this.#users.findCredentials(key);
    const verified = found
      ? await this.#hasher.verify(password, found.passwordHash)
      : await this.#hasher.verifyDummy(password);
    if (!found || !verified) {
      await this.#throttle.recordFailure(key, address);
      return { ok: false, reason: 'credentials', userId: found?.user.id };
    }
    await this.#throttle.recordSuccess(key, address);
    if (this.#hasher.needsRehash(found.passwordHash)) {
      const upgraded = await this.#hasher.hash(password);
      await this.#users.replacePasswordHash(found.user.id, found.passwordHash, upgraded);
    }
    return { ok: true, user: found.user };
  }
}
