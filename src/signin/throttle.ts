import { createHash, randomBytes } from 'node:crypto';
import { addressKey } from '../shared/address.ts';
import { accountDigest } from '../users/index.ts';
import type { SigninDevicesRepository } from './device-repository.ts';
import type {
  AttemptAt,
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
  /**
   * How long a client that signed in stays known to the account (renewed at each sign-in); while
   * it is, its sign-ins are judged by its own failures (`perAccountAddress` of them), not by the
   * account's, its address's or the pair's. 0 turns known devices off.
   */
  deviceTtlMs: number;
}

/** The device a sign-in came from, as far as its token tells. */
export interface AttemptDevice {
  /** The well-formed device token the client sent, and its digest; undefined when it sent none. */
  sent: { token: string; digest: string } | undefined;
  /** Whether the account knew this device when the attempt began. */
  known: boolean;
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
   * statement or transaction instead (GrantRepository.grantSession), in place of `succeeded`.
   */
  readonly forgiveness: { accountDigest: string; address: string; device: string | null };
  readonly device: AttemptDevice;
}

export type ThrottleVerdict =
  | { allowed: true; attempt: Attempt }
  | { allowed: false; retryAfterSeconds: number };

/**
 * How long an attempt counts as in flight. Far longer than any hash with its queue, it only
 * matters when a process dies mid-attempt: its reservation then turns into a counted failure.
 */
const IN_FLIGHT_LEASE_MS = 60_000;

/** A count no limit is checked against (the store compares integers). */
const UNLIMITED = 2_147_483_647;

/** 256 random bits, base64url: the only form of device token accepted. */
const DEVICE_TOKEN = /^[A-Za-z0-9_-]{43}$/;
const deviceDigest = (token: string) => createHash('sha256').update(token).digest('hex');
const sentDevice = (token: string | undefined) =>
  token !== undefined && DEVICE_TOKEN.test(token) ? { token, digest: deviceDigest(token) } : undefined;

/**
 * Sign-in throttling (CONTRACT "Sign-in throttling") over attempts stored in the shared database.
 * An attempt is reserved before any hashing and counted in the same step, so a burst of
 * simultaneous guesses is held to the limit like guesses one after another. The account key is
 * the normalised email whether or not an account has it, so a throttled answer is the same for
 * real and unknown emails.
 */
export class SigninThrottle {
  readonly #attempts: SigninAttemptsRepository;
  readonly #devices: SigninDevicesRepository;
  readonly #policy: ThrottlePolicy;
  readonly #now: () => number;
  /** What each count must stay below for one more attempt from a client not known to go ahead. */
  readonly #room: AttemptLimits;
  /**
   * The same for a known device: only its own failures and the in-flight caps. The account's and
   * the address's failures are an attacker's to make, so they cannot keep the owner out.
   */
  readonly #knownRoom: AttemptLimits;
  /**
   * For a method whose failures are not guesses at one account's secret (a passkey's signature
   * cannot be guessed): only its address's failures and in-flight cap. Counting them against an
   * account would hand anyone a way to lock it.
   */
  readonly #addressRoom: AttemptLimits;

