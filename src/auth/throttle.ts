import { createHash } from 'node:crypto';
import type {
  AttemptCounts,
  AttemptLimits,
  AttemptScope,
  SigninAttemptsRepository,
} from './throttle-repository.ts';

interface LimitsHit {
  over: Array<{ scope: AttemptScope; limit: number }>;
}

export interface ThrottlePolicy {
  windowMs: number;
  /** Failures for one account from one address. */
  perAccountAddress: number;
  /** Failures for one account from all addresses. */
  perAccount: number;
  /** Failures from one address across all accounts. */
  perAddress: number;
  /** Sign-ins for one account in flight (being hashed) at once, from anywhere. */
  concurrentPerAccount: number;
  /** Sign-ins from one address in flight at once, across accounts. */
  concurrentPerAddress: number;
}

/** An attempt that passed the throttle; exactly one of its methods is called when it is over. */
export interface Attempt {
  /** Wrong credentials: it stays counted. */
  failed(): Promise<void>;
  /** Right credentials: that account's count from that address starts again. */
  succeeded(): Promise<void>;
  /** Never judged (the server was too busy to hash): it is not counted. */
  abandoned(): Promise<void>;
  /**
   * The attempts `succeeded` clears. A success that writes a session clears them in the same
   * statement or transaction instead (SigninRepository.grantSession), in place of `succeeded`.
   */
  readonly forgiveness: { accountDigest: string; address: string };
}

export type ThrottleVerdict =
  | { allowed: true; attempt: Attempt }
  | { allowed: false; retryAfterSeconds: number };

/**
 * How long an attempt counts as in flight. Far longer than any hash with its queue, it only
 * matters when a process dies mid-attempt: its reservation then turns into a counted failure.
 */
const IN_FLIGHT_LEASE_MS = 60_000;

/** The account as stored: a fixed-size digest, whatever length of email the client sent. */
export function accountDigest(accountKey: string): string {
  return createHash('sha256').update(accountKey).digest('hex');
}

/**
 * Sign-in throttling (CONTRACT "Sign-in throttling") over attempts stored in the shared database.
 * An attempt is reserved before any hashing and counted in the same step, so a burst of
 * simultaneous guesses is held to the limit like guesses one after another. The account key is
 * the normalised email whether or not an account has it, so a throttled answer is the same for
 * real and unknown emails.
 */
export class SigninThrottle {
  readonly #attempts: SigninAttemptsRepository;
  readonly #policy: ThrottlePolicy;
  readonly #now: () => number;
  /** What each count must stay below for one more attempt to go ahead. */
  readonly #room: AttemptLimits;

  constructor(attempts: SigninAttemptsRepository, policy: ThrottlePolicy, now: () => number = Date.now) {
    this.#attempts = attempts;
    this.#policy = policy;
    this.#now = now;
    this.#room = {
      pair: policy.perAccountAddress,
      account: policy.perAccount,
      address: policy.perAddress,
      accountInFlight: policy.concurrentPerAccount,
      addressInFlight: policy.concurrentPerAddress,
    };
  }

  async begin(accountKey: string, address: string): Promise<ThrottleVerdict> {
    const now = this.#now();
    const since = now - this.#policy.windowMs;
    const digest = accountDigest(accountKey);
    const at = { accountDigest: digest, address, now, since };
    // The reservation is made only when the counts before it are within the limits, in one
    // statement: when they are reached already (someone hammering), the refusal costs no write.
    const id = await this.#attempts.reserve(at, now + IN_FLIGHT_LEASE_MS, this.#room);
    if (id === undefined) {
      // Which limits, for Retry-After; they may have eased since, and the refusal stands.
      const hit = this.#limitsHit(await this.#attempts.counts(at), digest, address, 0);
      return this.#refusal(hit ?? { over: [] }, since, now);
    }
    // Each count now includes this attempt: it may go ahead when it is within every limit.
    const hit = this.#limitsHit(await this.#attempts.counts(at), digest, address, 1);
    if (!hit) return { allowed: true, attempt: this.#attempt(id, digest, address) };
    // Refused attempts are not counted: waiting out the window must be enough.
    await this.#attempts.remove(id);
    return this.#refusal(hit, since, now);
  }

  /**
   * The limits `counts` reach, with `self` (0 or 1) of them being the attempt asking; undefined
   * when it may go ahead.
   */
  #limitsHit(counts: AttemptCounts, digest: string, address: string, self: 0 | 1): LimitsHit | undefined {
    const room = this.#room;
    const reached = (count: keyof AttemptLimits) => counts[count] - self >= room[count];
    const over = [
      reached('pair') && { scope: { accountDigest: digest, address }, limit: room.pair },
      reached('account') && { scope: { accountDigest: digest }, limit: room.account },
      reached('address') && { scope: { address }, limit: room.address },
    ].filter((x) => x !== false);
    const busy = reached('accountInFlight') || reached('addressInFlight');
    return over.length > 0 || busy ? { over } : undefined;
  }

  /** A refusal's Retry-After: when the window lets the oldest counted failure go (in-flight ones end within seconds). */
  async #refusal({ over }: LimitsHit, since: number, now: number): Promise<ThrottleVerdict> {
    let freeAt = now + 1000;
    for (const { scope, limit } of over) {
      const limitth = await this.#attempts.nthNewest(scope, since, limit);
      if (limitth !== undefined) freeAt = Math.max(freeAt, limitth + this.#policy.windowMs);
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((freeAt - now) / 1000)) };
  }

  #attempt(id: bigint, digest: string, address: string): Attempt {
    return {
      failed: () => this.#attempts.settle(id),
      succeeded: () => this.#attempts.clear(digest, address),
      abandoned: () => this.#attempts.remove(id),
      forgiveness: { accountDigest: digest, address },
    };
  }

  /** After a password reset: the account starts with a clean slate, from every address. */
  forgiveAccount(accountKey: string): Promise<void> {
    return this.#attempts.clear(accountDigest(accountKey));
  }

  /** Drops attempts older than the window; run in the background, never by a request. */
  purgeExpired(now = this.#now()): Promise<number> {
    return this.#attempts.deleteBefore(now - this.#policy.windowMs);
  }
}
