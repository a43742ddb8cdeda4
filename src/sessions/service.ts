import { hash, randomBytes } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { type Awaitable, mapAwaitable } from '../shared/awaitable.ts';
import { sessionsEnded } from './journal.ts';
import type {
  Liveness,
  NewSession,
  SessionOwnerRow,
  SessionRecord,
  SessionsRepository,
} from './repository.ts';

export interface SessionPolicy {
  /** Lifetime from sign-in, whatever the activity. */
  absoluteTtlMs: number;
  /** Lifetime without a request. */
  idleTtlMs: number;
}

export interface StartOptions {
  /** The client's User-Agent, kept (shortened) so a user can tell their sessions apart. */
  userAgent?: string | undefined;
  /** A transaction's repository, so the session commits (or not) with the rest of it. */
  repository?: SessionsRepository;
  /** How the person signed in: RFC 8176 method references (`pwd`, `otp`, `mfa`…). */
  amr?: readonly string[] | undefined;
}

/**
 * How many sessions a list shows: the newest. A bound a client can rely on (the document says it),
 * without paging a list that holds a handful for any real user.
 */
export const SESSION_LIST_MAX = 100;

/** What a new session's owner may see: the token once, and the session's public description. */
export interface StartedSession {
  token: string;
  session: { id: string; createdAt: Date; expiresAt: Date };
}

const USER_AGENT_MAX = 256;

export interface ActiveSession {
  userId: bigint;
  tokenHash: string;
  /** The public id. */
  id: string;
  createdAt: Date;
  expiresAt: Date;
  /** How it was signed in to (RFC 8176, space-separated), read with the session; null: not recorded. */
  amr: string | null;
  /** The user's row as it was when the session was checked, at the start of this request. */
  owner: SessionOwnerRow;
}

/** One of a user's sessions as they see it; `current` is the one asking. */
export interface SessionView {
  id: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  current: boolean;
  userAgent: string | null;
}

// last_seen_at is written at most this often per session (or a tenth of the idle lifetime, if
// shorter), so authenticated reads do not each cost a write.
const TOUCH_INTERVAL_MS = 60_000;

/** 256 bits from the CSPRNG, base64url: opaque to clients, useless to guess. */
function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Only this digest is stored, so a database leak does not hand out live sessions. Every
 * authenticated request computes it: the one-shot hash skips building a Hash object.
 */
function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Milliseconds since the epoch; tests pass their own to move time without sleeping. */
export type Clock = () => number;

export class SessionService {
  readonly #sessions: SessionsRepository;
  readonly #policy: SessionPolicy;
  readonly #now: Clock;

  readonly #transaction: InTransaction<{ sessions: SessionsRepository; journal: Journal }> | undefined;

  constructor(deps: {
    sessions: SessionsRepository;
    policy: SessionPolicy;
    now?: Clock;
    /** Ending sessions records it (audit and session.ended) in the same transaction. */
    transaction?: InTransaction<{ sessions: SessionsRepository; journal: Journal }>;
  }) {
    this.#sessions = deps.sessions;
    this.#policy = deps.policy;
    this.#now = deps.now ?? Date.now;
    this.#transaction = deps.transaction;
  }

