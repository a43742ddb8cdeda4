import type { SigninFailuresRepository } from './throttle-repository.ts';

export interface ThrottlePolicy {
  windowMs: number;
  /** Failures for one account from one address. */
  perAccountAddress: number;
  /** Failures for one account from all addresses. */
  perAccount: number;
  /** Failures from one address across all accounts. */
  perAddress: number;
}

export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Sign-in throttling (CONTRACT "Sign-in throttling"): sliding windows over failures stored in the
 * shared database. The account key is the normalised email whether or not an account has it, so
 * a throttled answer is the same for real and unknown emails.
 */
export class SigninThrottle {
  readonly #failures: SigninFailuresRepository;
  readonly #policy: ThrottlePolicy;

  constructor(failures: SigninFailuresRepository, policy: ThrottlePolicy) {
    this.#failures = failures;
    this.#policy = policy;
  }

  async check(accountKey: string, address: string, now = Date.now()): Promise<ThrottleVerdict> {
    const since = now - this.#policy.windowMs;
    const scopes = [
      { scope: { accountKey, address }, limit: this.#policy.perAccountAddress },
      { scope: { accountKey }, limit: this.#policy.perAccount },
      { scope: { address }, limit: this.#policy.perAddress },
    ];
    const counts = await Promise.all(
      scopes.map(({ scope, limit }) => this.#failures.countSince(scope, since, limit)),
    );
    let freeAt = 0;
    for (const { limitthAt } of counts) {
      if (limitthAt !== undefined) freeAt = Math.max(freeAt, limitthAt + this.#policy.windowMs);
    }
    if (freeAt === 0) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((freeAt - now) / 1000)) };
  }

  recordFailure(accountKey: string, address: string, now = Date.now()): Promise<void> {
    return this.#failures.record(accountKey, address, now);
  }

  recordSuccess(accountKey: string, address: string): Promise<void> {
    return this.#failures.clear(accountKey, address);
  }

  /** Drops failures older than the window; run in the background, never by a request. */
  purgeExpired(now = Date.now()): Promise<number> {
    return this.#failures.deleteBefore(now - this.#policy.windowMs);
  }
}
