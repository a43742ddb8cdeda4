// Sign-in by mail (issue 31, CONTRACT "Sign-in by mail, languages, and users from other systems"):
// a link or a 6-digit code mailed to the address proves the mailbox, and the sign-in core does the
// rest (throttle, disabled and verified rules, the second-factor ticket, session, audit, metric).
// An ask is recorded while the client waits, with the same work whether or not the email has an
// account (recovery/asks.ts); the background worker looks the account up and records the mail.
import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import type { OutboxRepository } from '../mail/repository.ts';
import type { MailService } from '../mail/service.ts';
import { type AskLimit, recordAsk } from '../recovery/index.ts';
import type { ResetRequest, ResetRequestsRepository } from '../recovery/repository.ts';
import { DEFAULT_LOCALE } from '../shared/locale.ts';
import type { Proof, SigninClient, SigninCore, SigninOutcome } from '../signin/core.ts';
import { hashAccountToken, isTokenShaped, newAccountToken } from '../tokens/index.ts';
import type { EmailProven, EmailProvenRepositories } from '../users/email-proven.ts';
import {
  checkEmail,
  checkName,
  EmailTakenError,
  emailKey,
  NAME_MAX,
  type User,
  type UsersRepository,
  userData,
} from '../users/index.ts';
import { mailSigninMails } from './mails.ts';
import type { MailSigninsRepository, StoredMailSignin } from './repository.ts';

export interface MailSigninRepositories extends EmailProvenRepositories {
  linkAsks: ResetRequestsRepository;
  codeAsks: ResetRequestsRepository;
  mailSignins: MailSigninsRepository;
  users: UsersRepository;
  outbox: OutboxRepository;
  journal: Journal;
}

export interface MailSigninPolicy extends AskLimit {
  /** Sign-in mails per email per window; further asks still answer 202 and send nothing. */
  perAccount: number;
  /** EMAIL_SIGNIN_CREATES_ACCOUNTS: an email with no account is mailed too, and the use creates it. */
  createsAccounts: boolean;
  publicUrl: string;
}

/** CONTRACT: a link lives 15 minutes, a code 10 minutes and dies with its 5th wrong try. */
export const LINK_TTL_MS = 15 * 60 * 1000;
export const CODE_TTL_MS = 10 * 60 * 1000;
export const CODE_MAX_FAILURES = 5;
const CODE_FORM = /^\d{6}$/;
const PENDING_BATCH = 50;
/** Another use spent the link or code first: rolls the use's transaction back. */
const NOT_WON = Symbol('not won');

/** A code is kept only as an HMAC under its row's own random key: the table holds no usable code. */
const codeHash = (salt: string, code: string) =>
  createHmac('sha256', Buffer.from(salt, 'hex')).update(code).digest('hex');

/** What a sign-in by mail answered, and where a link sends the browser afterwards. */
export interface MailSigninResult {
  outcome: SigninOutcome;
  /** The link's `redirectTo` (an absolute URL checked when it was asked for); undefined for a code. */
  redirectTo: string | undefined;
}

export interface MailSigninDeps {
  repositories: MailSigninRepositories;
  transaction: InTransaction<MailSigninRepositories>;
  core: SigninCore;
  mail: MailService;
  emailProven: EmailProven;
  policy: MailSigninPolicy;
  now: () => number;
}

export class MailSigninService {
  readonly #d: MailSigninDeps;
  constructor(deps: MailSigninDeps) {
    this.#d = deps;
  }