  constructor(deps: {
    attempts: SigninAttemptsRepository;
    devices: SigninDevicesRepository;
    policy: ThrottlePolicy;
    now?: () => number;
  }) {
    const { policy } = deps;
    this.#attempts = deps.attempts;
    this.#devices = deps.devices;
    this.#policy = policy;
    this.#now = deps.now ?? Date.now;
    this.#room = {
      pair: policy.perAccountAddress,
      account: policy.perAccount,
      address: policy.perAddress,
      accountInFlight: policy.concurrentPerAccount,
      addressInFlight: policy.concurrentPerAddress,
      device: UNLIMITED,
    };
    this.#knownRoom = {
      ...this.#room,
      pair: UNLIMITED,
      account: UNLIMITED,
      address: UNLIMITED,
      device: policy.perAccountAddress,
    };
    this.#addressRoom = {
      pair: UNLIMITED,
      account: UNLIMITED,
      address: policy.perAddress,
      accountInFlight: UNLIMITED,
      addressInFlight: policy.concurrentPerAddress,
      device: UNLIMITED,
    };
  }

  /**
   * `address` is the client's IP address (counted by network: shared/address.ts); `deviceToken`
   * the device token the client sent, if any.
   */
  async begin(accountKey: string, address: string, deviceToken?: string): Promise<ThrottleVerdict> {
    const digest = accountDigest(accountKey);
    const now = this.#now();
    const device = await this.#device(deviceToken, digest, now);
    return this.#begin(digest, address, device, device.known ? this.#knownRoom : this.#room, now);
  }

  /**
   * An attempt judged by its address alone (all methods' failures from that network count
   * together), for the method named `method`: its own rows, so a success forgives only them.
   */
  async beginForAddress(method: string, address: string): Promise<ThrottleVerdict> {
    // No email key has this form (registration needs an @), so no account shares the digest. Per
    // network too: one digest for every address would make each attempt's count read every
    // network's rows of the method (its account count, unlimited but still counted).
    const digest = accountDigest(`method:${method}:${addressKey(address)}`);
    return this.#begin(digest, address, { sent: undefined, known: false }, this.#addressRoom, this.#now());
  }

  async #begin(
    digest: string,
    address: string,
    device: AttemptDevice,
    room: AttemptLimits,
    now: number,
  ): Promise<ThrottleVerdict> {
    const since = now - this.#policy.windowMs;
    const network = addressKey(address);
    const at = {
      accountDigest: digest,
      address: network,
      device: device.known ? device.sent!.digest : null,
      now,
      since,
    };
    // The reservation is made only when the counts before it are within the limits, in one
    // statement: when they are reached already (someone hammering), the refusal costs no write.
    const id = await this.#attempts.reserve(at, now + IN_FLIGHT_LEASE_MS, room);
    if (id === undefined) {
      // Which limits, for Retry-After; they may have eased since, and the refusal stands.
      const hit = this.#limitsHit(await this.#attempts.counts(at), at, room, 0);
      return this.#refusal(hit ?? { over: [] }, since, now);
    }
    // Each count now includes this attempt: it may go ahead when it is within every limit.
    const hit = this.#limitsHit(await this.#attempts.counts(at), at, room, 1);
    if (!hit) return { allowed: true, attempt: this.#attempt(id, at, device) };
    // Refused attempts are not counted: waiting out the window must be enough.
    await this.#attempts.remove(id);
    return this.#refusal(hit, since, now);
  }

  /** The client's device: known to the account when its token is one the account remembers. */
  async #device(token: string | undefined, account: string, now: number): Promise<AttemptDevice> {
    const sent = sentDevice(token);
    if (!sent || !this.devicesOn) return { sent, known: false };
    return { sent, known: await this.#devices.isKnown(sent.digest, account, now) };
  }

  /**
   * The token a device is to be remembered by: the one it sent, or a new one (made only now, for
   * a sign-in that succeeded, not for every attempt).
   */
  deviceToRemember(device: AttemptDevice): { token: string; digest: string } {
    if (device.sent) return device.sent;
    const token = randomBytes(32).toString('base64url');
    return { token, digest: deviceDigest(token) };
  }

  /** When a device remembered now stops being known. */
  deviceExpiry(now: number): number {
    return now + this.#policy.deviceTtlMs;
  }

  get deviceTtlSeconds(): number {
    return Math.floor(this.#policy.deviceTtlMs / 1000);
  }

  get devicesOn(): boolean {
    return this.#policy.deviceTtlMs > 0;
  }

  /**
   * Remembers a device for an account outside a sign-in: after a password reset, whose link
   * proved the mailbox, the browser that finished it is known, so the owner of an account under
   * attack has a way back in. Returns the token to hand the client, or undefined when devices
   * are off.
   */
  async rememberDevice(accountKey: string, deviceToken: string | undefined): Promise<string | undefined> {
    if (!this.devicesOn) return undefined;
    const now = this.#now();
    const device = this.deviceToRemember({ sent: sentDevice(deviceToken), known: false });
    await this.#devices.remember({
      tokenDigest: device.digest,
      accountDigest: accountDigest(accountKey),
      now,
      expiresAt: this.deviceExpiry(now),
    });
    return device.token;
  }

  /**
   * The limits `counts` reach, with `self` (0 or 1) of them being the attempt asking; undefined
   * when it may go ahead.
   */
  #limitsHit(counts: AttemptCounts, at: AttemptAt, room: AttemptLimits, self: 0 | 1): LimitsHit | undefined {
    const { accountDigest: digest, address, device } = at;
    const reached = (count: keyof AttemptLimits) => counts[count] - self >= room[count];
    const over = [
      reached('pair') && { scope: { accountDigest: digest, address }, limit: room.pair },
      reached('account') && { scope: { accountDigest: digest }, limit: room.account },
      reached('address') && { scope: { address }, limit: room.address },
      device !== null &&
        reached('device') && { scope: { accountDigest: digest, device }, limit: room.device },
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

  #attempt(id: bigint, at: AttemptAt, device: AttemptDevice): Attempt {
    const { accountDigest: digest, address } = at;
    return {
      failed: () => this.#attempts.settle(id),
      succeeded: () => this.#attempts.clear(digest, { address, device: at.device }),
      abandoned: () => this.#attempts.remove(id),
      forgiveness: { accountDigest: digest, address, device: at.device },
      device,
    };
  }

  /** After a password reset: the account starts with a clean slate, from every address. */
  forgiveAccount(accountKey: string): Promise<void> {
    return this.#attempts.clear(accountDigest(accountKey));
  }

  /** Drops attempts older than the window, and devices no longer known; run in the background, never by a request. */
  async purgeExpired(now = this.#now()): Promise<number> {
    const [attempts, devices] = await Promise.all([
      this.#attempts.deleteBefore(now - this.#policy.windowMs),
      this.#devices.deleteExpired(now),
    ]);
    return attempts + devices;
  }
}
