// The mail feature's metrics on GET /metrics (plugins/metrics.ts): deliveries by outcome and the
// messages still waiting in the outbox.
import { Counter, Gauge } from 'prom-client';
import type { MetricFamilies } from '../plugins/metrics.ts';
import type { MailService } from './service.ts';

/** Counts each delivery attempt `mail` reports, and reads its waiting messages at each scrape. */
export function mailMetrics(mail: MailService): MetricFamilies {
  return (registry) => {
    const mails = new Counter({
      name: 'usher_mail_deliveries_total',
      help: 'Mail delivery attempts by outcome: sent, retry (failed this time), failed (given up).',
      labelNames: ['outcome'],
      registers: [registry],
    });
    new Gauge({
      name: 'usher_mail_waiting',
      help: 'Messages in the outbox not yet sent nor given up on (all instances).',
      registers: [registry],
      async collect() {
        try {
          this.set(await mail.waiting());
        } catch {
          // The database is down: /readyz says so; the scrape still answers with the rest.
        }
      },
    });
    mail.onOutcome = (outcome) => mails.inc({ outcome });
  };
}
