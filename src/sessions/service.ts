import { createHash, randomBytes } from 'node:crypto';
import type { SessionsRepository } from './repository.ts';

export interface SessionPolicy {
  /** Lifetime from sign-in, whatever the activity. */
  absoluteTtlMs: number;
  /** Lifetime without a request. */
  idleTtlMs: number;
}

export interface ActiveSession {
  userId: bigint;
  tokenHash: string;
}

// last_seen_at is written at most this often per session (or a tenth of the idle lifetime, if
// shorter), so authenticated reads do not each cost a write.
const TOUCH_INTERVAL_MS = 60_000;

/** 256 bits from the CSPRNG, base64url: opaque to clients, useless to guess. */
function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Only this digest is stored, so a database leak does not hand out live sessions. */
function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export class SessionService {
  readonly #sessions: SessionsRepository;
  readonly #policy: SessionPolicy;

  constructor(sessions: SessionsRepository, policy: SessionPolicy) {
    this.#sessions = sessions;
    this.#policy = policy;
  }

  get policy(): SessionPolicy {
    return this.#policy;
  }

  /** A new session for every sign-in: a token is never reused or accepted from a client. */
  async start(userId: bigint): Promise<string> {
    const token = newToken();
    const now = new Date();
    await this.#sessions.insert(hashToken(token), userId, now, this.#expiry(now));
    return token;
  }

  /**
   * A session for a user whose password was just verified against `passwordHash`, created only
   * if that is still their hash (not changed, not deleted meanwhile); undefined otherwise.
   */
  async startIfHash(userId: bigint, passwordHash: string): Promise<string | undefined> {
    const token = newToken();
    const now = new Date();
    const started = await this.#sessions.insertIfPasswordHash(
      hashToken(token),
      userId,
      passwordHash,
      now,
      this.#expiry(now),
    );
    return started ? token : undefined;
  }

  #expiry(now: Date): Date {
    return new Date(now.getTime() + this.#policy.absoluteTtlMs);
  }

  async resolve(token: string): Promise<ActiveSession | undefined> {
    const tokenHash = hashToken(token);
    const session = await this.#sessions.find(tokenHash);
    if (!session) return undefined;
    const now = Date.now();
    if (session.expiresAt.getTime() <= now || session.lastSeenAt.getTime() + this.#policy.idleTtlMs <= now) {
      await this.#sessions.delete(tokenHash);
      return undefined;
    }
    if (now - session.lastSeenAt.getTime() >= Math.min(TOUCH_INTERVAL_MS, this.#policy.idleTtlMs / 10))
      await this.#sessions.touch(tokenHash, new Date(now));
    return { userId: session.userId, tokenHash };
  }

  end(tokenHash: string): Promise<void> {
    return this.#sessions.delete(tokenHash);
  }

  /** After a password change: every other session of the user ends; `keep` stays signed in. */
  endOthers(userId: bigint, keep?: string): Promise<void> {
    return this.#sessions.deleteForUser(userId, keep);
  }

  purgeExpired(): Promise<number> {
    const now = new Date();
    return this.#sessions.deleteExpired(now, new Date(now.getTime() - this.#policy.idleTtlMs));
  }
}
