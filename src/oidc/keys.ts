// The provider's keys, kept in the database sealed under ENCRYPTION_KEY (the rule of TOTP secrets,
// kernel/sealing.ts), so every instance signs with the same keys and publishes the same JWKS.
// Rotation never breaks a valid token: a new key is published at once and signs only from
// PUBLISH_AHEAD_MS later, by when every instance has picked it up (they look every
// REFRESH_INTERVAL_MS); an old key stays published until the operator retires it.
import { generateKeyPairSync, type JsonWebKey, randomBytes } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { SecretBox } from '../kernel/sealing.ts';
import { AppError } from '../shared/errors.ts';
import { randomTextId } from '../shared/ids.ts';
import type { OidcKeysRepository, StoredKey } from './key-repository.ts';

/** ID tokens: RS256, the algorithm every OpenID Connect client must accept (Core 1.0 §15.1). */
export const ID_TOKEN_ALG = 'RS256';
/** Access tokens (RFC 9068): ES256, about a quarter of RS256's signing CPU (docs/benchmarks.md, round 11). */
export const ACCESS_TOKEN_ALG = 'ES256';
const SIGNING_ALGS = [ID_TOKEN_ALG, ACCESS_TOKEN_ALG] as const;

/** How often an instance looks for a changed key set. */
export const REFRESH_INTERVAL_MS = 30_000;
/** A rotated key signs this long after it is published: more than one refresh interval. */
export const PUBLISH_AHEAD_MS = 60_000;

export type KeyStatus = 'next' | 'signing' | 'published' | 'retired';

export interface KeyView {
  kid: string;
  alg: string;
  status: KeyStatus;
  createdAt: Date;
  signsFrom: Date;
  retiredAt: Date | undefined;
}

/** What a provider instance is built with, and when it must be built again. */
export interface KeySnapshot {
  /** Private JWKs, the signing key of each algorithm first (oidc-provider signs with the first that fits). */
  jwks: JsonWebKey[];
  cookieKeys: string[];
  /** The kids in the order above: a provider built with another order is stale. */
  fingerprint: string;
}

const newKid = () => randomTextId(12);

/** An operator's key change and its audit record commit together. */
export type KeyTransaction = InTransaction<{ keys: OidcKeysRepository; journal: Journal }>;

export class KeyRing {
  readonly #keys: OidcKeysRepository;
  readonly #transaction: KeyTransaction;
  readonly #key: () => Buffer | undefined;
  readonly #now: () => number;

  constructor(deps: {
    keys: OidcKeysRepository;
    transaction: KeyTransaction;
    key: () => Buffer | undefined;
    now: () => number;
  }) {
    this.#keys = deps.keys;
    this.#transaction = deps.transaction;
    this.#key = deps.key;
    this.#now = deps.now;
  }

  /** False on PostgreSQL without ENCRYPTION_KEY: the provider then answers 503. */
  get available(): boolean {
    return this.#key() !== undefined;
  }

