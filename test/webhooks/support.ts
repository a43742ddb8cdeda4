// What the webhook suites share (not a test file): an app whose sender delivers to a receiver on
// loopback and looks for work every 100 ms, registering a receiver through the admin API (the
// webhook removed and the receiver stopped when the test ends), and reading a webhook's deliveries
// as an admin sees them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import { as } from '../admin/support.ts';
import { NO_THROTTLE, startApp, type TestApp } from '../helpers/app.ts';
import { sleep } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';
import type { Store } from '../helpers/stores.ts';
import {
  type Answer,
  type Received,
  startReceiver,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.ts';

/** Webhook secrets are sealed under this on PostgreSQL (no key file there); the same for every app of a file. */
export const ENCRYPTION_KEY = randomBytes(32);

export const ALL_EVENTS = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.disabled',
  'user.enabled',
  'user.signed_in',
  'session.ended',
  'password.changed',
  'email.verified',
  'identity.linked',
  'identity.unlinked',
] as const;

export type EventType = (typeof ALL_EVENTS)[number];

/** The operator's defaults, with receivers on loopback allowed and a poll every 100 ms. */
export function webhookSettings(extra: Partial<Config['webhooks']> = {}): Config['webhooks'] {
  return { ...loadConfig({}).webhooks, allowPrivate: true, pollMs: 100, ...extra };
}

/** An app (profile B unless told) delivering webhooks as `webhookSettings(extra)` says. */
export function webhookApp(
  store: Store,
  extra: Partial<Config['webhooks']> = {},
  overrides: Partial<Config> = {},
  profile: Profile = 'b',
): Promise<TestApp> {
  return startApp(store, profile, {
    webhooks: webhookSettings(extra),
    encryptionKey: ENCRYPTION_KEY,
    throttle: { ...NO_THROTTLE },
    ...overrides,
  });
}

export interface Webhook {
  id: number;
  url: string;
  events: string[];
  createdAt: string;
  secret: string;
}

/** POST /api/admin/webhooks, which must answer 201; the receiver is given the secret to verify with. */
export async function registerWebhook(
  t: TestApp,
  adminToken: string,
  receiver: Pick<WebhookReceiver, 'url' | 'secret'>,
  events: readonly string[],
): Promise<Webhook> {
  const res = await as(t, adminToken).post('/api/admin/webhooks', { url: receiver.url, events });
  assert.equal(res.statusCode, 201, res.body);
  const webhook = res.json() as Webhook;
  receiver.secret = webhook.secret;
  return webhook;
}

/**
 * A receiver on loopback registered for `events`; when the test ends the receiver is stopped and,
 * unless `remove` is false (an app closed before then, on a database of the test's own), the
 * webhook removed, so that no later test's events are queued for it. A `restartable` receiver
 * listens on a port it gets back after stop() and start().
 */
export async function listeningReceiver(
  ctx: TestContext,
  t: TestApp,
  adminToken: string,
  events: readonly string[],
  options: { answer?: Answer; remove?: boolean; restartable?: boolean } = {},
): Promise<{ receiver: WebhookReceiver; webhook: Webhook }> {
  const receiver = await startReceiver({
    answer: options.answer ?? 204,
    // A receiver stopped and started again needs a port no outgoing connection takes meanwhile:
    // one of this process's slice below the ephemeral range (helpers/process.ts).
    ...(options.restartable ? { port: await freePort() } : {}),
  });
  ctx.after(() => receiver.stop());
  const webhook = await registerWebhook(t, adminToken, receiver, events);
  if (options.remove !== false)
    ctx.after(async () => {
      await as(t, adminToken).delete(`/api/admin/webhooks/${webhook.id}`);
    });
  return { receiver, webhook };
}

export interface Delivery {
  id: number;
  messageId: string;
  type: string;
  userId: number;
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  sentAt: string | null;
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
}

/** GET /api/admin/webhooks/{id}/deliveries (every page), newest first. */
export async function deliveriesOf(
  t: TestApp,
  adminToken: string,
  webhookId: number,
  status?: Delivery['status'],
): Promise<Delivery[]> {
  const all: Delivery[] = [];
  for (let page = 1; ; page++) {
    const query = `page=${page}&size=100${status ? `&status=${status}` : ''}`;
    const res = await as(t, adminToken).get(`/api/admin/webhooks/${webhookId}/deliveries?${query}`);
    assert.equal(res.statusCode, 200, res.body);
    const items = res.json() as Delivery[];
    all.push(...items);
    if (items.length < 100) return all;
  }
}

/** Polls the deliveries list until `done` holds for it (or fails after `timeoutMs`); returns the last list. */
export async function waitForDeliveries(
  t: TestApp,
  adminToken: string,
  webhookId: number,
  done: (deliveries: Delivery[]) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<Delivery[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await deliveriesOf(t, adminToken, webhookId);
    if (done(list)) return list;
    if (Date.now() > deadline)
      assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}: ${JSON.stringify(list, null, 1)}`);
    await sleep(100);
  }
}

/** The deliveries `receiver` accepted about user `userId`, in arrival order. */
export const about = (receiver: WebhookReceiver, userId: bigint | number) =>
  receiver.accepted.filter((r) => r.data.userId === Number(userId));

/** A matcher of accepted deliveries: of user `userId`, and of `type` when given. */
export const of =
  (userId: bigint | number, type?: string) =>
  (r: Received): boolean =>
    r.data.userId === Number(userId) && (type === undefined || r.type === type);

/** Each webhook-id with how many requests carried it. */
export function countById(received: readonly Received[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of received) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
  return counts;
}
