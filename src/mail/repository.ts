import type { Kysely } from 'kysely';
import { timestamp as sqlTimestamp, type Tables } from '../db/schema.ts';
import type { NextAttempt } from '../kernel/outbox.ts';

export interface OutgoingMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface ClaimedMessage extends OutgoingMessage {
  id: bigint;
  attempts: number;
  createdAt: Date;
}

export interface OutboxRepositoryOptions {
  /** PostgreSQL: claim with FOR UPDATE SKIP LOCKED, so senders never wait on each other's rows. */
  rowLocks: boolean;
}

/** The durable outbox: a message is a row from the transaction that caused it until it is sent. */
export class OutboxRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: OutboxRepositoryOptions;
  constructor(db: Kysely<Tables>, options: OutboxRepositoryOptions) {
    this.#db = db;
    this.#options = options;
  }

  async add(message: OutgoingMessage, now: Date): Promise<bigint> {
    const row = await this.#db
      .insertInto('mail_outbox')
      .values({
        recipient: message.to,
        subject: message.subject,
        text_body: message.text,
        html_body: message.html,
        created_at: now.toISOString(),
        next_attempt_at: now.getTime(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /**
   * Claims up to `limit` messages that are due and not claimed by a live sender, for `claimMs`.
   * The lease is also in the outer WHERE, so when two senders race for a row, the one that
   * updates second re-checks it against the first's claim and skips it (PostgreSQL re-evaluates
   * the row after waiting; SQLite runs one writer at a time).
   */
  async claim(sender: string, now: number, claimMs: number, limit: number): Promise<ClaimedMessage[]> {
    const until = now + claimMs;
    let due = this.#db
      .selectFrom('mail_outbox')
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', BigInt(now))
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', BigInt(now))]))
      .orderBy('id')
      .limit(limit);
    if (this.#options.rowLocks) due = due.forUpdate().skipLocked();
    // A materialized CTE is read once: as `id IN (subquery)`, PostgreSQL may run the subquery as
    // a semi join, again for every row, and claim far more than `limit` messages at once.
    const rows = await this.#db
      .with(
        (cte) => cte('picked').materialized(),
        () => due,
      )
      .updateTable('mail_outbox')
      .set({ claimed_by: sender, claimed_until: until })
      .where('id', 'in', (eb) => eb.selectFrom('picked').select('picked.id'))
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', BigInt(now))]))
      .returning(['id', 'recipient', 'subject', 'text_body', 'html_body', 'attempts', 'created_at'])
      .execute();
    return rows.map((r) => ({
      id: r.id,
      to: r.recipient,
      subject: r.subject,
      text: r.text_body,
      html: r.html_body,
      attempts: r.attempts,
      createdAt: r.created_at,
    }));
  }

  /** Delivered: only by the sender whose claim it is (a sender whose lease ran out changes nothing). */
  async markSent(id: bigint, sender: string, at: Date): Promise<void> {
    await this.#db
      .updateTable('mail_outbox')
      .set({ status: 'sent', sent_at: at.toISOString(), claimed_until: null, last_error: null })
      .where('id', '=', id)
      .where('claimed_by', '=', sender)
      .execute();
  }

  /** Not delivered this time: tried again at `nextAttemptAt`, or marked failed when `failed`. */
  async markAttemptFailed(
    id: bigint,
    sender: string,
    attempts: number,
    error: string,
    next: NextAttempt,
  ): Promise<void> {
    await this.#db
      .updateTable('mail_outbox')
      .set({
        attempts,
        last_error: error.slice(0, 500),
        claimed_until: null,
        ...(next.failed ? { status: 'failed' as const } : { next_attempt_at: next.nextAttemptAt }),
      })
      .where('id', '=', id)
      .where('claimed_by', '=', sender)
      .execute();
  }

  /** Messages not yet sent nor given up on. */
  async waiting(): Promise<number> {
    const row = await this.#db
      .selectFrom('mail_outbox')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Sent and failed messages older than `before` are removed; they were only kept for a while for operators. */
  async purgeFinished(before: Date): Promise<number> {
    const result = await this.#db
      .deleteFrom('mail_outbox')
      .where('status', '!=', 'pending')
      .where('created_at', '<', sqlTimestamp(before))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