  #box(): SecretBox {
    const key = this.#key();
    if (!key) {
      throw new AppError(
        'UNAVAILABLE',
        'The OpenID Connect provider needs ENCRYPTION_KEY to seal its keys; the operator has not set it.',
      );
    }
    return new SecretBox(key);
  }

  /**
   * The first keys, when there are none (a new database): they sign at once, as nothing has seen
   * others. Named by their algorithm, so that instances starting together on a new database all
   * insert the same kids: one insert of each wins, and every instance reads the winners.
   */
  async ensure(): Promise<void> {
    const all = await this.#keys.list();
    const now = this.#now();
    const live = (use: StoredKey['use'], alg?: string) =>
      all.some(
        (key) => key.retiredAt === undefined && key.use === use && (alg === undefined || key.alg === alg),
      );
    // A first kid already taken (only by a key since retired) is not asked for twice.
    const unused = (kid: string) => (all.some((key) => key.kid === kid) ? undefined : kid);
    for (const alg of SIGNING_ALGS) {
      if (!live('sig', alg)) await this.#create('sig', alg, now, unused(`first-${alg.toLowerCase()}`));
    }
    if (!live('cookie')) await this.#create('cookie', 'HS256', now, unused('first-cookie'));
  }

  /** `usher keys rotate`: a new key of each algorithm, published now, signing after PUBLISH_AHEAD_MS. */
  async rotate(): Promise<KeyView[]> {
    await this.ensure();
    const signsFrom = this.#now() + PUBLISH_AHEAD_MS;
    const kids = await this.#transaction(async ({ keys, journal }) => {
      const made: string[] = [];
      for (const alg of SIGNING_ALGS) made.push(await this.#create('sig', alg, signsFrom, undefined, keys));
      await journal.record({
        type: 'oidc.key.rotated',
        userId: null,
        details: { kids: made, signsFrom: new Date(signsFrom).toISOString() },
      });
      return made;
    });
    return (await this.list()).filter((key) => kids.includes(key.kid));
  }

  /** `usher keys retire KID`: out of the JWKS; never a key that signs now or is about to. */
  async retire(kid: string): Promise<KeyView> {
    const key = (await this.list()).find((k) => k.kid === kid);
    if (!key) throw new AppError('NOT_FOUND', `No signing key has the id ${kid}.`);
    if (key.status === 'retired')
      throw new AppError('VALIDATION_FAILED', `The key ${kid} is already retired.`);
    if (key.status !== 'published') {
      throw new AppError(
        'VALIDATION_FAILED',
        `The key ${kid} ${key.status === 'signing' ? 'signs tokens now' : 'is about to sign tokens'}; rotate first, then retire it once its tokens have expired.`,
      );
    }
    await this.#transaction(async ({ keys, journal }) => {
      await keys.retire(kid, this.#now());
      await journal.record({ type: 'oidc.key.retired', userId: null, details: { kid, alg: key.alg } });
    });
    return { ...key, status: 'retired', retiredAt: new Date(this.#now()) };
  }

  /** The signing keys, oldest first, with what each does now. */
  async list(): Promise<KeyView[]> {
    const keys = (await this.#keys.list()).filter((key) => key.use === 'sig');
    const signing = signers(keys, this.#now());
    return keys.map((key) => ({
      kid: key.kid,
      alg: key.alg,
      status:
        key.retiredAt !== undefined
          ? 'retired'
          : signing.has(key.kid)
            ? 'signing'
            : key.signsFrom > this.#now()
              ? 'next'
              : 'published',
      createdAt: key.createdAt,
      signsFrom: new Date(key.signsFrom),
      retiredAt: key.retiredAt === undefined ? undefined : new Date(key.retiredAt),
    }));
  }

  /** The set a provider is built with now. */
  async snapshot(): Promise<KeySnapshot> {
    await this.ensure();
    const box = this.#box();
    const keys = (await this.#keys.list()).filter((key) => key.retiredAt === undefined);
    const now = this.#now();
    const signing = signers(keys, now);
    const sig = keys
      .filter((key) => key.use === 'sig')
      .sort((a, b) => Number(signing.has(b.kid)) - Number(signing.has(a.kid)));
    const cookies = keys.filter((key) => key.use === 'cookie').sort((a, b) => b.signsFrom - a.signsFrom);
    return {
      jwks: sig.map((key) => ({ ...(JSON.parse(box.open(key.sealed, context(key.kid))) as JsonWebKey) })),
      cookieKeys: cookies.map((key) => box.open(key.sealed, context(key.kid))),
      fingerprint: sig.map((key) => key.kid).join(' '),
    };
  }

  /** What changes the key set: read every refresh, cheap (two counts). */
  version(): Promise<string> {
    return this.#keys.version();
  }

  async #create(
    use: StoredKey['use'],
    alg: string,
    signsFrom: number,
    firstKid?: string,
    keys: OidcKeysRepository = this.#keys,
  ): Promise<string> {
    const box = this.#box();
    const kid = firstKid ?? newKid();
    let secret: string;
    if (use === 'cookie') secret = randomBytes(32).toString('base64url');
    else {
      const { privateKey } =
        alg === 'RS256'
          ? generateKeyPairSync('rsa', { modulusLength: 2048 })
          : generateKeyPairSync('ec', { namedCurve: 'P-256' });
      secret = JSON.stringify({ ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' });
    }
    await keys.insert({
      kid,
      use,
      alg,
      sealed: box.seal(secret, context(kid)),
      createdAt: new Date(this.#now()),
      signsFrom,
    });
    return kid;
  }
}

const context = (kid: string) => `oidc-key:${kid}`;

/** The key each algorithm signs with at `now`: the newest whose time has come. */
function signers(keys: readonly StoredKey[], now: number): Set<string> {
  const chosen = new Map<string, StoredKey>();
  for (const key of keys) {
    if (key.use !== 'sig' || key.retiredAt !== undefined || key.signsFrom > now) continue;
    const held = chosen.get(key.alg);
    if (!held || key.signsFrom > held.signsFrom || (key.signsFrom === held.signsFrom && key.kid > held.kid))
      chosen.set(key.alg, key);
  }
  return new Set([...chosen.values()].map((key) => key.kid));
}
