// The limits on registration, on email changes and on asks that store a row per client address
// (issue 25). Counts over a window are kept in
// the shared database, so every instance counts together; the registrations in progress are
// counted in memory, per process, since what they protect is this process's hash slots.
import { createHash } from 'node:crypto';
import type { LimitScope } from '../db/schema.ts';
import { addressKey } from '../shared/address.ts';
import { AppError, HashOverloadedError } from '../shared/errors.ts';
import type { LimitEventsRepository } from './limits-repository.ts';

interface Counted {
  scope: LimitScope;
  subject: string;
  limit: number;
}

/** Events recorded by `WindowLimits.take`, to give back when what they counted did not happen. */
export interface Taken {
  giveBack(): Promise<void>;
}

/**
 * Sliding-window counts in the shared database, in the shape of the forgot-password limit: an
 * event is recorded first and counted after, so simultaneous requests see each other (a burst
 * beyond the limit may be refused whole, never admitted whole); one over the limit is removed.
 */
export class WindowLimits {
  readonly #events: LimitEventsRepository;
  readonly #windowMs: number;
  readonly #now: () => number;

  constructor(deps: { events: LimitEventsRepository; windowMs: number; now: () => number }) {
    this.#events = deps.events;
    this.#windowMs = deps.windowMs;
    this.#now = deps.now;
  }

  /**
   * Records one event for each of `counts`; when any of them is then over its limit, removes
   * them all and answers the seconds until that count has room again. Otherwise the events stay.
   * `events` may be bound to the caller's transaction: the events then commit with its change.
   */
  async take(
    counts: readonly Counted[],
    events: LimitEventsRepository = this.#events,
  ): Promise<{ taken: Taken } | { retryAfterSeconds: number }> {
    const now = this.#now();
    const since = now - this.#windowMs;
    const ids: bigint[] = [];
    for (const c of counts) ids.push(await events.add(c.scope, c.subject, now));
    const over: Counted[] = [];
    for (const c of counts) {
      if ((await events.countSince(c.scope, c.subject, since)) > c.limit) over.push(c);
    }
    if (over.length === 0) return { taken: { giveBack: () => events.remove(ids) } };
    await events.remove(ids);
    // Room comes back when the limit-th newest of the others leaves the window.
    let retryAfterSeconds = 1;
    for (const c of over) {
      const nth = await events.nthNewestSince(c.scope, c.subject, since, c.limit);
      const freesAt = (nth ?? now) + this.#windowMs;
      retryAfterSeconds = Math.max(retryAfterSeconds, Math.ceil((freesAt - now) / 1000));
    }
    return { retryAfterSeconds };
  }

  /** Background clean-up: events of `scopes` past the window count for nothing. */
  async purge(scopes: readonly LimitScope[]): Promise<void> {
    await this.#events.purgeBefore(scopes, this.#now() - this.#windowMs);
  }
}

export interface RegistrationPolicy {
  perAddress: number;
  windowMs: number;
  concurrentPerAddress: number;
  concurrent: number;
}

const tooMany = (message: string, retryAfterSeconds: number) =>
  new AppError('TOO_MANY_REQUESTS', message, 429, { 'retry-after': String(retryAfterSeconds) });

/**
 * POST /api/users from a client address: at most `concurrentPerAddress` from one address and
 * `concurrent` in all being worked on at once here (more are refused at once, before any
 * hashing), and `perAddress` per window across every instance.
 */
export class RegistrationLimits {
  readonly #policy: RegistrationPolicy;
  readonly #window: WindowLimits;
  #inProgress = 0;
  readonly #byAddress = new Map<string, number>();

  constructor({
    policy,
    events,
    now,
  }: { policy: RegistrationPolicy; events: LimitEventsRepository; now: () => number }) {
    this.#policy = policy;
    this.#window = new WindowLimits({ events, windowMs: policy.windowMs, now });
  }