  /** Runs `work` with the journal of its transaction (without one, as before: nothing recorded). */
  async #recorded(work: (repos: { sessions: SessionsRepository; journal?: Journal }) => Promise<void>) {
    if (this.#transaction) await this.#transaction(work);
    else await work({ sessions: this.#sessions });
  }

  get policy(): SessionPolicy {
    return this.#policy;
  }

  /**
   * A new session for every sign-in: a token is never reused or accepted from a client. Inside a
   * transaction, pass its sessions repository so the session commits (or not) with the rest.
   */
  async start(userId: bigint, options: StartOptions = {}): Promise<StartedSession> {
    const { row, started } = this.issue(userId, options.userAgent, options.amr);
    await (options.repository ?? this.#sessions).insert(row);
    return started;
  }

  /**
   * A new session, not yet stored: the row to insert and what its owner is given once it is.
   * For a caller whose own statement stores it with other writes (a sign-in's, auth/).
   */
  issue(
    userId: bigint,
    userAgent: string | undefined,
    amr?: readonly string[],
  ): { row: NewSession; started: StartedSession } {
    const token = newToken();
    const now = new Date(this.#now());
    const session = { id: randomBytes(16).toString('hex'), createdAt: now, expiresAt: this.#expiry(now) };
    return {
      row: {
        tokenHash: hashToken(token),
        publicId: session.id,
        userId,
        now,
        expiresAt: session.expiresAt,
        userAgent: userAgent?.slice(0, USER_AGENT_MAX) ?? null,
        amr: amr && amr.length > 0 ? amr.join(' ') : null,
      },
      started: { token, session },
    };
  }

  #expiry(now: Date): Date {
    return new Date(now.getTime() + this.#policy.absoluteTtlMs);
  }

  /**
   * The live session of a token, or undefined. A value rather than a promise when the lookup
   * answered at once (SQLite) and the session needs no write, which is nearly every request: a
   * signed-in page view then costs no promise (shared/awaitable.ts).
   */
  resolve(token: string): Awaitable<ActiveSession | undefined> {
    const tokenHash = hashToken(token);
    return mapAwaitable(this.#sessions.find(tokenHash), (session) => this.#judge(tokenHash, session));
  }

  /** How a live session was signed in to (its RFC 8176 `amr`), for the OpenID Connect provider. */
  methodsOf(session: ActiveSession): string[] {
    return session.amr ? session.amr.split(' ') : [];
  }

  #judge(tokenHash: string, session: SessionRecord | undefined): Awaitable<ActiveSession | undefined> {
    // A disabled account's sessions are ended when it is disabled; one granted in a race with
    // that is refused here.
    if (!session || session.owner.disabled_at !== null) return undefined;
    const now = this.#now();
    if (session.expiresAt.getTime() <= now || session.lastSeenAt.getTime() + this.#policy.idleTtlMs <= now)
      return this.#sessions.delete(tokenHash).then(() => undefined);
    const active: ActiveSession = {
      userId: session.userId,
      tokenHash,
      id: session.id,
      createdAt: session.createdAt,
      expiresAt: session.expiresAt,
      amr: session.amr,
      owner: session.owner,
    };
    if (now - session.lastSeenAt.getTime() >= Math.min(TOUCH_INTERVAL_MS, this.#policy.idleTtlMs / 10))
      return this.#sessions.touch(tokenHash, new Date(now)).then(() => active);
    return active;
  }

  /** Sign-out: the session ends, recorded as the user's sign-out. */
  async end(session: ActiveSession): Promise<void> {
    await this.#recorded(async ({ sessions, journal }) => {
      const ended = await sessions.delete(session.tokenHash);
      // Sign-out needs no session to answer, so the request's actor is not known: it is the session's owner.
      if (ended !== undefined)
        if (journal)
          await sessionsEnded(journal, session.userId, [ended], 'signout', { actorId: session.userId });
    });
  }

  /** The caller's live sessions, newest first (at most SESSION_LIST_MAX), the caller's own marked `current`. */
  async list(caller: ActiveSession): Promise<SessionView[]> {
    const sessions = await this.#sessions.listLive(caller.userId, this.#liveness(), SESSION_LIST_MAX);
    return sessions.map((s) => ({ ...s, current: s.id === caller.id }));
  }

  /** Any user's live sessions, newest first, for support staff; `current` marks the viewer's own. */
  async listOf(userId: bigint, viewer: ActiveSession): Promise<SessionView[]> {
    const sessions = await this.#sessions.listLive(userId, this.#liveness(), SESSION_LIST_MAX);
    return sessions.map((s) => ({ ...s, current: s.id === viewer.id }));
  }

  /**
   * Ends one of the caller's own live sessions by its public id; false when they have none by
   * that id. The row is deleted, so every instance refuses the token from its next request on.
   */
  async endById(caller: ActiveSession, id: string): Promise<boolean> {
    let ended = false;
    await this.#recorded(async ({ sessions, journal }) => {
      ended = await sessions.deleteLive(caller.userId, id, this.#liveness());
      if (ended && journal)
        await sessionsEnded(journal, caller.userId, [id], caller.id === id ? 'signout' : 'revoked');
    });
    return ended;
  }

  /** Ends every session of the caller's but the one asking. */
  async endOthers(caller: ActiveSession): Promise<void> {
    await this.#recorded(async ({ sessions, journal }) => {
      const ended = await sessions.deleteForUser(caller.userId, caller.tokenHash);
      if (journal) await sessionsEnded(journal, caller.userId, ended, 'revoked');
    });
  }

  /** The bounds resolve() holds a session to, so a listed session is one resolve() accepts. */
  #liveness(): Liveness {
    const now = this.#now();
    return { now: new Date(now), idleSince: new Date(now - this.#policy.idleTtlMs) };
  }

  purgeExpired(): Promise<number> {
    const now = new Date(this.#now());
    return this.#sessions.deleteExpired(now, new Date(now.getTime() - this.#policy.idleTtlMs));
  }
}
