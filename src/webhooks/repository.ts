// The webhooks' tables: receivers, the event types each listens to, and the deliveries, which
// are an outbox like mail's (mail/repository.ts): recorded with the change, claimed with a lease,
// marked by the claimant only. Deliveries of one receiver for one user go out in order: a
// delivery is claimable only while no earlier one of the pair is still pending.

import {
  type ColumnType,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type QueryCreator,
  type SqlBool,
  sql,
} from 'kysely';
import { type EpochMs, timestamp as sqlTimestamp, type Tables } from '../db/schema.ts';
import type { NextAttempt } from '../kernel/outbox.ts';

type Timestamp = ColumnType<Date, string, string>;
type MaybeTimestamp = ColumnType<Date | null, string | null | undefined, string | null>;

export interface WebhooksTable {
  id: ColumnType<bigint, never, never>;
  url: string;
  events: string;
  secret_sealed: string;
  created_at: Timestamp;
  created_by: ColumnType<bigint | null, bigint | null, never>;
}

export interface WebhookEventsTable {
  event_type: string;
  webhook_id: ColumnType<bigint, bigint, never>;
}

export type DeliveryStatus = 'pending' | 'sent' | 'failed';

export interface WebhookDeliveriesTable {
  id: ColumnType<bigint, never, never>;
  webhook_id: ColumnType<bigint, bigint, never>;
  message_id: string;
  event_type: string;
  user_id: ColumnType<bigint, bigint, never>;
  payload: string;
  created_at: Timestamp;
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>;
  attempts: ColumnType<number, number | undefined, number>;
  retry_until: EpochMs;
  next_attempt_at: EpochMs;
  claimed_by: string | null;
  claimed_until: ColumnType<bigint | null, number | null | undefined, number | null>;
  last_attempt_at: MaybeTimestamp;
  last_status: ColumnType<number | null, number | null | undefined, number | null>;
  last_error: string | null;
  sent_at: MaybeTimestamp;
}

declare module '../db/schema.ts' {
  interface Tables {
    webhooks: WebhooksTable;
    webhook_events: WebhookEventsTable;
    webhook_deliveries: WebhookDeliveriesTable;
  }
}

export interface WebhookRecord {
  id: bigint;
  url: string;
  events: string[];
  createdAt: Date;
  createdBy: bigint | null;
}

/** An event for every receiver listening to its type: one delivery row each. */
export interface WebhookNotice {
  type: string;
  userId: bigint;
  messageId: string;
  /** The body to POST, JSON. */
  payload: string;
  createdAt: Date;
  /** Epoch ms after which a delivery still failing is given up. */
  retryUntil: number;
}

export interface ClaimedDelivery {
  id: bigint;
  webhookId: bigint;
  url: string;
  secretSealed: string;
  messageId: string;
  payload: string;
  attempts: number;
  retryUntil: number;
}

export interface DeliveryRecord {
  id: bigint;
  webhookId: bigint;
  messageId: string;
  type: string;
  userId: bigint;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  createdAt: Date;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  sentAt: Date | null;
}

export interface WebhooksRepositoryOptions {
  /** PostgreSQL: claim with FOR UPDATE SKIP LOCKED, so instances never wait on each other's rows. */
  rowLocks: boolean;
}

const LAST_ERROR_MAX = 500;

const webhookOf = (row: {
  id: bigint;
  url: string;
  events: string;
  created_at: Date;
  created_by: bigint | null;
}): WebhookRecord => ({
  id: row.id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  createdAt: row.created_at,
  createdBy: row.created_by,
});

/** A delivery row's values that come from its event, or a prepared statement's slots for them. */
export interface DeliveryValues {
  message_id: unknown;
  user_id: unknown;
  payload: unknown;
  created_at: unknown;
  retry_until: unknown;
  next_attempt_at: unknown;
}

/** A notice's values for its delivery rows. */
export function deliveryValues(notice: WebhookNotice): DeliveryValues {
  return {
    message_id: notice.messageId,
    user_id: notice.userId,
    payload: notice.payload,
    created_at: notice.createdAt.toISOString(),
    retry_until: BigInt(notice.retryUntil),
    next_attempt_at: BigInt(notice.createdAt.getTime()),
  };
}

