import type { Feature } from '../features.ts';
import { BackgroundLoop } from '../shared/background.ts';
import { mailMetrics } from './metrics.ts';

/** The outbox: its metrics, its delivery loop, and the removal of old finished mail. */
export const mailFeature: Feature = {
  name: 'mail',
  metrics: (registry, services) => mailMetrics(registry, () => services().mail.waiting()),
  housekeeping: (services) => services.purgeFinishedMail(),
  background: ({ services, schema, config, log }) => {
    // Forgot-password asks and the outbox: at once when something is recorded here, and every
    // MAIL_POLL_MS for what other instances recorded and for retries.
    const delivery = new BackgroundLoop(
      async (stopping) => {
        if (schema.ready) await services.deliver(stopping);
      },
      config.mail.pollMs,
      (err) => log.warn({ err }, 'mail delivery failed'),
    );
    services.mailDue.listen(() => delivery.wake());
    delivery.wake();
    return {
      stop: async () => {
        await delivery.stop();
        services.mail.close();
      },
    };
  },
};
