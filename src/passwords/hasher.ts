import { argon2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { PasswordHashConfig } from '../config.ts';
import { HashOverloadedError } from '../shared/errors.ts';
import { LanedSemaphore, type LaneLimits, QueueFullError } from '../shared/semaphore.ts';
import { storedImport, verifyImported } from './imported.ts';

const argon2Async = promisify(argon2);

const SALT_BYTES = 16;
const TAG_BYTES = 32;
const PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

interface ParsedHash {
  memoryKiB: number;
  passes: number;
  parallelism: number;
  salt: Buffer;
  tag: Buffer;
}

function parse(phc: string): ParsedHash | undefined {
  const m = PHC.exec(phc);
  if (!m) return undefined;
  return {
    memoryKiB: Number(m[1]),
    passes: Number(m[2]),
    parallelism: Number(m[3]),
    salt: Buffer.from(m[4]!, 'base64'),
    tag: Buffer.from(m[5]!, 'base64'),
  };
}

const b64 = (buffer: Buffer) => buffer.toString('base64').replace(/=+$/, '');

/**
 * The longest password accepted as input, in UTF-16 code units, checked before anything else
 * looks at it: NFKC can grow a string 18-fold (U+FDFA), so normalising a megabyte would hold the
 * event loop for seconds. 4096 units is far above the 1024 code points a password may have.
 */
export const PASSWORD_INPUT_MAX = 4096;

/** Compatibility form so that visually identical passwords (NFC and NFD, full-width digits) match. */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

export type HashTimer = (seconds: number) => void;
/** Told how long a hash waited in its lane's queue for a slot (the queue-wait metric). */
export type QueueTimer = (lane: HashLane, seconds: number) => void;

/**
 * Who a hash is for. `signin`: checking a password at sign-in (POST /api/signin, /api/sessions).
 * `account`: everything else (registration, password changes and resets, present-password
 * checks, the admin CLI). Each lane has its own part of the queue and is owed part of the slots,
 * so a flood of registrations cannot keep people from signing in, nor a sign-in storm keep them
 * from registering.
 */
export type HashLane = 'signin' | 'account';

/** The slots and queue places of each lane, from HASH_CONCURRENCY, HASH_QUEUE_LIMIT and HASH_SIGNIN_SHARE. */
export function hashLanes(params: PasswordHashConfig): Array<[HashLane, LaneLimits]> {
  const share = (params.signinSharePercent ?? DEFAULT_SIGNIN_SHARE_PERCENT) / 100;
  // Sign-in is owed at least one slot; the rest is the account lane's own. Either lane may borrow
  // the other's idle slots: a slot that frees goes first to a lane below what it is owed, so a
  // sign-in waits for at most the hash that is ending, while registrations alone still use every
  // core (capping them at their share halved their rate in npm run bench: decision 161).
  const signinSlots = Math.min(params.concurrency, Math.max(1, Math.ceil(params.concurrency * share)));
  const accountSlots = params.concurrency - signinSlots;
  const signinQueue = Math.max(1, Math.ceil(params.queueLimit * share));
  const accountQueue = Math.max(1, params.queueLimit - signinQueue);
  return [
    ['signin', { guaranteed: signinSlots, max: params.concurrency, maxWaiting: signinQueue }],
    ['account', { guaranteed: accountSlots, max: params.concurrency, maxWaiting: accountQueue }],
  ];
}

/** HASH_SIGNIN_SHARE's default: half the slots and half the queue are sign-in's. */
export const DEFAULT_SIGNIN_SHARE_PERCENT = 50;

/** What the hashers of one process share: the slots, and how long a hash takes lately. */
class HashPool {
  readonly gate: LanedSemaphore<HashLane>;
  /** Recent seconds per hash, for the Retry-After of a refusal. */
  typicalSeconds = 0.05;
  readonly onHash: HashTimer | undefined;
  readonly onWait: QueueTimer | undefined;
  dummy: Promise<string> | undefined;
  constructor(params: PasswordHashConfig, onHash: HashTimer | undefined, onWait?: QueueTimer) {
    this.gate = new LanedSemaphore(params.concurrency, hashLanes(params));
    this.onHash = onHash;
    this.onWait = onWait;
  }
}

/**
 * argon2id on the libuv threadpool. A semaphore bounds how many run at once so a sign-in storm
 * queues here instead of filling the threadpool that file and DNS work also need, and bounds the
 * queue, so a flood is refused at once (HashOverloadedError) instead of growing memory and latency.
 * A hasher hashes in one lane (HashLane); `signInLane()` is the same pool's sign-in lane.
 */
export class PasswordHasher {
  readonly #params: PasswordHashConfig;
  readonly #pool: HashPool;
  readonly #lane: HashLane;

  /** `onHash` is told the seconds of every hash of the pool, whichever lane (the hash metric). */
  constructor(
    params: PasswordHashConfig,
    options: { onHash?: HashTimer; onWait?: QueueTimer } | { pool: HashPool; lane: HashLane } = {},
  ) {
    this.#params = params;
    this.#pool = 'pool' in options ? options.pool : new HashPool(params, options.onHash, options.onWait);
    this.#lane = 'lane' in options ? options.lane : 'account';
  }

  /** A hasher on the same slots that hashes in the sign-in lane. */
  signInLane(): PasswordHasher {
    return new PasswordHasher(this.#params, { pool: this.#pool, lane: 'signin' });
  }

  /** Hashes of `lane` waiting for a slot now (the queue-depth metric reads it at each scrape). */
  waiting(lane: HashLane): number {
    return this.#pool.gate.waiting(lane);
  }

  /** Runs `work` in one of this lane's hash slots, or refuses at once when its queue is full. */
  async #gated<T>(work: () => Promise<T>): Promise<T> {
    const gate = this.#pool.gate;
    const onWait = this.#pool.onWait;
    const queued = onWait ? performance.now() : 0;
    const lane = this.#lane;
    try {
      return await gate.run(
        lane,
        onWait
          ? () => {
              onWait(lane, (performance.now() - queued) / 1000);
              return work();
            }
          : work,
      );
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      const drainSeconds = (gate.waiting(this.#lane) * this.#pool.typicalSeconds) / gate.slots(this.#lane);
      throw new HashOverloadedError(Math.max(1, Math.ceil(drainSeconds)));
    }
  }

  #derive(password: string, salt: Buffer, memoryKiB: number, passes: number, parallelism: number) {
    return this.#gated(() => this.#timed(password, salt, memoryKiB, passes, parallelism));
  }

  async #timed(password: string, salt: Buffer, memoryKiB: number, passes: number, parallelism: number) {
    const started = process.hrtime.bigint();
    const tag = await argon2Async('argon2id', {
      message: normalizePassword(password),
      nonce: salt,
      memory: memoryKiB,
      passes,
      parallelism,
      tagLength: TAG_BYTES,
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    this.#pool.typicalSeconds = this.#pool.typicalSeconds * 0.9 + seconds * 0.1;
    this.#pool.onHash?.(seconds);
    return tag;
  }

  /** A PHC string: $argon2id$v=19$m=…,t=…,p=…$salt$hash. */
  async hash(password: string): Promise<string> {
    const { memoryKiB, passes, parallelism } = this.#params;
    const salt = randomBytes(SALT_BYTES);
    const tag = await this.#derive(password, salt, memoryKiB, passes, parallelism);
    return `$argon2id$v=19$m=${memoryKiB},t=${passes},p=${parallelism}$${b64(salt)}$${b64(tag)}`;
  }

  /**
   * Constant-time check of a password against a stored hash, with that hash's own parameters:
   * Usher's argon2id PHC string, or a hash imported from another system (passwords/imported.ts),
   * verified by its own algorithm in the same slots and queue. Anything else matches nothing.
   */
  async verify(password: string, phc: string): Promise<boolean> {
    const parsed = parse(phc);
    if (!parsed) {
      const imported = storedImport(phc);
      if (imported === undefined) return false;
      // Not timed into the metric nor the Retry-After estimate: both are argon2id's.
      return this.#gated(() => verifyImported(imported, password));
    }
    const tag = await this.#derive(
      password,
      parsed.salt,
      parsed.memoryKiB,
      parsed.passes,
      parsed.parallelism,
    );
    return tag.length === parsed.tag.length && timingSafeEqual(tag, parsed.tag);
  }

  /**
   * Spends the same time as verifying a real hash, for an email that has no account, so response
   * time does not reveal which emails are registered.
   */
  async verifyDummy(password: string): Promise<false> {
    this.#pool.dummy ??= this.hash(randomBytes(32).toString('base64'));
    const dummy = this.#pool.dummy;
    let phc: string;
    try {
      phc = await dummy;
    } catch (error) {
      // Refused (the queue was full): the next unknown email makes it again, rather than every
      // one after it failing on the same rejected promise.
      if (this.#pool.dummy === dummy) this.#pool.dummy = undefined;
      throw error;
    }
    await this.verify(password, phc);
    return false;
  }

  /** True when a stored hash was made with other parameters than the configured ones, or imported. */
  needsRehash(phc: string): boolean {
    const parsed = parse(phc);
    return (
      !parsed ||
      parsed.memoryKiB !== this.#params.memoryKiB ||
      parsed.passes !== this.#params.passes ||
      parsed.parallelism !== this.#params.parallelism ||
      parsed.tag.length !== TAG_BYTES
    );
  }
}