/**
 * The INSERT … SELECT that writes one delivery per receiver listening to `type`: the repository's
 * own, and a sign-in grant's data-modifying WITH, which adds `when` (only once its session exists).
 */
export function insertDeliveries<DB extends Tables>(
  db: QueryCreator<DB>,
  type: string,
  values: DeliveryValues,
  when?: (eb: ExpressionBuilder<DB, 'webhook_events'>) => Expression<SqlBool>,
) {
  const tables = db as unknown as QueryCreator<Tables>;
  return tables
    .insertInto('webhook_deliveries')
    .columns([
      'webhook_id',
      'message_id',
      'event_type',
      'user_id',
      'payload',
      'created_at',
      'retry_until',
      'next_attempt_at',
    ])
    .expression((eb) => {
      const listening = eb
        .selectFrom('webhook_events')
        .select([
          'webhook_id',
          eb.val(values.message_id).as('message_id'),
          'event_type',
          eb.val(values.user_id).as('user_id'),
          eb.val(values.payload).as('payload'),
          eb.val(values.created_at).as('created_at'),
          eb.val(values.retry_until).as('retry_until'),
          eb.val(values.next_attempt_at).as('next_attempt_at'),
        ])
        .where('event_type', '=', type);
      return when
        ? listening.where((inner) => when(inner as unknown as ExpressionBuilder<DB, 'webhook_events'>))
        : listening;
    });
}

export class WebhooksRepository {
  readonly #db: Kysely<Tables>;
  readonly #options: WebhooksRepositoryOptions;
  constructor(db: Kysely<Tables>, options: WebhooksRepositoryOptions) {
    this.#db = db;
    this.#options = options;
  }

  /** A receiver and its event types; call in a transaction (two tables). `seal` seals its secret for the new id. */
  async create(
    input: { url: string; events: readonly string[]; createdBy: bigint | null; now: Date },
    seal: (id: bigint) => string,
  ): Promise<WebhookRecord> {
    const row = await this.#db
      .insertInto('webhooks')
      .values({
        url: input.url,
        events: JSON.stringify(input.events),
        secret_sealed: '',
        created_at: input.now.toISOString(),
        created_by: input.createdBy,
      })
      .returning(['id', 'url', 'events', 'created_at', 'created_by'])
      .executeTakeFirstOrThrow();
    await this.#db
      .updateTable('webhooks')
      .set({ secret_sealed: seal(row.id) })
      .where('id', '=', row.id)
      .execute();
    await this.#db
      .insertInto('webhook_events')
      .values(input.events.map((type) => ({ event_type: type, webhook_id: row.id })))
      .execute();
    return webhookOf(row);
  }

