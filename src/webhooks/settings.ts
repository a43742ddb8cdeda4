// The webhooks feature's settings: who may receive, and how deliveries are sent and retried.
// Read by config.ts (the only reader of the environment).
import { ConfigError, type Env, flag, integer, secondsAsMs } from '../kernel/settings.ts';

export interface WebhookSettings {
  /** Receivers on private, loopback or link-local addresses (and plain http) are allowed. */
  allowPrivate: boolean;
  /** How long a delivery is retried before it is marked failed. */
  retryMs: number;
  /** How long an instance's claim on a delivery lasts (longer than `timeoutMs`). */
  claimMs: number;
  /** How often each instance looks for deliveries due (new ones go out at once regardless). */
  pollMs: number;
  /** How long a receiver has to answer one delivery. */
  timeoutMs: number;
  /** Deliveries in flight at once on an instance, and to one receiver. */
  concurrency: number;
  perReceiver: number;
}

export function webhookSettings(env: Env): WebhookSettings {
  const timeoutMs = secondsAsMs(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60);
  const claimMs = secondsAsMs(env, 'WEBHOOK_CLAIM_SECONDS', 60, 1, 3600);
  // A claim that lapsed while its delivery still waits for an answer would be sent again by another instance.
  if (claimMs <= timeoutMs)
    throw new ConfigError('WEBHOOK_CLAIM_SECONDS', 'must be longer than WEBHOOK_TIMEOUT_SECONDS');
  const concurrency = integer(env, 'WEBHOOK_CONCURRENCY', 16, 1, 256);
  return {
    allowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    retryMs: secondsAsMs(env, 'WEBHOOK_RETRY_SECONDS', 24 * 3600, 1, 30 * 24 * 3600),
    claimMs,
    pollMs: integer(env, 'WEBHOOK_POLL_MS', 5000, 50, 600_000),
    timeoutMs,
    concurrency,
    // A quarter of the slots at most for one receiver: a slow one never holds the others up.
    perReceiver: Math.max(1, Math.floor(concurrency / 4)),
  };
}
