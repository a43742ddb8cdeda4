// The mechanics of a mail about an account, whichever feature sends it: each is recorded in the
// outbox of the caller's transaction, so it exists exactly when the change it is about commits;
// who is greeted by name; and the links that carry an account token. Links carry the token in the
// fragment (#token=…): a fragment is never sent to a server, so it reaches no access log and no
// Referer. Which mails there are, and when each is sent, is the features' (decision 380).
import { DEFAULT_LOCALE } from '../shared/locale.ts';
import { newAccountToken } from '../tokens/index.ts';
import type { AccountTokensRepository } from '../tokens/repository.ts';
import type { Mail, Recipient } from './catalog.ts';
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
export const greeted = (user: Addressee): string | undefined => (user.emailVerified ? user.name : undefined);

/** Other text the registrant chose (a passkey's name, say): by the same rule as the name. */
export const ifProven = (user: Addressee, text: string): string | undefined =>
  user.emailVerified ? text : undefined;

/** Mail to `user`'s address in its language, greeting `name` (by default, as `greeted` says). */
export const recipient = (user: Addressee, name: string | undefined = greeted(user)): Recipient => ({
  email: user.email,
  locale: user.locale,
  name,
});

export interface AccountMailPolicy {
  publicUrl: string;
  passwordResetTtlMs: number;
  emailVerifyTtlMs: number;
}

/** A link with an account token in it, and how long it works (a mail with a lifetime's `ttlMs`). */
export interface TokenLink {
  url: string;
  ttlMs: number;
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

  /**
   * The locale a new account keeps when its browser sent this Accept-Language: the first
   * language asked for that mail can be written in, else the default (en).
   */
  localeFor(acceptLanguage: string | undefined): string {
    return this.#mail.templates.localeFor(acceptLanguage) ?? DEFAULT_LOCALE;
  }

  /** Records `mail` to `to` in the outbox of the caller's transaction (MailService.compose). */
  async send<V>(
    repos: Pick<AccountMailRepositories, 'outbox'>,
    mail: Mail<V>,
    to: Recipient,
    values: NoInfer<V>,
  ): Promise<void> {
    await this.#mail.compose(repos.outbox, mail, to, values);
  }

  /** A link to {PUBLIC_URL}/verify-email proving `user.email`, valid EMAIL_VERIFY_TTL_SECONDS. */
  verificationLink(repos: AccountMailRepositories, user: Addressee): Promise<TokenLink> {
    return this.#link(repos, user, 'email-verify', '/verify-email', this.#policy.emailVerifyTtlMs);
  }

  /**
   * A link to {PUBLIC_URL}/reset-password, valid `ttlMs` (PASSWORD_RESET_TTL_SECONDS unless given).
   * The address the link goes to is kept with it: after an email change it opens nothing.
   */
  resetLink(
    repos: AccountMailRepositories,
    user: Addressee,
    ttlMs: number = this.#policy.passwordResetTtlMs,
  ): Promise<TokenLink> {
    return this.#link(repos, user, 'password-reset', '/reset-password', ttlMs);
  }

  async #link(
    repos: AccountMailRepositories,
    user: Addressee,
    purpose: 'email-verify' | 'password-reset',
    page: string,
    ttlMs: number,
  ): Promise<TokenLink> {
    const { token, tokenHash } = newAccountToken();
    const now = new Date(this.#now());
    await repos.tokens.add({
      tokenHash,
      userId: user.id,
      purpose,
      email: user.email,
      now,
      expiresAt: new Date(now.getTime() + ttlMs),
    });
    return { url: `${this.#policy.publicUrl}${page}#token=${token}`, ttlMs };
  }
}
