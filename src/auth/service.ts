import { PASSWORD_INPUT_MAX, type PasswordHasher } from '../passwords/index.ts';
import { HashOverloadedError } from '../shared/errors.ts';
import type { SigninClient, SigninCore, SigninOutcome } from '../signin/core.ts';
import { EMAIL_MAX, emailKey } from '../users/index.ts';
import type { UsersRepository } from '../users/repository.ts';
import type { SignerRepository } from './signer-repository.ts';

export interface PasswordSigninRequest {
  email: string;
  password: string;
  /** A TOTP code or a recovery code, for accounts with TOTP in force. */
  code?: string | undefined;
}

/** No account can have this email or password: registration refuses them. */
function impossibleCredentials(email: string, key: string, password: string): boolean {
  return (
    password.length > PASSWORD_INPUT_MAX ||
    email.length > EMAIL_MAX * 4 ||
    [...key].length > EMAIL_MAX ||
    // PostgreSQL cannot even compare text holding U+0000, and registration refuses it.
    key.includes('\u0000')
  );
}

export interface AuthServiceDeps {
  core: SigninCore;
  users: Pick<UsersRepository, 'replacePasswordHash'>;
  signers: SignerRepository;
  hasher: PasswordHasher;
}

/**
 * Password sign-in, as a method of the sign-in core (signin/core.ts): it proves who is there
 * with an email and a password, and the core does the rest. Its throttle is the account's: its
 * failures are guesses at one account's password.
 */
export class AuthService {
  readonly #d: AuthServiceDeps;
  constructor(deps: AuthServiceDeps) {
    this.#d = deps;
  }

  /**
   * Cheap checks first: credentials no account can have fail at once, touching neither the store
   * nor the hasher (their timing tells nothing: no account has them). An unknown email costs one
   * dummy hash, the same work as a wrong password, so neither the answer nor its timing tells
   * whether the account exists. The session is fenced by the hash that was verified.
   */
  async signIn(
    { email, password, code }: PasswordSigninRequest,
    client: SigninClient,
  ): Promise<SigninOutcome> {
    const key = email.length > EMAIL_MAX * 4 ? '' : emailKey(email);
    if (impossibleCredentials(email, key, password))
      return { ok: false, reason: 'credentials', userId: undefined };
    return this.#d.core.run(
      {
        name: 'password',
        throttle: { account: key },
        prove: async () => {
          const found = key === '' ? undefined : await this.#d.signers.findSigner(key);
          const hash = found?.passwordHash;
          // An account without a password costs the dummy hash too: refused exactly like a wrong one.
          const verified =
            hash !== undefined
              ? await this.#d.hasher.verify(password, hash)
              : await this.#d.hasher.verifyDummy(password);
          if (!found || hash === undefined || !verified) return { ok: false, userId: found?.user.id };
          return {
            ok: true,
            user: found.user,
            // The factor was read with the hash, for any account, so the read's timing tells nothing.
            secondFactor: { by: 'code', code, totp: found.totp },
            fence: { passwordHash: hash },
            granted: this.#d.hasher.needsRehash(hash)
              ? () => this.#rehash(found.user.id, hash, password)
              : undefined,
          };
        },
      },
      client,
    );
  }

  /** Upgrades a hash made with old parameters; when the hasher is too busy, the next sign-in will. */
  async #rehash(userId: bigint, current: string, password: string): Promise<void> {
    try {
      await this.#d.users.replacePasswordHash(userId, current, await this.#d.hasher.hash(password));
    } catch (error) {
      if (!(error instanceof HashOverloadedError)) throw error;
    }
  }
}
