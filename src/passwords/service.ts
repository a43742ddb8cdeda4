// The password as one sign-in method among others (issue 26): an account may have none. Only this
// service and sign-in (auth/) read hashes; everything else asks it whether a password is right,
// and hands it new passwords to store.
import { invalid } from '../shared/text.ts';
import { PASSWORD_INPUT_MAX, type PasswordHasher } from './hasher.ts';
import { IMPORTED_MARK, parseImportedHash } from './imported.ts';
import type { PasswordCredentialsRepository } from './repository.ts';

/** What a password write in a caller's transaction needs. */
export interface PasswordRepositories {
  passwords: PasswordCredentialsRepository;
}

// The hashes behind the values below, which callers hold and pass back without seeing them.
const hashes = new WeakMap<PasswordProof | NewPassword, string>();

/**
 * A present password that was checked: a change made on its strength applies only while the
 * account still has the password that was checked (`stillHeld`, `change`).
 */
export interface PasswordProof {
  readonly userId: bigint;
}

declare const newPassword: unique symbol;
/** A new password, hashed ahead of the transaction that stores it (hashing is slow). */
export interface NewPassword {
  readonly [newPassword]: true;
}

/** `none`: the account has no password (it was answered with the same hashing work as `wrong`). */
export type PasswordVerdict = { result: 'right'; proof: PasswordProof } | { result: 'wrong' | 'none' };

export interface PasswordServiceDeps {
  credentials: PasswordCredentialsRepository;
  /** Hashes in the account lane: sign-in has its own hasher (auth/service.ts). */
  hasher: PasswordHasher;
  now: () => number;
}

export class PasswordService {
  readonly #d: PasswordServiceDeps;
  constructor(deps: PasswordServiceDeps) {
    this.#d = deps;
  }

  /** Whether the user has a password. */
  has(userId: bigint): Promise<boolean> {
    return this.#d.credentials.exists(userId);
  }

  /**
   * Checks a password the user types again. An account without a password costs a dummy verify,
   * the same work as a wrong password, so its answer takes as long. May throw HashOverloadedError.
   */
  async verify(userId: bigint, password: string): Promise<PasswordVerdict> {
    const hash = await this.#d.credentials.find(userId);
    // Longer than any password can be: wrong without hashing it (NFKC could grow it 18-fold).
    if (password.length > PASSWORD_INPUT_MAX) return { result: hash === undefined ? 'none' : 'wrong' };
    if (hash === undefined) {
      await this.#d.hasher.verifyDummy(password);
      return { result: 'none' };
    }
    if (!(await this.#d.hasher.verify(password, hash))) return { result: 'wrong' };
    const proof: PasswordProof = Object.freeze({ userId });
    hashes.set(proof, hash);
    return { result: 'right', proof };
  }

  /** Hashes a password (already checked against the rules, passwords/policy.ts) for `set` or `change`. */
  async prepare(password: string): Promise<NewPassword> {
    const hash = await this.#d.hasher.hash(password);
    const next = Object.freeze({}) as NewPassword;
    hashes.set(next, hash);
    return next;
  }

  /**
   * A hash another system made (a user moved in with their password: users import), taken as the
   * account's password if it is a format and within the bounds Usher verifies
   * (passwords/imported.ts); otherwise VALIDATION_FAILED naming `passwordHash`. Stored marked as
   * imported, it is re-hashed as argon2id at the first sign-in.
   */
  adopt(hash: string): NewPassword {
    const parsed = parseImportedHash(hash);
    if (!parsed.ok) throw invalid('passwordHash', parsed.reason);
    const next = Object.freeze({}) as NewPassword;
    hashes.set(next, IMPORTED_MARK + hash);
    return next;
  }

  /** New accounts' passwords, many in one statement (a bulk import), in the caller's transaction. */
  async setMany(
    repos: PasswordRepositories,
    entries: readonly { userId: bigint; next: NewPassword }[],
  ): Promise<void> {
    await repos.passwords.insertMany(
      entries.map(({ userId, next }) => ({ userId, hash: hashOf(next) })),
      new Date(this.#d.now()),
    );
  }

  /** Sets the user's password, in the caller's transaction, whether or not they had one. */
  async set(repos: PasswordRepositories, userId: bigint, next: NewPassword): Promise<void> {
    await repos.passwords.set(userId, hashOf(next), new Date(this.#d.now()));
  }

  /**
   * Replaces the password `proof` checked, only if it is still the user's (a concurrent change
   * wins); false, nothing written, when it is not.
   */
  change(repos: PasswordRepositories, proof: PasswordProof, next: NewPassword): Promise<boolean> {
    return repos.passwords.replace(proof.userId, hashOf(proof), hashOf(next), new Date(this.#d.now()));
  }

  /**
   * Whether the password `proof` checked is still the user's; on PostgreSQL its row stays
   * share-locked to the end of the caller's transaction, so a password change waits for it.
   */
  stillHeld(repos: PasswordRepositories, proof: PasswordProof): Promise<boolean> {
    return repos.passwords.holds(proof.userId, hashOf(proof));
  }
}

function hashOf(value: PasswordProof | NewPassword): string {
  const hash = hashes.get(value);
  if (hash === undefined) throw new TypeError('not a value the password service made');
  return hash;
}
