import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { BackgroundLoop } from '../shared/background.ts';
import type { TokensUnit } from '../tokens/feature.ts';
import { AccountMail } from './account-mail.ts';
import type { MailDefinition } from './catalog.ts';
import { mailMails } from './mails.ts';
import { type MailObservers, mailMetrics } from './metrics.ts';
import { OutboxRepository } from './repository.ts';
import { MailService } from './service.ts';
import { MailTemplates } from './templates.ts';
import { createTransport } from './transport.ts';

/** The mails the features of a composition declare, in its order. */
export function declaredMails(features: readonly object[]): readonly MailDefinition[] {
  return features.flatMap((f) => (f as { mails?: readonly MailDefinition[] }).mails ?? []);
}

export interface MailUnit {
  outbox: OutboxRepository;
}

/** Sent and failed messages are kept this long for operators, then removed. */
const FINISHED_MAIL_KEPT_MS = 7 * 24 * 3600 * 1000;

/** The outbox: its metrics, its delivery loop, and the removal of old finished mail. */
export const mailFeature = feature({
  name: 'mail',
  mails: Object.values(mailMails),
  repositories: (db, { postgres }) => ({ outbox: new OutboxRepository(db, { rowLocks: postgres }) }),
  metrics: (registry, built) => mailMetrics(registry, () => built().mail.waiting()),
  build(kernel: Kernel<Config, MailUnit & TokensUnit & KernelUnit, MailObservers>, _needs: unknown) {
    const { config, now } = kernel;
    const mail = new MailService({
      outbox: kernel.repositories.outbox,
      transport: createTransport(config.mail),
      policy: config.mail,
      now,
      due: kernel.due,
      onOutcome: kernel.observe.mailOutcome,
      log: kernel.log.child({ component: 'mail' }),
      // The mails every feature declares (their mails.ts); the mail feature knows none by name.
      templates: new MailTemplates(declaredMails(kernel.features), config.mail.templates, { now }),
    });
    const accountMail = new AccountMail({
      mail,
      policy: {
        publicUrl: config.publicUrl,
        passwordResetTtlMs: config.tokens.passwordResetTtlMs,
        emailVerifyTtlMs: config.tokens.emailVerifyTtlMs,
      },
      now,
    });
    // What other features record mail from in the background (forgot-password asks, mail
    // sign-in asks): each delivery round runs them first, then sends what is due.
    const steps: Array<() => Promise<unknown>> = [];
    return {
      mail,
      accountMail,
      /** Runs `step` at the start of each delivery round (a feature that records mail from asks). */
      beforeDelivery: (step: () => Promise<unknown>) => void steps.push(step),
      /** One delivery round: the features' steps, then the mail that is due (until `stopping()`). */
      deliver: async (stopping: () => boolean = () => false) => {
        for (const step of steps) await step();
        await mail.deliverDue(stopping);
      },
      /** Sent and failed mail kept FINISHED_MAIL_KEPT_MS for operators, then removed (housekeeping). */
      purgeFinished: () => kernel.repositories.outbox.purgeFinished(new Date(now() - FINISHED_MAIL_KEPT_MS)),
      due: kernel.due,
    };
  },
  housekeeping: (own) => own.purgeFinished(),
  background: ({ own, schema, config, log }) => {
    // Forgot-password asks and the outbox: at once when something is recorded here, and every
    // MAIL_POLL_MS for what other instances recorded and for retries.
    const delivery = new BackgroundLoop(
      async (stopping) => {
        if (schema.ready) await own.deliver(stopping);
      },
      config.mail.pollMs,
      (err) => log.warn({ err }, 'mail delivery failed'),
    );
    own.due.listen(() => delivery.wake());
    delivery.wake();
    return {
      stop: async () => {
        await delivery.stop();
        own.mail.close();
      },
    };
  },
});

export type MailExports = ExportsOf<typeof mailFeature>;
