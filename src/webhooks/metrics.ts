// The webhooks' metrics on GET /metrics: delivery attempts by outcome, and the deliveries waiting
// (every instance's) with the age of the oldest, which tells a receiver that has been down.
import { Counter, Gauge, type Registry } from 'prom-client';
import { DELIVERY_OUTCOMES } from '../plugins/metrics.ts';

/** What the webhook sender tells the metrics: one delivery attempt's outcome. */
export interface WebhookObservers {
  webhookOutcome(outcome: (typeof DELIVERY_OUTCOMES)[number]): void;
}

export function webhookMetrics(
  registry: Registry,
  backlog: () => Promise<{ waiting: number; oldest: Date | null }>,
  now: () => number,
): WebhookObservers {
  const deliveries = new Counter({
    name: 'usher_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: sent, retry (failed this time), failed (given up).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc({ outcome }, 0);
  // One read of the backlog per scrape, shared by both gauges.
  let reading: Promise<{ waiting: number; oldest: Date | null } | undefined> | undefined;
  const read = () => {
    reading ??= backlog()
      .catch(() => undefined)
      .finally(() => setImmediate(() => (reading = undefined)));
    return reading;
  };
  new Gauge({
    name: 'usher_webhook_deliveries_queued',
    help: 'Webhook deliveries not yet sent nor given up on (all instances).',
    registers: [registry],
    // Every worker reads the same table: WORKERS=N sums would count it N times.
    aggregator: 'max',
    async collect() {
      const b = await read();
      if (b) this.set(b.waiting);
    },
  });
  new Gauge({
    name: 'usher_webhook_oldest_queued_age_seconds',
    help: 'Age of the oldest webhook delivery not yet sent nor given up on (0 when none waits).',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const b = await read();
      if (b) this.set(b.oldest === null ? 0 : Math.max(0, (now() - b.oldest.getTime()) / 1000));
    },
  });
  return { webhookOutcome: (outcome) => deliveries.inc({ outcome }) };
}
