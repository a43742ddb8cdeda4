import type { Config } from '../config.ts';
import { feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { BackgroundLoop } from '../shared/background.ts';
import { type WebhookObservers, webhookMetrics } from './metrics.ts';
import { createWebhooks } from './migrations/2026-11-27-0021-webhooks.ts';
import { WebhooksRepository } from './repository.ts';
import { DeliveryComponent, WebhookComponent, webhookRoutes } from './routes.ts';
import { WebhookService } from './service.ts';
import { webhooksSink } from './sink.ts';
import { WebhookTransport } from './transport.ts';

export interface WebhooksUnit {
  webhooks: WebhooksRepository;
}

/** Sent and failed webhook deliveries are kept this long for admins to look at, then removed. */
const FINISHED_DELIVERIES_KEPT_MS = 7 * 24 * 3600 * 1000;
/** Finished deliveries removed per housekeeping round. */
const DELIVERIES_PURGED_PER_ROUND = 10_000;

/**
 * Webhooks (issue 30): the admin routes, the metrics, and each instance's sender, which runs at
 * once after a commit that queued deliveries, and every WEBHOOK_POLL_MS for retries and for what
 * other instances queued.
 */
export const webhooksFeature = feature({
  name: 'webhooks',
  migrations: { '2026-11-27-0021-webhooks': createWebhooks },
  repositories: (db, { postgres }): WebhooksUnit => ({
    webhooks: new WebhooksRepository(db, { rowLocks: postgres }),
  }),
  // Every event a change announces is queued for the receivers in the change's transaction.
  sink: (config, due) => webhooksSink({ retryMs: config.webhooks.retryMs, due }),
  metrics: (registry, built) =>
    webhookMetrics(
      registry,
      () => built().webhooks.backlog(),
      () => built().now(),
    ),
  build(kernel: Kernel<Config, WebhooksUnit & KernelUnit, WebhookObservers>, _needs: unknown) {
    const { config, repositories, now } = kernel;
    const webhooks = new WebhookService({
      webhooks: repositories.webhooks,
      transaction: kernel.transaction,
      journal: repositories.journal,
      transport: new WebhookTransport({
        allowPrivate: config.webhooks.allowPrivate,
        timeoutMs: config.webhooks.timeoutMs,
      }),
      policy: config.webhooks,
      key: kernel.sealingKey,
      now,
      onOutcome: kernel.observe.webhookOutcome,
      log: kernel.log.child({ component: 'webhooks' }),
      due: kernel.due,
    });
    return {
      webhooks,
      now,
      due: kernel.due,
      /** Sent and failed deliveries kept FINISHED_DELIVERIES_KEPT_MS, then removed (housekeeping). */
      purgeFinished: () =>
        repositories.webhooks.purgeFinished(
          new Date(now() - FINISHED_DELIVERIES_KEPT_MS),
          DELIVERIES_PURGED_PER_ROUND,
        ),
    };
  },
  routes: (app, { own }) => app.register(webhookRoutes, { webhooks: own.webhooks }),
  components: () => [WebhookComponent, DeliveryComponent],
  housekeeping: (own) => own.purgeFinished(),
  background: ({ own: services, schema, config, log }) => {
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
    services.due.listen(wake);
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
});
