import type { Feature } from '../features.ts';
import { BackgroundLoop } from '../shared/background.ts';
import { webhookMetrics } from './metrics.ts';
import { createWebhooks } from './migrations/2026-11-27-0021-webhooks.ts';
import { DeliveryComponent, WebhookComponent, webhookRoutes } from './routes.ts';

/**
 * Webhooks (issue 30): the admin routes, the metrics, and each instance's sender, which runs at
 * once after a commit that queued deliveries, and every WEBHOOK_POLL_MS for retries and for what
 * other instances queued.
 */
export const webhooksFeature: Feature = {
  name: 'webhooks',
  migrations: { '2026-11-27-0021-webhooks': createWebhooks },
  routes: (app, { services }) => app.register(webhookRoutes, { webhooks: services.webhooks }),
  components: () => [WebhookComponent, DeliveryComponent],
  metrics: (registry, services) =>
    webhookMetrics(
      registry,
      () => services().webhooks.backlog(),
      () => services().now(),
    ),
  housekeeping: (services) => services.purgeFinishedDeliveries(),
  background: ({ services, schema, config, log }) => {
    const sender = new BackgroundLoop(
      async (stopping) => {
        if (schema.ready) await services.webhooks.deliverDue(stopping);
      },
      config.webhooks.pollMs,
      (err) => log.warn({ err }, 'webhook delivery failed'),
    );
    // A run waiting on a slow receiver is nudged too, so that new work never waits behind it.
    const wake = () => {
      sender.wake();
      services.webhooks.nudge();
    };
    services.webhooksDue.listen(wake);
    const poll = setInterval(() => services.webhooks.nudge(), config.webhooks.pollMs);
    poll.unref();
    sender.wake();
    return {
      stop: async () => {
        clearInterval(poll);
        // The sender is told to stop, and a run waiting on a receiver stops waiting.
        const stopped = sender.stop();
        services.webhooks.nudge();
        await stopped;
        services.webhooks.close();
      },
    };
  },
};