  /** POST /api/signin/email-link: `redirectTo` already checked (kernel/redirects.ts's safeRedirect). */
  async askLink(
    email: string,
    client: string,
    redirectTo: string,
    locale: string | undefined,
  ): Promise<void> {
    await recordAsk(
      this.#d.repositories.linkAsks,
      { email, client, now: this.#d.now(), redirectTo, locale },
      this.#d.policy,
      'Too many sign-in link requests from this address; try again later.',
    );
    this.#d.mail.wake();
  }

  /** POST /api/signin/email-code. */
  async askCode(email: string, client: string, locale: string | undefined): Promise<void> {
    await recordAsk(
      this.#d.repositories.codeAsks,
      { email, client, now: this.#d.now(), locale },
      this.#d.policy,
      'Too many sign-in code requests from this address; try again later.',
    );
    this.#d.mail.wake();
  }

  /** The worker: a link or code mailed for each recorded ask, within the email's limit. */
  async processRequests(): Promise<number> {
    const { linkAsks, codeAsks } = this.#d.repositories;
    let queued = 0;
    for (const ask of await linkAsks.pending(PENDING_BATCH))
      if (await this.#mailFor(ask, 'link')) queued += 1;
    for (const ask of await codeAsks.pending(PENDING_BATCH))
      if (await this.#mailFor(ask, 'code')) queued += 1;
    return queued;
  }

  /**
   * One ask, in a transaction with its mail: taken once (several instances), sent only to an
   * email with an account (or, with EMAIL_SIGNIN_CREATES_ACCOUNTS, to any well-formed email), and
   * at most `perAccount` times per window per email.
   */
  #mailFor(ask: ResetRequest, kind: 'link' | 'code'): Promise<boolean> {
    const { policy } = this.#d;
    return this.#d.transaction(async (repos) => {
      const asks = kind === 'link' ? repos.linkAsks : repos.codeAsks;
      if (!(await asks.take(ask.id)) || ask.emailKey === '') return false;
      // Instances mailing the same email at once count each other's mails.
      await repos.mailSignins.holdEmail(ask.emailKey);
      const user = await repos.users.findByEmailKey(ask.emailKey);
      if (!user && !(policy.createsAccounts && wellFormed(ask.emailKey))) return false;
      const now = this.#d.now();
      if ((await repos.mailSignins.countSince(ask.emailKey, now - policy.windowMs)) >= policy.perAccount)
        return false;
      const to = user?.email ?? ask.emailKey;
      const recipient = {
        email: to,
        // The account's name greets only at an address its owner has proven.
        name: user?.emailVerified ? user.name : undefined,
        // The account's language; for an email with no account, the asking browser's.
        locale: user?.locale ?? ask.locale ?? DEFAULT_LOCALE,
      };
      const entry = {
        email: to,
        emailKey: ask.emailKey,
        userId: user?.id ?? null,
        locale: ask.locale,
        now,
      };
      if (kind === 'link') {
        const { token, tokenHash } = newAccountToken();
        await repos.mailSignins.add({
          ...entry,
          kind,
          secretHash: tokenHash,
          salt: null,
          redirectTo: ask.redirectTo,
          expiresAt: now + LINK_TTL_MS,
        });
        const url = `${policy.publicUrl}/signin/email-link#token=${token}`;
        await this.#d.mail.compose(repos.outbox, mailSigninMails.signinLink, recipient, {
          url,
          ttlMs: LINK_TTL_MS,
        });
      } else {
        const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
        const salt = randomBytes(16).toString('hex');
        await repos.mailSignins.add({
          ...entry,
          kind,
          secretHash: codeHash(salt, code),
          salt,
          redirectTo: null,
          expiresAt: now + CODE_TTL_MS,
        });
        await this.#d.mail.compose(repos.outbox, mailSigninMails.signinCode, recipient, {
          code,
          ttlMs: CODE_TTL_MS,
        });
      }
      return true;
    });
  }

  /**
   * POST /api/signin/email-link/verify. A token guesses no account (256 random bits), so its
   * failures are counted per address, as a passkey's are.
   */
  async signInWithLink(token: string, client: SigninClient): Promise<MailSigninResult> {
    let redirectTo: string | undefined;
    const outcome = await this.#d.core.run(
      {
        name: 'email_link',
        throttle: { address: true },
        prove: async () => {
          const stored = isTokenShaped(token)
            ? await this.#d.repositories.mailSignins.findLink(hashAccountToken(token), this.#d.now())
            : undefined;
          if (!stored) return { ok: false };
          redirectTo = stored.redirectTo ?? undefined;
          return this.#redeem(stored, 'email_link');
        },
      },
      client,
    );
    return { outcome, redirectTo };
  }

  /**
   * POST /api/signin/email-code/verify. A code guesses at one account's secret: counted like a
   * password (per account, per address, per pair), and each wrong one also against the email's
   * live codes, which die with their 5th. An unknown email does the same reads and writes.
   */
  async signInWithCode(email: string, code: string, client: SigninClient): Promise<MailSigninResult> {
    const key = emailKey(email);
    const outcome = await this.#d.core.run(
      {
        name: 'email_code',
        throttle: { account: key },
        prove: async () => {
          const now = this.#d.now();
          const { mailSignins } = this.#d.repositories;
          // The try is counted against the email's live codes before it is compared, in one
          // statement: tries at once never compare more than five with one code (decision 341).
          const live = await mailSignins.takeTry(key, now, CODE_MAX_FAILURES);
          const given = code.replace(/[\s-]/g, '');
          const match = CODE_FORM.test(given) ? live.find((row) => sameCode(row, given)) : undefined;
          if (!match) {
            // The account guessed at, for its audit record: looked up for every email alike.
            const account = await this.#d.repositories.users.findByEmailKey(key);
            return { ok: false, userId: account?.id };
          }
          return this.#redeem(match, 'email_code');
        },
      },
      client,
    );
    return { outcome, redirectTo: undefined };
  }

  /**
   * Uses a link or code, in one transaction: it expires (exactly one use wins), the account it was
   * mailed for is still at that address, or is created now for an email that had none; the email
   * is verified (the mail reached it), and the email's other links and codes expire. The session
   * is the core's to grant: a second factor still applies (a ticket), as do the disabled rule.
   */
  async #redeem(stored: StoredMailSignin, via: 'email_link' | 'email_code'): Promise<Proof> {
    const fail = (userId?: bigint): Proof => ({ ok: false, userId });
    let unlinked = 0;
    try {
      const user = await this.#d.transaction(async (repos) => {
        const now = this.#d.now();
        // Spent with the email's other links and codes; rolled back when another use won.
        if (!(await repos.mailSignins.spend(stored.emailKey, stored.id, now, CODE_MAX_FAILURES)))
          throw NOT_WON;
        let user: User | undefined;
        if (stored.userId !== null) {
          user = await repos.users.findById(stored.userId);
          // Mailed to an address the account no longer has: it proves nothing about the new one.
          if (!user || emailKey(user.email) !== stored.emailKey) return undefined;
        } else {
          // Mailed to an email with no account: one made meanwhile (a registration) is not the
          // mailbox's to take over, and the setting may have been turned off since.
          if (!this.#d.policy.createsAccounts) return undefined;
          if (await repos.users.findByEmailKey(stored.emailKey)) return undefined;
          user = await this.#create(repos, stored, via);
        }
        // The mail reached the mailbox's owner, who takes the account (decisions 340, 343).
        const proof = await this.#d.emailProven.prove(repos, user, via, {
          at: new Date(now),
          actor: { actorId: user.id },
        });
        unlinked = proof.unlinked;
        return proof.verified ? { ...user, emailVerified: true } : user;
      });
      if (unlinked > 0) this.#d.mail.wake();
      if (!user) return fail(stored.userId ?? undefined);
      return { ok: true, user, secondFactor: { by: 'ticket' } };
    } catch (error) {
      if (error === NOT_WON) return fail(stored.userId ?? undefined);
      // Two uses of two links for one new email: the other made the account first.
      if (error instanceof EmailTakenError) return fail();
      throw error;
    }
  }

  /** An account for an email that had none: no password, named after the address, verified by this use. */
  async #create(
    repos: MailSigninRepositories,
    stored: StoredMailSignin,
    via: 'email_link' | 'email_code',
  ): Promise<User> {
    const user = await repos.users.insert({
      email: stored.email,
      emailKey: stored.emailKey,
      name: nameOf(stored.email),
      // The language of the browser that asked, as registration takes it.
      locale: stored.locale ?? undefined,
    });
    const actor = { actorId: user.id };
    await repos.journal.record(
      { type: 'user.created', userId: user.id, actor, details: { via } },
      { type: 'user.created', userId: user.id, data: { via, ...userData(user) } },
    );
    return user;
  }

  /** Background clean-up: links and codes expired for longer than the window (they count until then). */
  async purge(): Promise<void> {
    await this.#d.repositories.mailSignins.purgeExpired(this.#d.now() - this.#d.policy.windowMs);
  }
}

function sameCode(row: StoredMailSignin, code: string): boolean {
  if (row.salt === null) return false;
  return timingSafeEqual(Buffer.from(codeHash(row.salt, code), 'hex'), Buffer.from(row.secretHash, 'hex'));
}

/** Whether an email key would pass registration's rules (an account may be made with it). */
function wellFormed(key: string): boolean {
  try {
    checkEmail(key);
    return true;
  } catch {
    return false;
  }
}

/** The part before the @, as registration would take it; "User" when it is not a valid name. */
function nameOf(email: string): string {
  try {
    return checkName([...email.split('@')[0]!.trim()].slice(0, NAME_MAX).join(''));
  } catch {
    return 'User';
  }
}
