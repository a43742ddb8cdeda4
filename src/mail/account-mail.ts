// The messages about an account, each recorded in the outbox of the caller's transaction, so it
// exists exactly when the change it is about commits. Links carry the token in the fragment
// (#token=…): a fragment is never sent to a server, so it reaches no access log and no Referer.
import type { AccountTokensRepository } from '../tokens/repository.ts';
import { newAccountToken } from '../tokens/tokens.ts';
import type { OutboxRepository } from './repository.ts';
import type { MailService } from './service.ts';
import {
  accountDeletedMessage,
  emailChangedMessage,
  passkeyAddedMessage,
  passkeyRemovedMessage,
  passwordChangedMessage,
  passwordResetMessage,
  recoveryCodeUsedMessage,
  secondFactorFailuresMessage,
  totpDisabledMessage,
  totpEnabledMessage,
  verifyEmailMessage,
} from './templates.ts';

export interface AccountMailRepositories {
  tokens: AccountTokensRepository;
  outbox: OutboxRepository;
}

export interface Addressee {
  id: bigint;
  email: string;
  name: string;
}

export interface AccountMailPolicy {
  publicUrl: string;
  passwordResetTtlMs: number;
  emailVerifyTtlMs: number;
}

export class AccountMail {
  readonly #mail: MailService;
  readonly #policy: AccountMailPolicy;
  readonly #now: () => number;

  constructor(mail: MailService, policy: AccountMailPolicy, now: () => number = Date.now) {
    this.#mail = mail;
    this.#policy = policy;
    this.#now = now;
  }

  /** A link to {PUBLIC_URL}/verify-email proving `user.email`, valid EMAIL_VERIFY_TTL_SECONDS. */
  async verification(repos: AccountMailRepositories, user: Addressee): Promise<void> {
    const ttl = this.#policy.emailVerifyTtlMs;
    const url = await this.#link(repos, user, 'email-verify', '/verify-email', ttl, user.email);
    await this.#mail.queue(repos.outbox, verifyEmailMessage(user.email, user.name, url, ttl));
  }

  /** A link to {PUBLIC_URL}/reset-password, valid PASSWORD_RESET_TTL_SECONDS. */
  async passwordReset(repos: AccountMailRepositories, user: Addressee): Promise<void> {
    const ttl = this.#policy.passwordResetTtlMs;
    // The address the link goes to is kept with it: after an email change it opens nothing.
    const url = await this.#link(repos, user, 'password-reset', '/reset-password', ttl, user.email);
    await this.#mail.queue(repos.outbox, passwordResetMessage(user.email, user.name, url, ttl));
  }

  async passkeyAdded(repos: AccountMailRepositories, user: Addressee, passkeyName: string): Promise<void> {
    await this.#mail.queue(repos.outbox, passkeyAddedMessage(user.email, user.name, passkeyName));
  }

  async passkeyRemoved(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    user: Addressee,
    passkeyName: string,
  ): Promise<void> {
    await this.#mail.queue(repos.outbox, passkeyRemovedMessage(user.email, user.name, passkeyName));
  }

  /**
   * A goodbye to the address of an account being deleted, in the transaction that deletes it: the
   * outbox has no foreign key to users, so the message outlives the row it was about.
   */
  async accountDeleted(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(repos.outbox, accountDeletedMessage(user.email, user.name));
  }

  async passwordChanged(repos: AccountMailRepositories, user: Addressee): Promise<void> {
    await this.#mail.queue(repos.outbox, passwordChangedMessage(user.email, user.name));
  }

  /** To the address the account had before, so its owner learns of a change they did not make. */
  async emailChanged(repos: AccountMailRepositories, user: Addressee, oldEmail: string): Promise<void> {
    await this.#mail.queue(repos.outbox, emailChangedMessage(oldEmail, user.name, user.email));
  }

  async totpEnabled(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(repos.outbox, totpEnabledMessage(user.email, user.name));
  }

  async totpDisabled(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(repos.outbox, totpDisabledMessage(user.email, user.name));
  }

  /** Someone gave the right password and then wrong codes, `failures` times in a row. */
  async secondFactorFailures(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    user: Addressee,
    failures: number,
  ): Promise<void> {
    await this.#mail.queue(repos.outbox, secondFactorFailuresMessage(user.email, user.name, failures));
  }

  /** `left`: the unused codes after this one. */
  async recoveryCodeUsed(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    user: Addressee,
    left: number,
  ): Promise<void> {
    await this.#mail.queue(repos.outbox, recoveryCodeUsedMessage(user.email, user.name, left));
  }

  async #link(
    repos: AccountMailRepositories,
    user: Addressee,
    purpose: 'email-verify' | 'password-reset',
    page: string,
    ttlMs: number,
    email: string | null,
  ): Promise<string> {
    const { token, tokenHash } = newAccountToken();
    const now = new Date(this.#now());
    await repos.tokens.add({
      tokenHash,
      userId: user.id,
      purpose,
      email,
      now,
      expiresAt: new Date(now.getTime() + ttlMs),
    });
    return `${this.#policy.publicUrl}${page}#token=${token}`;
  }
}
