// The mail feature's metrics on GET /metrics (plugins/metrics.ts): deliveries by outcome and the
// messages still waiting in the outbox.
import { Counter, Gauge, type Registry } from 'prom-client';
import { DELIVERY_OUTCOMES } from '../plugins/metrics.ts';

/** What the mail sender tells the metrics: one delivery attempt's outcome. */
export interface MailObservers {
  mailOutcome(outcome: (typeof DELIVERY_OUTCOMES)[number]): void;
}

/** Registers the mail metrics; `waiting` is read at each scrape (the outbox of every instance). */
export function mailMetrics(registry: Registry, waiting: () => Promise<number>): MailObservers {
  const mails = new Counter({
    name: 'usher_mail_deliveries_total',
    help: 'Mail delivery attempts by outcome: sent, retry (failed this time), failed (given up).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of DELIVERY_OUTCOMES) mails.inc({ outcome }, 0);
  new Gauge({
    name: 'usher_mail_waiting',
    help: 'Messages in the outbox not yet sent nor given up on (all instances).',
    registers: [registry],
    // Every worker reads the same outbox: WORKERS=N sums would count it N times.
    aggregator: 'max',
    async collect() {
      try {
        this.set(await waiting());
      } catch {
        // The database is down: /readyz says so; the scrape still answers with the rest.
      }
    },
  });
  return { mailOutcome: (outcome) => mails.inc({ outcome }) };
}
