// What the two outboxes (mail/ and webhooks/) share: a row recorded in the transaction of its
// change, claimed with a lease by one sender of one instance, sent, then marked sent, or tried
// again after a growing delay, or given up on at its deadline. Their claims differ (mail takes
// the oldest due; a webhook delivery waits behind its user's earlier ones for that receiver), so
// each keeps its own statements; the sender's name and what happens after a failure are here.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** What one delivery attempt came to, as each outbox counts it in its metrics. */
export type OutboxOutcome = 'sent' | 'retry' | 'failed';

/** A failed attempt's sequel, as the repositories record it. */
export type NextAttempt = { failed: true } | { failed: false; nextAttemptAt: number };

const FIRST_RETRY_MS = 1000;
const LONGEST_RETRY_MS = 3600_000;

/** When to try again after `attempts` failures: doubling from a second up to an hour, ±20%. */
export function retryDelayMs(attempts: number): number {
  const base = Math.min(FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 30), LONGEST_RETRY_MS);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** After the `attempts`-th failure at `now`: failed for good from `giveUpAt` on, else due again after retryDelayMs. */
export function afterFailure(attempts: number, now: number, giveUpAt: number): NextAttempt {
  return now >= giveUpAt ? { failed: true } : { failed: false, nextAttemptAt: now + retryDelayMs(attempts) };
}

/**
 * The name a sender claims rows under: its host and process, and random bytes, so that two
 * senders of one table in one process (two apps over one database, as tests build) or a process
 * that reuses a pid never take each other's claims for their own.
 */
export function senderName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}
