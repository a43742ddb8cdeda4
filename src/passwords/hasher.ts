import { argon2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { PasswordHashConfig } from '../config.ts';
import { AppError } from '../shared/errors.ts';
import { QueueFullError, Semaphore } from '../shared/semaphore.ts';

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

/** The hash queue is full: the request is answered 503 with Retry-After instead of waiting. */
export class HashOverloadedError extends AppError {
  constructor(retryAfterSeconds: number) {
    super('UNAVAILABLE', 'The server is too busy to check passwords right now; try again shortly.', 503, {
      'retry-after': String(retryAfterSeconds),
    });
    this.name = 'HashOverloadedError';
  }
}

/** Compatibility form so that visually identical passwords (NFC and NFD, full-width digits) match. */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

export type HashTimer = (seconds: number) => void;

/**
 * argon2id on the libuv threadpool. A semaphore bounds how many run at once so a sign-in storm
 * queues here instead of filling the threadpool that file and DNS work also need, and bounds the
 * queue, so a flood is refused at once (HashOverloadedError) instead of growing memory and latency.
 */
export class PasswordHasher {
  readonly #params: PasswordHashConfig;
  readonly #gate: Semaphore;
  #dummy: Promise<string> | undefined;
  /** Recent seconds per hash, for the Retry-After of a refusal. */
  #typicalSeconds = 0.05;
  onHash: HashTimer | undefined;

  constructor(params: PasswordHashConfig) {
    this.#params = params;
    this.#gate = new Semaphore(params.concurrency, params.queueLimit);
  }

  async #derive(password: string, salt: Buffer, memoryKiB: number, passes: number, parallelism: number) {
    try {
      return await this.#gate.run(() => this.#timed(password, salt, memoryKiB, passes, parallelism));
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      const drainSeconds = (this.#gate.waiting * this.#typicalSeconds) / this.#params.concurrency;
      throw new HashOverloadedError(Math.max(1, Math.ceil(drainSeconds)));
    }
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
    this.#typicalSeconds = this.#typicalSeconds * 0.9 + seconds * 0.1;
    this.onHash?.(seconds);
    return tag;
  }

  /** A PHC string: $argon2id$v=19$m=…,t=…,p=…$salt$hash. */
  async hash(password: string): Promise<string> {
    const { memoryKiB, passes, parallelism } = this.#params;
    const salt = randomBytes(SALT_BYTES);
    const tag = await this.#derive(password, salt, memoryKiB, passes, parallelism);
    return `$argon2id$v=19$m=${memoryKiB},t=${passes},p=${parallelism}$${b64(salt)}$${b64(tag)}`;
  }

  /** Constant-time check of a password against a stored PHC string (with that string's own parameters). */
  async verify(password: string, phc: string): Promise<boolean> {
    const parsed = parse(phc);
    if (!parsed) return false;
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
    this.#dummy ??= this.hash(randomBytes(32).toString('base64'));
    await this.verify(password, await this.#dummy);
    return false;
  }

  /** True when a stored hash was made with other parameters than the configured ones. */
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
