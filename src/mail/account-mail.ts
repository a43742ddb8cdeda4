// The messages about an account, each recorded in the outbox of the caller's transaction, so it
// exists exactly when the change it is about commits. Links carry the token in the fragment
// (#token=…): a fragment is never sent to a server, so it reaches no access log and no Referer.
import { DEFAULT_LOCALE } from '../shared/locale.ts';
import { newAccountToken } from '../tokens/index.ts';
import type { AccountTokensRepository } from '../tokens/repository.ts';
import type { OutboxRepository } from './repository.ts';
import type { MailService } from './service.ts';

export interface AccountMailRepositories {
  tokens: AccountTokensRepository;
  outbox: OutboxRepository;
}

export interface Addressee {
  id: bigint;
  email: string;
  name: string;
  /** Whether `email` was shown to reach the account's owner. */
  emailVerified: boolean;
  /** The account's language (BCP 47): its mail is written in the best match Usher has texts for. */
  locale: string;
}

/**
 * The name to greet an addressee by: only at an address the account's owner has proven theirs.
 * An unverified address may be anyone's (a registrant chooses it, and the name), so mail to it
 * carries no text the registrant chose: it would make Usher a relay for their words.
 */
const greeted = (user: Addressee): string | undefined => (user.emailVerified ? user.name : undefined);

export interface AccountMailPolicy {
  publicUrl: string;
  passwordResetTtlMs: number;
  emailVerifyTtlMs: number;
}

export class AccountMail {
  readonly #mail: MailService;
  readonly #policy: AccountMailPolicy;
  readonly #now: () => number;

  constructor(deps: { mail: MailService; policy: AccountMailPolicy; now?: () => number }) {
    this.#mail = deps.mail;
    this.#policy = deps.policy;
    this.#now = deps.now ?? Date.now;
  }

  /** The texts in force (MailService.templates): an operator's over Usher's. */
  get #texts() {
    return this.#mail.templates;
  }

  /**
   * The locale a new account keeps when its browser sent this Accept-Language: the first
   * language asked for that mail can be written in, else the default (en).
   */
  localeFor(acceptLanguage: string | undefined): string {
    return this.#mail.templates.localeFor(acceptLanguage) ?? DEFAULT_LOCALE;
  }

  /** A link to {PUBLIC_URL}/verify-email proving `user.email`, valid EMAIL_VERIFY_TTL_SECONDS. */
  async verification(repos: AccountMailRepositories, user: Addressee): Promise<void> {
    const ttl = this.#policy.emailVerifyTtlMs;
    const url = await this.#link(repos, user, 'email-verify', '/verify-email', ttl, user.email);
    // Always to an address not proven yet: no name.
    await this.#mail.queue(repos.outbox, this.#texts.verifyEmailMessage(user.email, url, ttl, user.locale));
  }

  /** A link to {PUBLIC_URL}/reset-password, valid PASSWORD_RESET_TTL_SECONDS. */
  async passwordReset(repos: AccountMailRepositories, user: Addressee): Promise<void> {
    const ttl = this.#policy.passwordResetTtlMs;
    // The address the link goes to is kept with it: after an email change it opens nothing.
    const url = await this.#link(repos, user, 'password-reset', '/reset-password', ttl, user.email);
    await this.#mail.queue(
      repos.outbox,
      this.#texts.passwordResetMessage(user.email, greeted(user), url, ttl, user.locale),
    );
  }

  async passkeyAdded(repos: AccountMailRepositories, user: Addressee, passkeyName: string): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.passkeyAddedMessage(
        user.email,
        greeted(user),
        user.emailVerified ? passkeyName : undefined,
        user.locale,
      ),
    );
  }

  async passkeyRemoved(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    user: Addressee,
    passkeyName: string,
  ): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.passkeyRemovedMessage(
        user.email,
        greeted(user),
        user.emailVerified ? passkeyName : undefined,
        user.locale,
      ),
    );
  }

  /** `provider`: the provider's display name (OAUTH_X_NAME), the operator's text. */
  async identityLinked(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee, provider: string) {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.identityLinkedMessage(user.email, greeted(user), provider, user.locale),
    );
  }

  async identityUnlinked(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee, provider: string) {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.identityUnlinkedMessage(user.email, greeted(user), provider, user.locale),
    );
  }

  /**
   * A goodbye to the address of an account being deleted, in the transaction that deletes it: the
   * outbox has no foreign key to users, so the message outlives the row it was about.
   */
  async accountDeleted(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.accountDeletedMessage(user.email, greeted(user), user.locale),
    );
  }

  async passwordChanged(repos: AccountMailRepositories, user: Addressee): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.passwordChangedMessage(user.email, greeted(user), user.locale),
    );
  }

  /**
   * To the address the account had before (`previous`), so its owner learns of a change they did
   * not make. The new address is the registrant's text too: named only to a proven old address.
   */
  async emailChanged(
    repos: AccountMailRepositories,
    user: Addressee,
    previous: Pick<Addressee, 'email' | 'emailVerified'>,
  ): Promise<void> {
    const proven = previous.emailVerified;
    await this.#mail.queue(
      repos.outbox,
      this.#texts.emailChangedMessage(
        previous.email,
        proven ? user.name : undefined,
        proven ? user.email : undefined,
        user.locale,
      ),
    );
  }

  /**
   * An admin's invitation: a password-reset link (the reset page sets the first password) to
   * `user.email`, valid `ttlMs`, greeting the name the admin gave.
   */
  async invitation(repos: AccountMailRepositories, user: Addressee, ttlMs: number): Promise<void> {
    const url = await this.#link(repos, user, 'password-reset', '/reset-password', ttlMs, user.email);
    await this.#mail.queue(
      repos.outbox,
      this.#texts.invitationMessage(user.email, user.name, url, ttlMs, user.locale),
    );
  }

  async secondFactorsRemoved(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.secondFactorsRemovedMessage(user.email, greeted(user), user.locale),
    );
  }

  async totpEnabled(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.totpEnabledMessage(user.email, greeted(user), user.locale),
    );
  }

  async totpDisabled(repos: Pick<AccountMailRepositories, 'outbox'>, user: Addressee): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.totpDisabledMessage(user.email, greeted(user), user.locale),
    );
  }

  /** Someone gave the right password and then wrong codes, `failures` times in a row. */
  async secondFactorFailures(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    user: Addressee,
    failures: number,
  ): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.secondFactorFailuresMessage(user.email, greeted(user), failures, user.locale),
    );
  }

  /** `left`: the unused codes after this one. */
  async recoveryCodeUsed(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    user: Addressee,
    left: number,
  ): Promise<void> {
    await this.#mail.queue(
      repos.outbox,
      this.#texts.recoveryCodeUsedMessage(user.email, greeted(user), left, user.locale),
    );
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
