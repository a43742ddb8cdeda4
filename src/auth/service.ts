import type { UsersRepository } from '../users/repository.ts';
import { emailKey, type User } from '../users/user.ts';
import type { PasswordHasher } from './passwords.ts';

export type SigninOutcome = { ok: true; user: User } | { ok: false; userId: bigint | undefined };

export class AuthService {
  readonly #users: UsersRepository;
  readonly #hasher: PasswordHasher;

  constructor(users: UsersRepository, hasher: PasswordHasher) {
    this.#users = users;
    this.#hasher = hasher;
  }

  /**
   * Checks an email and password. An unknown email costs one dummy hash, the same work as a wrong
   * password, so neither the answer nor its timing tells whether the account exists.
   */
  async signIn(email: string, password: string): Promise<SigninOutcome> {
    const found = email === '' ? undefined : await this.#users.findCredentials(emailKey(email));
    if (!found) {
      await this.#hasher.verifyDummy(password);
      return { ok: false, userId: undefined };
    }
    if (!(await this.#hasher.verify(password, found.passwordHash))) {
      return { ok: false, userId: found.user.id };
    }
    if (this.#hasher.needsRehash(found.passwordHash)) {
      const upgraded = await this.#hasher.hash(password);
      await this.#users.replacePasswordHash(found.user.id, found.passwordHash, upgraded);
    }
    return { ok: true, user: found.user };
  }
}
