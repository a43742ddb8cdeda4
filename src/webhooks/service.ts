// Webhooks (CONTRACT "Administration"): admins register receivers; account events are recorded
// as deliveries in the transaction of their change (the journal's sink, sink.ts); every instance's
// sender claims what is due and POSTs it, signed as the Standard Webhooks specification says,
// retrying with backoff until the delivery's window (24 h) is over. Deliveries of one receiver for one
// user go out one at a time, in order; different receivers and users go out side by side, at most
// `perReceiver` at once for one receiver, so a slow receiver never holds up the others.
import { createHmac, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { afterFailure, type OutboxOutcome, senderName } from '../kernel/outbox.ts';
import { SecretBox } from '../kernel/sealing.ts';
import { AppError } from '../shared/errors.ts';
import { type PageRequest, refuseDeepPage } from '../shared/paging.ts';
import type { Signal } from '../shared/signal.ts';
import { invalid } from '../shared/text.ts';
import type { WebhookEventType } from './events.ts';
import type {
  ClaimedDelivery,
  DeliveryRecord,
  DeliveryStatus,
  WebhookRecord,
  WebhooksRepository,
} from './repository.ts';
import { hostOf, isPrivateAddress, type WebhookTransport } from './transport.ts';

export interface WebhookPolicy {
  allowPrivate: boolean;
  retryMs: number;
  claimMs: number;
  concurrency: number;
  perReceiver: number;
}

export type DeliveryOutcome = OutboxOutcome;

export interface WebhookLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface WebhookRepositories {
  webhooks: WebhooksRepository;
  journal: Journal;
}

/** How deep the deliveries list pages, and so how far it counts (X-Total-Count-Capped past it). */
export const DELIVERIES_DEPTH = 10_000;

/** The longest receiver URL accepted. */
export const URL_MAX = 2048;
/** Standard Webhooks: a secret of 24 to 64 random bytes; 32 here. */
const SECRET_BYTES = 32;

const notFound = () => new AppError('NOT_FOUND', 'No webhook has that id.');
const sealingContext = (id: bigint) => `webhook:${id}`;

/** The body's signature as the Standard Webhooks specification defines it. */
export function signature(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

export class WebhookService {
  readonly #webhooks: WebhooksRepository;
  readonly #transaction: InTransaction<WebhookRepositories>;
  readonly #journal: Journal;
  readonly #transport: WebhookTransport;
  readonly #policy: WebhookPolicy;
  readonly #key: () => Buffer | undefined;
  readonly #now: () => number;
  readonly #onOutcome: (outcome: DeliveryOutcome) => void;
  readonly #log: WebhookLog | undefined;
  readonly #due: Signal | undefined;
  readonly #sender = senderName();
  /** Resolves the wait of a sending run for a delivery to finish, when new work was recorded. */
  #kick: (() => void) | undefined;
  /** A nudge came while no run was waiting: the next wait returns at once. */
  #nudged = false;

  constructor(deps: {
    webhooks: WebhooksRepository;
    transaction: InTransaction<WebhookRepositories>;
    /** Records the admin calls' audit (outside a transaction: reads). */
    journal: Journal;
    transport: WebhookTransport;
    policy: WebhookPolicy;
    key: () => Buffer | undefined;
    now: () => number;
    onOutcome?: (outcome: DeliveryOutcome) => void;
    log?: WebhookLog;
    /** Told when a retry made a delivery due: the sender runs (webhooks/feature.ts listens). */
    due?: Signal;
  }) {
    this.#webhooks = deps.webhooks;
    this.#transaction = deps.transaction;
    this.#journal = deps.journal;
    this.#transport = deps.transport;
    this.#policy = deps.policy;
    this.#key = deps.key;
    this.#now = deps.now;
    this.#onOutcome = deps.onOutcome ?? (() => {});
    this.#log = deps.log;
    this.#due = deps.due;
  }

  #box(): SecretBox {
    const key = this.#key();
    if (!key)
      throw new AppError(
        'UNAVAILABLE',
        'Webhook secrets are sealed under ENCRYPTION_KEY, which is not set (on PostgreSQL it must be).',
      );
    return new SecretBox(key);
  }

  /** The receiver's URL, as CONTRACT and OWASP's SSRF rules allow it. */
  #checkUrl(raw: string): string {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw invalid('url', 'must be an absolute URL, like https://hooks.example.com/usher');
    }
    const allowPrivate = this.#policy.allowPrivate;
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivate))
      throw invalid('url', allowPrivate ? 'must be an http:// or https:// URL' : 'must be an https:// URL');
    if (url.username !== '' || url.password !== '')
      throw invalid('url', 'must not carry a user name or password (deliveries are signed instead)');
    if (url.hash !== '') throw invalid('url', 'must not have a fragment');
    const host = hostOf(url).toLowerCase();
    const inner =
      (isIP(host) !== 0 && isPrivateAddress(host)) || host === 'localhost' || host.endsWith('.localhost');
    if (inner && !allowPrivate)
      throw invalid(
        'url',
        'is a private, loopback or link-local address, which receives no webhooks unless WEBHOOK_ALLOW_PRIVATE=true',
      );
    return url.href;
  }

  /** POST /api/admin/webhooks: the receiver, and its signing secret this once. */
  async create(
    input: { url: string; events: readonly WebhookEventType[] },
    createdBy: bigint,
  ): Promise<{
    webhook: WebhookRecord;
    secret: string;
  }> {
    const url = this.#checkUrl(input.url);
    const events = [...new Set(input.events)];
    if (events.length !== input.events.length) throw invalid('events', 'must not list an event twice');
    const box = this.#box();
    const secret = `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
    const webhook = await this.#transaction(async (repos) => {
      const created = await repos.webhooks.create(
        { url, events, createdBy, now: new Date(this.#now()) },
        (id) => box.seal(secret, sealingContext(id)),
      );
      await repos.journal.record({
        type: 'admin.webhook.created',
        userId: null,
        // The origin only: a receiver's path or query may be a capability, and support read the log.
        details: { webhookId: created.id, origin: new URL(url).origin, events },
      });
      return created;
    });
    return { webhook, secret };
  }

  async list(paging: PageRequest): Promise<{ webhooks: WebhookRecord[]; total: number }> {
    const [webhooks, total] = await Promise.all([
      this.#webhooks.list(paging.offset, paging.size),
      this.#webhooks.count(),
    ]);
    await this.#journal.record({
      type: 'admin.webhooks.listed',
      userId: null,
      details: { page: paging.page },
    });
    return { webhooks, total };
  }

  async get(id: bigint): Promise<WebhookRecord> {
    const found = await this.#webhooks.find(id);
    if (!found) throw notFound();
    await this.#journal.record({ type: 'admin.webhook.viewed', userId: null, details: { webhookId: id } });
    return found;
  }

  /** DELETE: the receiver, its subscriptions and its deliveries (pending ones are not sent). */
  async delete(id: bigint): Promise<void> {
    const deleted = await this.#transaction(async (repos) => {
      const gone = await repos.webhooks.delete(id);
      if (gone)
        await repos.journal.record({
          type: 'admin.webhook.deleted',
          userId: null,
          details: { webhookId: id, origin: new URL(gone.url).origin },
        });
      return gone;
    });
    if (!deleted) throw notFound();
  }

  async deliveries(
    id: bigint,
    status: DeliveryStatus | undefined,
    paging: PageRequest,
  ): Promise<{ deliveries: DeliveryRecord[]; total: number; capped: boolean }> {
    if (!(await this.#webhooks.find(id))) throw notFound();
    refuseDeepPage(paging, [], DELIVERIES_DEPTH);
    const [deliveries, counted] = await Promise.all([
      this.#webhooks.deliveries(id, status, paging.offset, paging.size),
      this.#webhooks.countDeliveries(id, status, DELIVERIES_DEPTH + 1),
    ]);
    await this.#journal.record({
      type: 'admin.webhook.deliveries_viewed',
      userId: null,
      details: { webhookId: id, status: status ?? null, page: paging.page },
    });
    return { deliveries, total: Math.min(counted, DELIVERIES_DEPTH), capped: counted > DELIVERIES_DEPTH };
  }

  /** POST …/retry: the delivery is due now, with a fresh window of retries unless it is still pending. */
  async retry(id: bigint, deliveryId: bigint): Promise<DeliveryRecord> {
    const now = this.#now();
    const delivery = await this.#transaction(async (repos) => {
      const retried = await repos.webhooks.retry(id, deliveryId, now, now + this.#policy.retryMs);
      if (retried)
        await repos.journal.record({
          type: 'admin.webhook.delivery_retried',
          userId: retried.userId,
          details: { webhookId: id, deliveryId, messageId: retried.messageId, event: retried.type },
        });
      return retried;
    });
    if (!delivery) throw new AppError('NOT_FOUND', 'That webhook has no delivery with that id.');
    // The sender runs now, whether idle or waiting on a receiver.
    this.#due?.notify();
    return delivery;
  }

  /** New deliveries were recorded (or the poll came round): a run waiting on a slow receiver looks again. */
  nudge(): void {
    // Kept for the next wait when none is waiting now (the run is claiming): never lost.
    this.#nudged = true;
    const kick = this.#kick;
    this.#kick = undefined;
    kick?.();
  }

  /**
   * Sends what is due until nothing is, or `stopping()`: up to `concurrency` deliveries at once,
   * `perReceiver` of them for one receiver. While all it may send are in flight it waits for one
   * to finish, or for new work (nudge), whichever comes first. Whatever ends the run (a claim
   * that failed included), it ends only once its deliveries in flight have.
   */
  async deliverDue(stopping: () => boolean = () => false): Promise<number> {
    const perReceiver = new Map<bigint, number>();
    const running = new Set<Promise<void>>();
    let handled = 0;
    const wait = async () => {
      if (this.#nudged) {
        this.#nudged = false;
        return;
      }
      await Promise.race([
        ...running,
        new Promise<void>((resolve) => {
          this.#kick = resolve;
        }),
      ]);
      this.#nudged = false;
    };
    try {
      while (!stopping()) {
        if (running.size >= this.#policy.concurrency) {
          await wait();
          continue;
        }
        const busy = [...perReceiver].filter(([, n]) => n >= this.#policy.perReceiver).map(([id]) => id);
        // Claimed from here on: new work recorded while this claim runs is looked for again.
        this.#nudged = false;
        const claimed = await this.#webhooks.claim(this.#sender, this.#now(), this.#policy.claimMs, busy);
        if (!claimed) {
          if (running.size === 0) break;
          await wait();
          continue;
        }
        handled++;
        perReceiver.set(claimed.webhookId, (perReceiver.get(claimed.webhookId) ?? 0) + 1);
        const delivery: Promise<void> = this.#deliver(claimed)
          .catch((err: unknown) =>
            this.#log?.warn({ err, deliveryId: String(claimed.id) }, 'webhook delivery failed'),
          )
          .finally(() => {
            running.delete(delivery);
            const n = (perReceiver.get(claimed.webhookId) ?? 1) - 1;
            if (n === 0) perReceiver.delete(claimed.webhookId);
            else perReceiver.set(claimed.webhookId, n);
          });
        running.add(delivery);
      }
    } finally {
      await Promise.allSettled(running);
    }
    return handled;
  }

  async #deliver(delivery: ClaimedDelivery): Promise<void> {
    const attempts = delivery.attempts + 1;
    let secret: string;
    try {
      secret = this.#box().open(delivery.secretSealed, sealingContext(delivery.webhookId));
    } catch {
      await this.#failed(
        delivery,
        attempts,
        null,
        'the signing secret cannot be opened (was ENCRYPTION_KEY changed?)',
      );
      return;
    }
    const timestamp = Math.floor(this.#now() / 1000);
    const result = await this.#transport.post(
      delivery.url,
      {
        'content-type': 'application/json',
        'user-agent': 'Usher-Webhooks/1',
        'webhook-id': delivery.messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature(secret, delivery.messageId, timestamp, delivery.payload),
      },
      delivery.payload,
    );
    if (result.ok && result.status >= 200 && result.status < 300) {
      await this.#webhooks.markSent(
        delivery.id,
        this.#sender,
        new Date(this.#now()),
        result.status,
        attempts,
      );
      this.#onOutcome('sent');
      return;
    }
    const error = result.ok
      ? `the receiver answered ${result.status}${result.status >= 300 && result.status < 400 ? ' (redirects are not followed)' : ''}${result.body ? `: ${result.body.slice(0, 200)}` : ''}`
      : result.error;
    await this.#failed(delivery, attempts, result.ok ? result.status : null, error);
  }

  async #failed(
    delivery: ClaimedDelivery,
    attempts: number,
    status: number | null,
    error: string,
  ): Promise<void> {
    const now = this.#now();
    const attempt = { attempts, at: new Date(now), status, error };
    const fields = {
      deliveryId: String(delivery.id),
      webhookId: String(delivery.webhookId),
      attempts,
      error,
    };
    const next = afterFailure(attempts, now, delivery.retryUntil);
    await this.#webhooks.markAttemptFailed(delivery.id, this.#sender, attempt, next);
    if (next.failed) {
      this.#onOutcome('failed');
      this.#log?.warn(fields, 'webhook delivery failed for good');
      return;
    }
    this.#onOutcome('retry');
    this.#log?.info(fields, 'webhook not delivered; will retry');
  }

  backlog(): Promise<{ waiting: number; oldest: Date | null }> {
    return this.#webhooks.backlog();
  }

  close(): void {
    this.#transport.close();
  }
}