  /**
   * Runs `register` within the limits for a registration from `address`. It is counted in the
   * window unless the server was too busy to hash it (not the client's doing).
   */
  async run<T>(address: string, register: () => Promise<T>): Promise<T> {
    const key = addressKey(address);
    const fromAddress = this.#byAddress.get(key) ?? 0;
    // Checked and counted in the same turn of the event loop: no await between them.
    if (fromAddress >= this.#policy.concurrentPerAddress)
      throw tooMany('Too many registrations at once from this address; try again shortly.', 1);
    this.#byAddress.set(key, fromAddress + 1);
    try {
      const verdict = await this.#window.take([
        { scope: 'registration', subject: key, limit: this.#policy.perAddress },
      ]);
      if ('retryAfterSeconds' in verdict)
        throw tooMany(
          'Too many registrations from this address; try again later.',
          verdict.retryAfterSeconds,
        );
      // The process-wide slot is taken only by a registration its address's window let through,
      // so networks that are over their own limit cannot keep it full for everyone else.
      if (this.#inProgress >= this.#policy.concurrent) {
        await verdict.taken.giveBack();
        throw new AppError(
          'UNAVAILABLE',
          'The server is handling too many registrations right now; try again shortly.',
          503,
          { 'retry-after': '1' },
        );
      }
      this.#inProgress++;
      try {
        return await register();
      } catch (error) {
        if (error instanceof HashOverloadedError) await verdict.taken.giveBack();
        throw error;
      } finally {
        this.#inProgress--;
      }
    } finally {
      const left = (this.#byAddress.get(key) ?? 1) - 1;
      if (left === 0) this.#byAddress.delete(key);
      else this.#byAddress.set(key, left);
    }
  }

  purge(): Promise<void> {
    return this.#window.purge(['registration']);
  }
}

export interface EmailChangePolicy {
  perAccount: number;
  perMailbox: number;
  windowMs: number;
}

/** A mailbox as counted: a digest of its email key, a fixed size whatever the address. */
const mailbox = (emailKey: string) => createHash('sha256').update(emailKey).digest('hex');

/**
 * An email change mails the new address a link and the old one a notice. At most `perAccount`
 * changes per account, and `perMailbox` such mails to any one address, per window; a change
 * that would go beyond either is refused (429), so every change that happens is announced.
 */
export class EmailChangeLimits {
  readonly #policy: EmailChangePolicy;
  readonly #window: WindowLimits;

  constructor({
    policy,
    events,
    now,
  }: { policy: EmailChangePolicy; events: LimitEventsRepository; now: () => number }) {
    this.#policy = policy;
    this.#window = new WindowLimits({ events, windowMs: policy.windowMs, now });
  }

  /**
   * Counts a change of `userId`'s email from the mailbox `oldEmailKey` to `newEmailKey` (the users
   * feature's email keys, so that one mailbox in any letter case counts once) in the transaction
   * of the change (`events` bound to it), or throws 429 for the transaction to roll back.
   */
  async take(
    events: LimitEventsRepository,
    userId: bigint,
    oldEmailKey: string,
    newEmailKey: string,
  ): Promise<void> {
    const verdict = await this.#window.take(
      [
        { scope: 'email-change', subject: String(userId), limit: this.#policy.perAccount },
        { scope: 'email-change-mail', subject: mailbox(newEmailKey), limit: this.#policy.perMailbox },
        { scope: 'email-change-mail', subject: mailbox(oldEmailKey), limit: this.#policy.perMailbox },
      ],
      events,
    );
    if ('retryAfterSeconds' in verdict) {
      throw tooMany(
        'email: too many email changes for this account or mails to these addresses; try again later',
        verdict.retryAfterSeconds,
      );
    }
  }

  purge(): Promise<void> {
    return this.#window.purge(['email-change', 'email-change-mail']);
  }
}

export interface AddressLimitPolicy {
  /** Asks that each store a row (a passkey challenge, a provider sign-in's state) per client address per window. */
  perAddress: number;
  windowMs: number;
}

/**
 * Asks per client address that each store a row until it expires (passkey sign-in options, provider
 * sign-ins started): without a limit one client could fill the table.
 */
export class AddressLimits {
  readonly #policy: AddressLimitPolicy;
  readonly #window: WindowLimits;
  readonly #scope: LimitScope;
  readonly #message: string;

  constructor({
    policy,
    events,
    now,
    scope,
    message,
  }: {
    policy: AddressLimitPolicy;
    events: LimitEventsRepository;
    now: () => number;
    scope: LimitScope;
    /** The 429's message: what was asked too often. */
    message: string;
  }) {
    this.#policy = policy;
    this.#window = new WindowLimits({ events, windowMs: policy.windowMs, now });
    this.#scope = scope;
    this.#message = message;
  }

  async take(address: string): Promise<void> {
    const verdict = await this.#window.take([
      { scope: this.#scope, subject: addressKey(address), limit: this.#policy.perAddress },
    ]);
    if ('retryAfterSeconds' in verdict) throw tooMany(this.#message, verdict.retryAfterSeconds);
  }

  purge(): Promise<void> {
    return this.#window.purge([this.#scope]);
  }
}
