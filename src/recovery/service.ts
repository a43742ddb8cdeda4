import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import type { AccountMail } from '../mail/account-mail.ts';
import type { OutboxRepository } from '../mail/repository.ts';
import type { MailService } from '../mail/service.ts';
import { checkPassword } from '../passwords/index.ts';
import type { PasswordRepositories, PasswordService } from '../passwords/service.ts';
import { sessionsEnded } from '../sessions/index.ts';
import type { SessionsRepository } from '../sessions/repository.ts';
import { AppError } from '../shared/errors.ts';
import { hashAccountToken, isTokenShaped } from '../tokens/index.ts';
import type { AccountTokensRepository } from '../tokens/repository.ts';
import type { TotpRepository } from '../totp/repository.ts';
import type { EmailProven, EmailProvenRepositories } from '../users/email-proven.ts';
import { emailKey, mailPasswordChanged, mailVerification } from '../users/index.ts';
import type { UsersRepository } from '../users/repository.ts';
import { recordAsk } from './asks.ts';
import { mailPasswordReset } from './mails.ts';
import type { ResetRequestsRepository } from './repository.ts';

export interface RecoveryRepositories extends PasswordRepositories, EmailProvenRepositories {
  users: UsersRepository;
  sessions: SessionsRepository;
  tokens: AccountTokensRepository;
  outbox: OutboxRepository;
  requests: ResetRequestsRepository;
  totp: TotpRepository;
  /** What apps signed in through Usher's provider hold (oidc/): revoked with a reset. */
  appAccess: { revokeAccount(userId: bigint): Promise<void> };
  journal: Journal;
}

export interface RecoveryPolicy {
  /** Reset mails per account per window. */
  perAccount: number;
  /** Forgot-password asks per client address per window. */
  perAddress: number;
  windowMs: number;
}

/**
 * The sign-in throttle as a password reset uses it. Declared here, and met by signin/throttle.ts's
 * SigninThrottle, so recovery/ does not depend on auth/ (as kernel/reauth.ts's PasswordAttempts is).
 */
export interface ResetThrottle {
  /** Clears the account's counted sign-in failures, from every address. */
  forgiveAccount(accountKey: string): Promise<void>;
  /** Makes the client a known device of the account: the token to hand it, undefined when devices are off. */
  rememberDevice(accountKey: string, deviceToken: string | undefined): Promise<string | undefined>;
}

const invalidToken = () =>
  new AppError(
    'INVALID_TOKEN',
    'token: this link is unknown, was already used, or has expired; ask for a new one.',
  );

const PENDING_BATCH = 50;

/**
 * Password reset and email verification. A forgot-password ask is only recorded while the client
 * waits (the same work whether or not the email has an account); the background worker looks
 * the account up and records the mail. Using a token consumes it in the transaction that makes
 * the change, so a link works once.
 */
export class RecoveryService {
  readonly #repos: RecoveryRepositories;
  readonly #transaction: InTransaction<RecoveryRepositories>;
  readonly #passwords: PasswordService;
  readonly #throttle: ResetThrottle;
  readonly #accountMail: AccountMail;
  readonly #mail: MailService;
  readonly #emailProven: EmailProven;
  readonly #policy: RecoveryPolicy;
  readonly #now: () => number;

  constructor(deps: {
    repositories: RecoveryRepositories;
    transaction: InTransaction<RecoveryRepositories>;
    passwords: PasswordService;
    throttle: ResetThrottle;
    accountMail: AccountMail;
    mail: MailService;
    emailProven: EmailProven;
    policy: RecoveryPolicy;
    now?: () => number;
  }) {
    this.#repos = deps.repositories;
    this.#transaction = deps.transaction;
    this.#passwords = deps.passwords;
    this.#throttle = deps.throttle;
    this.#accountMail = deps.accountMail;
    this.#mail = deps.mail;
    this.#emailProven = deps.emailProven;
    this.#policy = deps.policy;
    this.#now = deps.now ?? Date.now;
  }

