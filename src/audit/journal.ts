// The one way account events are recorded: an audit record, and for the events webhooks carry, a
// delivery to each receiver listening, both written with the repositories of the change's own
// transaction, so that each exists exactly when the change does. After the commit the webhook
// sender is woken; until then nothing it could see was written.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';
import type { CommitHooks } from '../db/transactions.ts';
import type { Signal } from '../shared/signal.ts';
import { type WebhookEvent, webhookBody } from '../webhooks/events.ts';
import { type WebhookNotice, WebhooksRepository } from '../webhooks/repository.ts';
import { asNoOne, currentActor } from './context.ts';
import { type AuditActor, type AuditEvent, AuditRepository } from './repository.ts';

export interface AccountEvent {
  /** The audit record's type, e.g. `password.changed`, `signin.failed`, `admin.user.disabled`. */
  type: string;
  /** The account it is about, if any. */
  userId: bigint | null;
  /** Never a secret, never a password. */
  details?: Readonly<Record<string, unknown>>;
  /** Who did it, where the request's own actor is not the answer (a sign-in: the user signing in). */
  actor?: Partial<AuditActor>;
}

export interface JournalPolicy {
  /** How long a delivery is retried before it is given up on. */
  webhookRetryMs: number;
  /** Whether successful sign-ins are recorded in the audit log (AUDIT_SIGNINS). */
  auditSignins: boolean;
}

export interface JournalDeps {
  now: () => number;
  /** Told after the commit of a change that queued deliveries: the webhook sender listens. */
  webhooksDue: Signal;
  policy: JournalPolicy;
  rowLocks: boolean;
  /** Told each event once its change committed, and each `count`ed one (the account metrics). */
  onEvent?: (type: string, details?: Readonly<Record<string, unknown>>) => void;
}

/**
 * How long one tallied record counts its events (a throttled sign-in's): an hour, aligned to the
 * clock's hours, so that every instance names the same window. The log grows by at most one such
 * record per subject and hour, whatever the rate of the events.
 */
export const TALLY_WINDOW_MS = 3600_000;

/** Standard Webhooks' webhook-id: unique per event, the same at every attempt and for every receiver. */
export const newMessageId = () => `msg_${randomBytes(16).toString('base64url')}`;

/** The event as recorded: the request's actor, with what the event says of its own actor over it. */
function auditEventOf(event: AccountEvent, actor: AuditActor): AuditEvent {
  return { ...actor, ...event.actor, type: event.type, userId: event.userId, details: event.details ?? {} };
}

export class Journal {
  readonly #audit: AuditRepository;
  readonly #webhooks: WebhooksRepository;
  readonly #commit: CommitHooks;
  readonly #deps: JournalDeps;

  constructor(db: Kysely<Tables>, commit: CommitHooks, deps: JournalDeps) {
    this.#audit = new AuditRepository(db);
    this.#webhooks = new WebhooksRepository(db, { rowLocks: deps.rowLocks });
    this.#commit = commit;
    this.#deps = deps;
  }

  get policy(): JournalPolicy {
    return this.#deps.policy;
  }

  /** The audit record of `event`, and the deliveries of `notify` when given. */
  async record(event: AccountEvent, notify?: WebhookEvent): Promise<void> {
    const now = new Date(this.#deps.now());
    await this.#audit.record(auditEventOf(event, currentActor()), now);
    if (notify) await this.#enqueue(notify, now);
    const counted = this.#deps.onEvent;
    if (counted) this.#commit.afterCommit(() => counted(event.type, event.details));
  }

  /**
   * An event a client can repeat at its own rate (a throttled sign-in): counted in the one record
   * of `subject` (what it is about: an account, a network, and the method) for the current window,
   * which the window's first event writes. Never a webhook event: no one is told each of them.
   */
  async tally(event: AccountEvent, subject: string): Promise<void> {
    const now = this.#deps.now();
    const window = new Date(now - (now % TALLY_WINDOW_MS)).toISOString();
    await this.#audit.tally(
      auditEventOf(event, currentActor()),
      `${event.type} ${subject} ${window}`,
      new Date(now),
    );
    const counted = this.#deps.onEvent;
    if (counted) this.#commit.afterCommit(() => counted(event.type, event.details));
  }

  /** An event the metrics count that leaves no audit record (a forgot-password ask, a refused link). */
  count(type: string): void {
    this.#deps.onEvent?.(type);
  }

  /** Many events of one kind at once (a bulk import), each with its notice of `notifyType`. */
  async recordMany(events: readonly (AccountEvent & { notify: WebhookEvent })[]): Promise<void> {
    if (events.length === 0) return;
    const now = new Date(this.#deps.now());
    const actor = currentActor();
    for (let i = 0; i < events.length; i += 500) {
      await this.#audit.recordMany(
        events.slice(i, i + 500).map((event) => auditEventOf(event, actor)),
        now,
      );
    }
    const type = events[0]!.notify.type;
    const queued = await this.#webhooks.enqueueMany(
      type,
      events.map((event) => this.#notice(event.notify, now)),
    );
    if (queued > 0) this.#commit.afterCommit(() => asNoOne(() => this.#deps.webhooksDue.notify()));
  }

  /**
   * Sessions of `userId` that a change ended (`reason`: signout, revoked, password_changed, …):
   * one audit record and one session.ended event for them all; nothing when none was live.
   */
  async sessionsEnded(
    userId: bigint,
    sessionIds: readonly string[],
    reason: string,
    actor?: Partial<AuditActor>,
  ): Promise<void> {
    if (sessionIds.length === 0) return;
    await this.record(
      {
        type: reason === 'signout' ? 'signout' : 'session.ended',
        userId,
        details: { sessionIds, reason },
        ...(actor ? { actor } : {}),
      },
      { type: 'session.ended', userId, data: { sessionIds, reason } },
    );
  }

  /**
   * The audit record and the webhook notice of an event, for a repository that writes them in a
   * statement of its own (a sign-in's session grant); `audit` is undefined when AUDIT_SIGNINS is off
   * and the event is a sign-in's.
   */
  prepare(
    event: AccountEvent,
    notify: WebhookEvent,
    at: Date,
    signin = false,
  ): { audit: AuditEvent | undefined; notice: WebhookNotice } {
    const audit = signin && !this.#deps.policy.auditSignins ? undefined : auditEventOf(event, currentActor());
    return { audit, notice: this.#notice(notify, at) };
  }

  /** After a commit that queued deliveries (counted by the caller): the sender runs. */
  queued(count: number): void {
    if (count > 0) asNoOne(() => this.#deps.webhooksDue.notify());
  }

  #notice(event: WebhookEvent, now: Date): WebhookNotice {
    return {
      type: event.type,
      userId: event.userId,
      messageId: newMessageId(),
      payload: webhookBody(event, now),
      createdAt: now,
      retryUntil: now.getTime() + this.#deps.policy.webhookRetryMs,
    };
  }

  /** The deliveries of `event` alone, for a change whose audit record is written elsewhere. */
  async notify(event: WebhookEvent): Promise<void> {
    await this.#enqueue(event, new Date(this.#deps.now()));
  }

  async #enqueue(event: WebhookEvent, now: Date): Promise<void> {
    const queued = await this.#webhooks.enqueue(this.#notice(event, now));
    if (queued > 0) this.#commit.afterCommit(() => asNoOne(() => this.#deps.webhooksDue.notify()));
  }
}
