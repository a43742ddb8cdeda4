import { randomBytes } from 'node:crypto';
import { afterFailure, type OutboxOutcome, senderName } from '../kernel/outbox.ts';
import { DEFAULT_LOCALE } from '../shared/locale.ts';
import type { Signal } from '../shared/signal.ts';
import type { Mail, Recipient } from './catalog.ts';
import { mailMails } from './mails.ts';
import type { OutboxRepository, OutgoingMessage } from './repository.ts';
import { MailTemplates } from './templates.ts';
import type { Transport } from './transport.ts';

export interface MailPolicy {
  /** A message still not delivered this long after it was recorded is marked failed. */
  maxAgeMs: number;
  /** How long a claim on a message lasts. */
  claimMs: number;
}

export type MailOutcome = OutboxOutcome;

export interface MailLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

// One message per claim: a claim's lease (MAIL_CLAIM_SECONDS) then covers a single delivery,
// whose SMTP timeouts add up to less than it, so no claim runs out while its message waits its
// turn behind others (another instance would then send it too).
const BATCH = 1;

/**
 * Mail through the outbox. Services record a message in the outbox of the transaction that
 * caused it (`queue`), then `wake()` after commit; every instance's background loop calls
 * `deliverDue()`, which claims due messages with a lease (so two instances never send one
 * message twice, and a claim left by a killed process is taken over when it lapses), sends them,
 * and marks each sent, or schedules a retry, or marks it failed once it is too old.
 */
export class MailService {
  readonly #outbox: OutboxRepository;
  readonly #transport: Transport;
  readonly #policy: MailPolicy;
  readonly #now: () => number;
  readonly #sender = senderName();
  readonly #due: Signal | undefined;
  readonly #onOutcome: (outcome: MailOutcome) => void;
  readonly #log: MailLog | undefined;
  /** Every declared mail's texts in every language, an operator's (MAIL_TEMPLATES_DIR) over Usher's. */
  readonly templates: MailTemplates;

  constructor(deps: {
    outbox: OutboxRepository;
    transport: Transport;
    policy: MailPolicy;
    now?: () => number;
    /** Notified by `wake()`; the delivery loop listens (nothing happens at once without one: the CLI). */
    due?: Signal;
    onOutcome?: (outcome: MailOutcome) => void;
    log?: MailLog;
    /** The mail feature's own mail alone, in Usher's texts, when absent. */
    templates?: MailTemplates;
  }) {
    this.#outbox = deps.outbox;
    this.#transport = deps.transport;
    this.#policy = deps.policy;
    this.#now = deps.now ?? Date.now;
    this.#due = deps.due;
    this.#onOutcome = deps.onOutcome ?? (() => {});
    this.#log = deps.log;
    this.templates =
      deps.templates ?? new MailTemplates(Object.values(mailMails), undefined, { now: this.#now });
  }

  /** After a commit that recorded mail: the delivery loop runs at once. */
  wake(): void {
    this.#due?.notify();
  }

  get transportKind(): Transport['kind'] {
    return this.#transport.kind;
  }

  /** Records a message in `outbox` (a transaction's, so it commits with the change that caused it). */
  queue(outbox: OutboxRepository, message: OutgoingMessage): Promise<bigint> {
    return outbox.add(message, new Date(this.#now()));
  }

  /**
   * Writes `mail` to `to` with its values and records it in `outbox` (the caller's transaction's):
   * how a feature sends the mails it declared.
   */
  compose<V>(outbox: OutboxRepository, mail: Mail<V>, to: Recipient, values: NoInfer<V>): Promise<bigint> {
    return this.queue(outbox, this.templates.compose(mail, to, values));
  }

  /**
   * Sends what is due; resolves the number of messages it handled. `stopping` is asked between
   * messages, so a shutdown waits for one delivery, not for a whole backlog.
   */
  async deliverDue(stopping: () => boolean = () => false): Promise<number> {
    let handled = 0;
    while (!stopping()) {
      const batch = await this.#outbox.claim(this.#sender, this.#now(), this.#policy.claimMs, BATCH);
      for (const message of batch) await this.#deliver(message);
      handled += batch.length;
      if (batch.length < BATCH) break;
    }
    return handled;
  }

  async #deliver(message: Awaited<ReturnType<OutboxRepository['claim']>>[number]): Promise<void> {
    const messageId = `<outbox-${message.id}.${message.createdAt.getTime()}@usher>`;
    let file: string | undefined;
    try {
      file = await this.#transport.send({ ...message, messageId });
    } catch (error) {
      const attempts = message.attempts + 1;
      const reason = error instanceof Error ? error.message : String(error);
      const next = afterFailure(attempts, this.#now(), message.createdAt.getTime() + this.#policy.maxAgeMs);
      await this.#outbox.markAttemptFailed(message.id, this.#sender, attempts, reason, next);
      if (next.failed) {
        this.#onOutcome('failed');
        this.#log?.error({ mailId: String(message.id), attempts, reason }, 'mail failed for good');
      } else {
        this.#onOutcome('retry');
        this.#log?.warn({ mailId: String(message.id), attempts, reason }, 'mail not delivered; will retry');
      }
      return;
    }
    await this.#outbox.markSent(message.id, this.#sender, new Date(this.#now()));
    this.#onOutcome('sent');
    // A written file is named with its recipient (CONTRACT), so a developer can find the message;
    // the log never holds the message itself, nor the token in its link.
    const where = file === undefined ? {} : { file, to: message.to };
    this.#log?.info({ mailId: String(message.id), via: this.#transport.kind, ...where }, 'mail sent');
  }

  /** Operators' check of the transport (CLI): straight to it, not through the outbox, so errors show at once. */
  async sendTest(to: string, locale: string = DEFAULT_LOCALE): Promise<void> {
    await this.#transport.send({
      ...this.templates.compose(mailMails.test, { email: to, locale, name: undefined }, {}),
      messageId: `<test-${randomBytes(8).toString('hex')}@usher>`,
    });
  }

  waiting(): Promise<number> {
    return this.#outbox.waiting();
  }

  close(): void {
    this.#transport.close();
  }
}