  /**
   * POST /api/password/forgot: records the ask and wakes the worker. Counted before anything
   * else, like the sign-in throttle: more than the limit from one address is a 429.
   */
  async forgot(email: string, client: string): Promise<void> {
    await recordAsk(
      this.#repos.requests,
      { email, client, now: this.#now() },
      this.#policy,
      'Too many password-reset requests from this address; try again later.',
    );
    this.#repos.journal.count('password.reset_requested');
    this.#mail.wake();
  }

  /** The worker: a reset mail for each recorded ask whose email has an account, within its limit. */
  async processRequests(): Promise<number> {
    let queued = 0;
    for (const request of await this.#repos.requests.pending(PENDING_BATCH)) {
      const sent = await this.#transaction(async (repos) => {
        if (!(await repos.requests.take(request.id))) return false;
        // An account without a password is mailed a link too: the reset sets its first one.
        const found =
          request.emailKey === '' ? undefined : await repos.users.findByEmailKey(request.emailKey);
        if (!found) return false;
        const since = new Date(this.#now() - this.#policy.windowMs);
        if ((await repos.tokens.countSince(found.id, 'password-reset', since)) >= this.#policy.perAccount) {
          return false;
        }
        await mailPasswordReset(this.#accountMail, repos, found);
        return true;
      });
      if (sent) queued += 1;
    }
    return queued;
  }

  /**
   * POST /api/password/reset: a new password from a reset link. Ends every session of the user,
   * voids their other reset links, marks the email verified (the link reached its owner), forgives
   * the account's sign-in failures, and mails a notice.
   */
  /**
   * `deviceToken`: the client's device token, if it sent one. Resolves the device token the
   * client is now known by for the account (undefined when known devices are off): the link
   * proved the mailbox, so this client is the owner's way back in while others' failures hold the
   * account (decision 145).
   */
  async reset(token: string, password: string, deviceToken?: string): Promise<string | undefined> {
    const tokenHash = isTokenShaped(token) ? hashAccountToken(token) : undefined;
    // Checked before the (costly) hash; consumed below, in the transaction of the change.
    if (!tokenHash || !(await this.#repos.tokens.find(tokenHash, 'password-reset', new Date(this.#now())))) {
      this.#repos.journal.count('password.reset_refused');
      throw invalidToken();
    }
    const next = await this.#passwords.prepare(await checkPassword(password));
    const user = await this.#transaction(async (repos) => {
      const now = new Date(this.#now());
      const holder = await repos.tokens.consume(tokenHash, 'password-reset', now);
      const user = holder && (await repos.users.findById(holder.userId));
      // A link mailed to an address the account no longer has must not reset it (nor prove the
      // new address, which the reset marks verified).
      if (!user || holder.email === null || emailKey(holder.email) !== emailKey(user.email))
        throw invalidToken();
      // Sets the account's password, whether it had one or not.
      await this.#passwords.set(repos, user.id, next);
      const ended = await repos.sessions.deleteForUser(user.id);
      await repos.appAccess.revokeAccount(user.id);
      await repos.tokens.voidAll(user.id, 'password-reset', now);
      // Whoever was guessing codes with the old password has it no more.
      await repos.totp.clearFailures(user.id);
      // The link reached the address: it is proven now, as the row just marked.
      await mailPasswordChanged(this.#accountMail, repos, { ...user, emailVerified: true });
      // No one is signed in: the link's holder is the account's owner.
      const actor = { actorId: user.id };
      await repos.journal.record(
        { type: 'password.reset', userId: user.id, actor, details: { via: 'reset' } },
        { type: 'password.changed', userId: user.id, data: { via: 'reset' } },
      );
      // The link reached the mailbox, whose owner takes the account (decisions 195, 340, 343).
      await this.#emailProven.prove(repos, user, 'password_reset', { at: now, actor });
      await sessionsEnded(repos.journal, user.id, ended, 'password_reset', actor);
      return user;
    });
    await this.#throttle.forgiveAccount(emailKey(user.email));
    this.#mail.wake();
    return this.#throttle.rememberDevice(emailKey(user.email), deviceToken);
  }

  /** POST /api/email/verify: the link proves the address it was sent to, if it is still the user's. */
  async verifyEmail(token: string): Promise<void> {
    if (!isTokenShaped(token)) throw invalidToken();
    const unlinked = await this.#transaction(async (repos) => {
      const now = new Date(this.#now());
      const holder = await repos.tokens.consume(hashAccountToken(token), 'email-verify', now);
      const user = holder && (await repos.users.findById(holder.userId));
      // A link to an address the account no longer has proves nothing about the current one.
      if (!user || holder.email === null || emailKey(holder.email) !== emailKey(user.email))
        throw invalidToken();
      // The link reached the mailbox's owner, who takes the account (decisions 340, 343).
      const proof = await this.#emailProven.prove(repos, user, 'email_verification', {
        at: now,
        actor: { actorId: user.id },
      });
      return proof.unlinked;
    });
    if (unlinked > 0) this.#mail.wake();
  }

  /** POST /api/email/verify/resend: a new link, unless verified already or over the per-account limit. */
  async resendVerification(userId: bigint): Promise<void> {
    const queued = await this.#transaction(async (repos) => {
      const user = await repos.users.findById(userId);
      if (!user || user.emailVerified) return false;
      const since = new Date(this.#now() - this.#policy.windowMs);
      if ((await repos.tokens.countSince(user.id, 'email-verify', since)) >= this.#policy.perAccount)
        return false;
      await mailVerification(this.#accountMail, repos, user);
      return true;
    });
    if (queued) this.#mail.wake();
  }

  /** Background clean-up: handled asks past the window, and tokens expired for longer than it. */
  async purge(): Promise<void> {
    const before = this.#now() - this.#policy.windowMs;
    await this.#repos.requests.purgeBefore(before);
    await this.#repos.tokens.purgeExpired(new Date(before));
  }
}