  async find(id: bigint): Promise<WebhookRecord | undefined> {
    const row = await this.#db
      .selectFrom('webhooks')
      .select(['id', 'url', 'events', 'created_at', 'created_by'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row && webhookOf(row);
  }

  async list(offset: number, limit: number): Promise<WebhookRecord[]> {
    const rows = await this.#db
      .selectFrom('webhooks')
      .select(['id', 'url', 'events', 'created_at', 'created_by'])
      .orderBy('id')
      .offset(offset)
      .limit(limit)
      .execute();
    return rows.map(webhookOf);
  }

  async count(): Promise<number> {
    const row = await this.#db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Removes the receiver with its subscriptions and every delivery, pending or not (cascade). */
  async delete(id: bigint): Promise<WebhookRecord | undefined> {
    const found = await this.find(id);
    if (!found) return undefined;
    const result = await this.#db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n ? found : undefined;
  }

  /**
   * One delivery per receiver listening to `notice.type`, in one INSERT … SELECT: nothing is
   * written when no one listens, which is what most events of most deployments cost.
   */
  async enqueue(notice: WebhookNotice): Promise<number> {
    const result = await insertDeliveries(this.#db, notice.type, deliveryValues(notice)).executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n);
  }

  /** Several events of one type at once (a bulk import's): one insert per listening receiver's rows. */
  async enqueueMany(type: string, notices: readonly WebhookNotice[]): Promise<number> {
    if (notices.length === 0) return 0;
    const listeners = await this.#db
      .selectFrom('webhook_events')
      .select('webhook_id')
      .where('event_type', '=', type)
      .execute();
    let queued = 0;
    for (const { webhook_id } of listeners) {
      // A few hundred rows a statement keeps every store under its parameter limit.
      for (let i = 0; i < notices.length; i += 500) {
        const slice = notices.slice(i, i + 500);
        await this.#db
          .insertInto('webhook_deliveries')
          .values(
            slice.map((n) => ({
              webhook_id,
              message_id: n.messageId,
              event_type: n.type,
              user_id: n.userId,
              payload: n.payload,
              created_at: n.createdAt.toISOString(),
              retry_until: n.retryUntil,
              next_attempt_at: n.createdAt.getTime(),
            })),
          )
          .execute();
        queued += slice.length;
      }
    }
    return queued;
  }

  /**
   * Claims one due delivery for `claimMs`: pending, not claimed by a live sender, not of a
   * receiver in `busy`, and the earliest pending one of its (receiver, user) pair, so that a
   * user's events reach each receiver in order. The conditions are repeated in the UPDATE, so
   * when two instances race for a row the second re-checks it against the first's claim.
   */
  async claim(
    sender: string,
    now: number,
    claimMs: number,
    busy: readonly bigint[],
  ): Promise<ClaimedDelivery | undefined> {
    const due = (db: Kysely<Tables>) => {
      let query = db
        .selectFrom('webhook_deliveries as d')
        .select('d.id')
        .where('d.status', '=', 'pending')
        .where('d.next_attempt_at', '<=', BigInt(now))
        .where((eb) => eb.or([eb('d.claimed_until', 'is', null), eb('d.claimed_until', '<', BigInt(now))]))
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('webhook_deliveries as e')
                .select('e.id')
                .whereRef('e.webhook_id', '=', 'd.webhook_id')
                .whereRef('e.user_id', '=', 'd.user_id')
                .whereRef('e.id', '<', 'd.id')
                .where('e.status', '=', 'pending'),
            ),
          ),
        )
        .orderBy('d.next_attempt_at')
        .orderBy('d.id')
        .limit(1);
      if (busy.length > 0) query = query.where('d.webhook_id', 'not in', busy);
      return query;
    };
    let picked = due(this.#db);
    if (this.#options.rowLocks) picked = picked.forUpdate().skipLocked();
    const claimed = await this.#db
      .updateTable('webhook_deliveries')
      .set({ claimed_by: sender, claimed_until: now + claimMs })
      // `=`, a scalar subquery run once: PostgreSQL would run `IN (… LIMIT 1 …)` as a semi join,
      // the subquery again for every row, and claim several deliveries where one is sent.
      .where('id', '=', picked)
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', BigInt(now))]))
      .returning(['id', 'webhook_id', 'message_id', 'payload', 'attempts', 'retry_until'])
      .executeTakeFirst();
    if (!claimed) return undefined;
    const hook = await this.#db
      .selectFrom('webhooks')
      .select(['url', 'secret_sealed'])
      .where('id', '=', claimed.webhook_id)
      .executeTakeFirst();
    // Deleted between the two statements: its deliveries went with it.
    if (!hook) return undefined;
    return {
      id: claimed.id,
      webhookId: claimed.webhook_id,
      url: hook.url,
      secretSealed: hook.secret_sealed,
      messageId: claimed.message_id,
      payload: claimed.payload,
      attempts: claimed.attempts,
      retryUntil: Number(claimed.retry_until),
    };
  }

  /** Delivered: only by the sender whose claim it is (a sender whose lease ran out changes nothing). */
  async markSent(id: bigint, sender: string, at: Date, status: number, attempts: number): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({
        status: 'sent',
        attempts,
        sent_at: at.toISOString(),
        last_attempt_at: at.toISOString(),
        last_status: status,
        last_error: null,
        claimed_until: null,
      })
      .where('id', '=', id)
      .where('claimed_by', '=', sender)
      .execute();
  }

  /**
   * Not delivered this time: tried again at `nextAttemptAt`, or marked failed when `failed`. The
   * same user's later deliveries to the receiver wait behind it, and are made due no earlier, so
   * that claims do not step over a growing queue held back by a receiver that is down.
   */
  async markAttemptFailed(
    id: bigint,
    sender: string,
    attempt: { attempts: number; at: Date; status: number | null; error: string },
    next: NextAttempt,
  ): Promise<void> {
    if (!next.failed) {
      const head = await this.#db
        .selectFrom('webhook_deliveries')
        .select(['webhook_id', 'user_id'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (head)
        await this.#db
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: next.nextAttemptAt })
          .where('webhook_id', '=', head.webhook_id)
          .where('user_id', '=', head.user_id)
          .where('status', '=', 'pending')
          .where('id', '>', id)
          .where('next_attempt_at', '<', BigInt(next.nextAttemptAt))
          .execute();
    }
    await this.#db
      .updateTable('webhook_deliveries')
      .set({
        attempts: attempt.attempts,
        last_attempt_at: attempt.at.toISOString(),
        last_status: attempt.status,
        last_error: attempt.error.slice(0, LAST_ERROR_MAX),
        claimed_until: null,
        ...(next.failed ? { status: 'failed' as const } : { next_attempt_at: next.nextAttemptAt }),
      })
      .where('id', '=', id)
      .where('claimed_by', '=', sender)
      .execute();
  }

  /** A receiver's deliveries, newest first, optionally of one status. */
  async deliveries(
    webhookId: bigint,
    status: DeliveryStatus | undefined,
    offset: number,
    limit: number,
  ): Promise<DeliveryRecord[]> {
    let query = this.#db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', webhookId)
      .orderBy('id', 'desc')
      .offset(offset)
      .limit(limit);
    if (status) query = query.where('status', '=', status);
    return (await query.execute()).map(deliveryOf);
  }

  /** How many deliveries the receiver has (of `status`), counted no further than `cap`. */
  async countDeliveries(webhookId: bigint, status: DeliveryStatus | undefined, cap: number): Promise<number> {
    const row = await this.#db
      .selectFrom((db) => {
        let kept = db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', webhookId);
        if (status) kept = kept.where('status', '=', status);
        return kept.limit(cap).as('kept');
      })
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * A delivery sent again (a failed one, or a sent one the receiver lost): pending, due now, with
   * a fresh window of retries. One already pending is only made due now.
   */
  async retry(
    webhookId: bigint,
    deliveryId: bigint,
    now: number,
    retryUntil: number,
  ): Promise<DeliveryRecord | undefined> {
    const row = await this.#db
      .updateTable('webhook_deliveries')
      .set({
        status: 'pending',
        next_attempt_at: now,
        // A fresh start: its backoff begins again at a second.
        attempts: 0,
        sent_at: null,
        retry_until: sql<number>`case when status = 'pending' then retry_until else ${BigInt(retryUntil)} end`,
      })
      .where('id', '=', deliveryId)
      .where('webhook_id', '=', webhookId)
      .returningAll()
      .executeTakeFirst();
    return row && deliveryOf(row);
  }

  /** Deliveries not yet sent nor given up on, and the epoch ms of the oldest (all instances). */
  async backlog(): Promise<{ waiting: number; oldest: Date | null }> {
    const row = await this.#db
      .selectFrom('webhook_deliveries')
      .select((eb) => [eb.fn.countAll<bigint | number>().as('n'), eb.fn.min('created_at').as('oldest')])
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    const oldest = row.oldest as Date | string | null;
    return { waiting: Number(row.n), oldest: oldest === null ? null : new Date(oldest) };
  }

  /** Sent and failed deliveries recorded before `before` are removed, at most `limit` of them. */
  async purgeFinished(before: Date, limit: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('webhook_deliveries')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('status', '!=', 'pending')
          .where('created_at', '<', sqlTimestamp(before))
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function deliveryOf(row: {
  id: bigint;
  webhook_id: bigint;
  message_id: string;
  event_type: string;
  user_id: bigint;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  created_at: Date;
  next_attempt_at: bigint;
  last_attempt_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  sent_at: Date | null;
}): DeliveryRecord {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    messageId: row.message_id,
    type: row.event_type,
    userId: row.user_id,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    createdAt: row.created_at,
    nextAttemptAt: row.status === 'pending' ? new Date(Number(row.next_attempt_at)) : null,
    lastAttemptAt: row.last_attempt_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
    sentAt: row.sent_at,
  };
}
