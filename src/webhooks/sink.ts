// The webhooks' part of the journal (kernel/journal.ts): for each announced event, one delivery
// per receiver listening to its type, written with the change's own repositories; the sender is
// woken once the change committed.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Tables } from '../db/schema.ts';
import type { JournalEntry, JournalSink, SinkStatement } from '../kernel/journal.ts';
import type { Signal } from '../shared/signal.ts';
import { webhookBody } from './events.ts';
import { deliveryValues, insertDeliveries, type WebhookNotice, WebhooksRepository } from './repository.ts';

export interface WebhooksSinkDeps {
  /** How long a delivery is retried before it is given up on. */
  retryMs: number;
  /** Told after the commit of a change that queued deliveries: the sender listens. */
  due: Signal;
}

/** Standard Webhooks' webhook-id: unique per event, the same at every attempt and for every receiver. */
export const newMessageId = () => `msg_${randomBytes(16).toString('base64url')}`;

// Row locks matter only to claims; the journal only inserts.
const repository = (db: Kysely<Tables>) => new WebhooksRepository(db, { rowLocks: false });

export function webhooksSink(deps: WebhooksSinkDeps): JournalSink {
  const notice = (entry: JournalEntry): WebhookNotice | undefined => {
    const announced = entry.announcement;
    if (!announced) return undefined;
    return {
      type: announced.type,
      userId: announced.userId,
      messageId: newMessageId(),
      payload: webhookBody(announced, entry.at),
      createdAt: entry.at,
      retryUntil: entry.at.getTime() + deps.retryMs,
    };
  };
  return {
    async write(db, entry) {
      const queued = notice(entry);
      return queued ? repository(db).enqueue(queued) : 0;
    },
    async writeMany(db, entries) {
      const notices = entries.flatMap((entry) => notice(entry) ?? []);
      if (notices.length === 0) return 0;
      return repository(db).enqueueMany(notices[0]!.type, notices);
    },
    committed: () => deps.due.notify(),
    statement: deliveriesStatement(notice),
  };
}

const SLOTS = ['type', 'messageId', 'userId', 'payload', 'createdAt', 'retryUntil', 'nextAttemptAt'] as const;
type DeliverySlot = (typeof SLOTS)[number];

/** The deliveries in the grant's statement, only once it granted; a null type queues none. */
function deliveriesStatement(
  notice: (entry: JournalEntry) => WebhookNotice | undefined,
): SinkStatement<DeliverySlot> {
  return {
    name: 'notified',
    slots: SLOTS,
    insert: (db, s) =>
      insertDeliveries(
        db,
        s.type,
        {
          message_id: s.messageId,
          user_id: s.userId,
          payload: s.payload,
          created_at: s.createdAt,
          retry_until: s.retryUntil,
          next_attempt_at: s.nextAttemptAt,
        },
        ({ exists, selectFrom }) => exists(selectFrom('granted').select('user_id')),
      ).returning('id'),
    values: (entry) => {
      const queued = notice(entry);
      const values = queued && deliveryValues(queued);
      return {
        type: queued?.type ?? null,
        messageId: values?.message_id ?? null,
        userId: values?.user_id ?? null,
        payload: values?.payload ?? null,
        createdAt: values?.created_at ?? null,
        retryUntil: values?.retry_until ?? null,
        nextAttemptAt: values?.next_attempt_at ?? null,
      };
    },
  };
}
