// Secrets at rest (TOTP secrets, webhook signing secrets, the OpenID Connect provider's client
// secrets and signing keys): AES-256-GCM under ENCRYPTION_KEY, so a copy of the database (a backup,
// a replica, a leaked dump) does not hand out every user's second factor or every receiver's key.
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The cipher's key object of each key buffer, made once: handed a raw Buffer, every
 * createCipheriv and createDecipheriv imports it into a new key object of its own, which was three
 * quarters of opening a secret (about 15 of 20 µs; docs/benchmarks.md, round 19). The buffers are
 * keySource's, one per process (or per configuration), so the map holds one or two entries.
 */
const KEY_OBJECTS = new WeakMap<Buffer, KeyObject>();

function keyObject(key: Buffer): KeyObject {
  let object = KEY_OBJECTS.get(key);
  if (!object) {
    object = createSecretKey(key);
    KEY_OBJECTS.set(key, object);
  }
  return object;
}

/** Seals and opens short secrets; `context` (whose secret it is: a user id, a client id) is authenticated, so a sealed value only opens for its row. */
export class SecretBox {
  readonly #key: KeyObject;
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('an AES-256 key is 32 bytes');
    this.#key = keyObject(key);
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** Throws when the value was sealed under another key or context, or altered. */
  open(sealed: string, context: string): string {
    const [version, data] = sealed.split('.');
    if (version !== VERSION || data === undefined) throw new Error('not a sealed secret');
    const raw = Buffer.from(data, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
  }
}

/**
 * Where the sealing key comes from when ENCRYPTION_KEY is unset (docs/decisions.md):
 * - SQLite file: `usher.key` beside the database, created once with mode 0600 on first use, so a
 *   fresh `npm start` works with nothing set (one process owns that file, so no key to share);
 * - sqlite::memory:: a random key for this process (the data dies with it anyway);
 * - PostgreSQL: none. Several instances share the database and would each make their own key,
 *   so TOTP set-up answers 503 until ENCRYPTION_KEY is set.
 * Resolved on first use and kept, so nothing is written for a server that never uses TOTP.
 */
export function keySource(configured: Buffer | undefined, databaseUrl: string): () => Buffer | undefined {
  if (configured) return () => configured;
  if (!databaseUrl.startsWith('sqlite:')) return () => undefined;
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === ':memory:') {
    const key = randomBytes(32);
    return () => key;
  }
  let key: Buffer | undefined;
  return () => {
    key ??= keyFile(join(dirname(resolve(path)), 'usher.key'));
    return key;
  };
}

function keyFile(file: string): Buffer {
  mkdirSync(dirname(file), { recursive: true });
  try {
    // 'wx': only the first caller creates it; a second process reads what the first wrote.
    const fd = openSync(file, 'wx', 0o600);
    try {
      writeSync(fd, `${randomBytes(32).toString('base64')}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte base64 key`);
  return key;
}
