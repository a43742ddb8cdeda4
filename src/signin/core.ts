// The sign-in core: every way in ends here. A method (password, passkey; provider and mail in
// later issues) only proves who is there; the core applies, once for all of them, the throttle,
// the account rules (REQUIRE_VERIFIED_EMAIL), the second factor (a code in the body, or a ticket
// for methods without one), the session grant with its optional fence, and the known device.
// Its routes' half (the answer, the audit line, the metric, the failure's shape) is answers.ts.
import { createHash, randomBytes } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import type { SessionService, StartedSession } from '../sessions/service.ts';
import { addressKey } from '../shared/address.ts';
import type { CodeGate, TotpFactor } from '../totp/repository.ts';
import type { SecondFactorCheck, TotpRepositories, TotpService } from '../totp/service.ts';
import { accountDigest, type User } from '../users/index.ts';
import type { GrantRepository } from './grant-repository.ts';
import type { Attempt, SigninThrottle, ThrottleVerdict } from './throttle.ts';
import type { SigninTicketsRepository } from './ticket-repository.ts';

/** How a sign-in proved itself: the metric's and the audit line's `method`. */
export type SigninMethodName = 'password' | 'passkey' | 'oauth' | 'email_link' | 'email_code' | (string & {});

/** The second factor a successful sign-in also used, if any. */
export type SecondFactorKind = 'totp' | 'recovery_code';

export type SigninOutcome =
  | {
      ok: true;
      user: User;
      started: StartedSession;
      method: SigninMethodName;
      factor: SecondFactorKind | undefined;
      /** The token the client is known by from now on (its device cookie); undefined when devices are off. */
      deviceToken: string | undefined;
    }
  /**
   * The method succeeded for an account with TOTP in force, without a good code. `ticket` is set
   * for methods without a body to carry the code: POST /api/signin/second-factor spends it.
   */
  | { ok: false; reason: 'second-factor'; userId: bigint; ticket?: string | undefined }
  | { ok: false; reason: 'credentials'; userId: bigint | undefined }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number }
  /** The method succeeded for an account whose email is not verified, with REQUIRE_VERIFIED_EMAIL. */
  | { ok: false; reason: 'unverified'; userId: bigint }
  /** The method succeeded for an account an admin disabled: told only to who proved it. */
  | { ok: false; reason: 'disabled'; userId: bigint };

export type SigninFailure = Extract<SigninOutcome, { ok: false }>;

/** A failure of a ticket's second step, once the ticket was read: the method that left it. */
export type RedeemOutcome = SigninOutcome | (SigninFailure & { method: SigninMethodName });

/** The client a sign-in comes from. */
export interface SigninClient {
  /** The client's address, for the throttle. */
  address: string;
  /** The device token the client sent (cookie or header), if any. */
  deviceToken?: string | undefined;
  userAgent?: string | undefined;
}

/**
 * How a method is throttled. `account`: its failures are guesses at one account's secret
 * (password, mail code): counted per account, per address, per pair, and a known device by its own.
 * `address`: its failures guess nothing (a passkey's signature): counted per address only.
 */
export type ThrottleScope = { account: string } | { address: true };

/** What a method proved. */
export type Proof =
  | {
      ok: true;
      user: User;
      /**
       * How the second factor is met: `code`, a code the request carried (the account's factor was
       * read with the proof, in `totp`); `ticket`, no body for one (the core reads the factor and
       * leaves a ticket); `method`, the method is two factors itself (a passkey with user
       * verification).
       */
      secondFactor:
        | { by: 'code'; code: string | undefined; totp: TotpFactor | undefined }
        | { by: 'ticket' }
        | { by: 'method' };
      /** The session is granted only while the user still has this password hash, atomically. */
      fence?: { passwordHash: string } | undefined;
      /** Runs once the session is granted (a password hash upgraded). */
      granted?: (() => Promise<void>) | undefined;
      /**
       * The proof counts only for an account whose email is verified, as if REQUIRE_VERIFIED_EMAIL
       * were on (a provider identity that made its account with an email the provider did not verify).
       */
      needsVerifiedEmail?: boolean | undefined;
    }
  /** Not proven: a counted failure. `userId` when the method knows whose account was tried. */
  | { ok: false; userId?: bigint | undefined };

/** A sign-in method, as the core runs it. */
export interface SigninMethod {
  name: SigninMethodName;
  throttle: ThrottleScope;
  /** Proves who is there; called once the attempt passed the throttle. */
  prove(): Promise<Proof>;
}

/** A code is spent in the transaction that grants its session. */
export interface CoreRepositories extends TotpRepositories {
  /** The fence's check, which on PostgreSQL also share-locks what it reads until the commit. */
  users: {
    hasPasswordHash(userId: bigint, passwordHash: string): Promise<boolean>;
    holdForReference(userId: bigint): Promise<void>;
  };
  signins: Pick<GrantRepository, 'grantSession'>;
  tickets: SigninTicketsRepository;
  journal: Journal;
}

/** The second factor as the core uses it (totp/service.ts). */
export type SecondFactor = Pick<TotpService, 'check' | 'use' | 'signedIn' | 'claimCheck' | 'failed'>;

export interface SigninCoreDeps {
  throttle: SigninThrottle;
  signins: Pick<GrantRepository, 'grantSession'>;
  tickets: SigninTicketsRepository;
  /** The account's TOTP factor, for methods that carry no code (their ticket). */
  factorOf(userId: bigint): Promise<TotpFactor | undefined>;
  /** The user a ticket is for, when it is redeemed. */
  userById(userId: bigint): Promise<User | undefined>;
  sessions: SessionService;
  transaction: InTransaction<CoreRepositories>;
  secondFactor: SecondFactor;
  requireVerifiedEmail: boolean;
  now: () => number;
  /** Records sign-ins that did not succeed (a success is recorded with its session). */
  journal: Journal;
  /** The account an account-throttled method names, for the record of a throttled attempt. */
  userIdByAccount(account: string): Promise<bigint | undefined>;
}

type CodeMatch = Extract<SecondFactorCheck, { kind: 'totp' | 'recovery_code' }>;

/** A sign-in whose method succeeded, being judged by the core. */
interface Judging {
  method: SigninMethodName;
  proof: Extract<Proof, { ok: true }>;
  attempt: Attempt;
  client: SigninClient;
  /** Whether the client becomes a known device of the account (account-throttled methods). */
  remembers: boolean;
}

/** The code was spent meanwhile (a replay racing it): rolls the grant's transaction back. */
const CODE_SPENT = Symbol('code spent');

/** CONTRACT "Accounts and sign-in methods": a ticket lives 5 minutes and dies with 5 wrong codes. */
export const TICKET_TTL_MS = 5 * 60 * 1000;
export const TICKET_MAX_FAILURES = 5;
/** 256 random bits, base64url: the only form of ticket looked up. */
const TICKET_FORM = /^[A-Za-z0-9_-]{43}$/;
const digestOf = (token: string) => createHash('sha256').update(token).digest('hex');

/** RFC 8176's name for what each method proves (a method not listed claims nothing of its own). */
const METHOD_REFERENCES: Readonly<Record<string, string>> = { password: 'pwd', passkey: 'hwk', oauth: 'fed' };

/**
 * The session's `amr`, as an app signing in through Usher's provider is told it: the method's
 * reference, `otp` for a code (TOTP or a recovery code), and `mfa` when two factors were used (a
 * code after the method, or a passkey that verified its user).
 */
export function methodReferences(
  method: SigninMethodName,
  factor: SecondFactorKind | undefined,
  twoFactorMethod: boolean,
): string[] {
  const amr: string[] = [];
  const own = METHOD_REFERENCES[method];
  if (own) amr.push(own);
  if (factor) amr.push('otp');
  if (factor || twoFactorMethod) amr.push('mfa');
  return amr;
}

export class SigninCore {
  readonly #d: SigninCoreDeps;
  constructor(deps: SigninCoreDeps) {
    this.#d = deps;
  }

  /**
   * Runs one sign-in: the attempt is reserved and counted before the method proves anything (so
   * simultaneous guesses are held to the limit), then the proof is judged. An attempt that
   * throws (too busy to hash, the database failed) was never judged and is not held against
   * anyone.
   */
  async run(method: SigninMethod, client: SigninClient): Promise<SigninOutcome> {
    const verdict =
      'account' in method.throttle
        ? await this.#d.throttle.begin(method.throttle.account, client.address, client.deviceToken)
        : await this.#d.throttle.beginForAddress(method.name, client.address);
    const outcome = await this.#judged(verdict, async (attempt) => {
      const proof = await method.prove();
      if (!proof.ok) {
        await attempt.failed();
        return { ok: false, reason: 'credentials', userId: proof.userId };
      }
      return this.#finish(method.name, proof, attempt, client, 'account' in method.throttle);
    });
    if (!outcome.ok) {
      const account = 'account' in method.throttle ? method.throttle.account : undefined;
      await this.#recordFailure(method.name, client, outcome, account);
    }
    return outcome;
  }

  /**
   * The audit record of a sign-in that did not succeed: refused by the throttle, wrong
   * credentials, a disabled or unverified account. A first step that now needs a code is not one
   * (its code is recorded, right or wrong). An email with no account is kept only as a digest.
   * A throttled attempt costs its client no hashing, so it may come at any rate: it is tallied,
   * one record per account (or, with none, per network) and method and hour, counted.
   */
  async #recordFailure(
    method: SigninMethodName,
    client: SigninClient,
    outcome: SigninFailure,
    account: string | undefined,
  ): Promise<void> {
    if (outcome.reason === 'second-factor') return;
    let userId = 'userId' in outcome ? outcome.userId : undefined;
    if (outcome.reason === 'throttled' && account !== undefined && account !== '')
      userId = await this.#d.userIdByAccount(account);
    const actor = { actorId: null, address: client.address, userAgent: client.userAgent ?? null };
    if (outcome.reason === 'throttled') {
      // Not by the email when it has no account: the attacker would pick a new one per attempt.
      const subject = userId === undefined ? `network:${addressKey(client.address)}` : `user:${userId}`;
      await this.#d.journal.tally(
        {
          type: 'signin.throttled',
          userId: userId ?? null,
          actor,
          details: { method, retryAfterSeconds: outcome.retryAfterSeconds },
        },
        `${subject} ${method}`,
      );
      return;
    }
    const unknownAccount = userId === undefined && account !== undefined && account !== '';
    await this.#d.journal.record({
      type: 'signin.failed',
      userId: userId ?? null,
      actor,
      details: {
        method,
        reason: outcome.reason,
        ...(unknownAccount ? { emailDigest: accountDigest(account) } : {}),
      },
    });
  }

  /**
   * The attempt the throttle let through, judged by `judge`; refused ones answer `throttled`. An
   * attempt whose judging throws was never judged, and is not held against anyone.
   */
  async #judged<T extends SigninOutcome>(
    verdict: ThrottleVerdict,
    judge: (attempt: Attempt) => Promise<T>,
  ): Promise<T | Extract<SigninOutcome, { reason: 'throttled' }>> {
    if (!verdict.allowed)
      return { ok: false, reason: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds };
    try {
      return await judge(verdict.attempt);
    } catch (error) {
      // Best effort: the database may still be down.
      await verdict.attempt.abandoned().catch(() => {});
      throw error;
    }
  }

  async #finish(
    method: SigninMethodName,
    proof: Extract<Proof, { ok: true }>,
    attempt: Attempt,
    client: SigninClient,
    remembers: boolean,
  ): Promise<SigninOutcome> {
    const { user } = proof;
    if (user.disabled) {
      // Not a guess either: the credential was right, so it is not held against the account.
      await attempt.succeeded();
      return { ok: false, reason: 'disabled', userId: user.id };
    }
    if ((this.#d.requireVerifiedEmail || proof.needsVerifiedEmail) && !user.emailVerified) {
      // The method succeeded, so the attempt is not held against the account; only the session waits.
      await attempt.succeeded();
      return { ok: false, reason: 'unverified', userId: user.id };
    }
    const factor = proof.secondFactor;
    if (factor.by === 'ticket') {
      const totp = await this.#d.factorOf(user.id);
      if (this.#d.secondFactor.check(totp, undefined).kind === 'missing') {
        // Not a guess: the method's part is done, the code comes with the ticket.
        await attempt.abandoned();
        return {
          ok: false,
          reason: 'second-factor',
          userId: user.id,
          ticket: await this.#ticket(user, method),
        };
      }
    }
    const context = { method, proof, attempt, client, remembers };
    if (factor.by !== 'code') return this.#grant(context, undefined, undefined);
    return this.#withCode(context, factor.totp, factor.code, undefined);
  }

  /**
   * The second factor by a code, once the method succeeded: looked at only now, so a failed
   * method is answered alike for every account and never tells that TOTP is on. Past a few wrong
   * codes, codes wait a growing delay; a device the account knows counts its own (the owner's),
   * so wrong codes from someone with the password cannot lock the owner out.
   */
  async #withCode(
    context: Judging,
    totp: TotpFactor | undefined,
    code: string | undefined,
    ticket: { digest: string } | undefined,
  ): Promise<SigninOutcome> {
    const { attempt } = context;
    const { user } = context.proof;
    const check = this.#d.secondFactor.check(totp, code);
    if (check.kind === 'none') return this.#grant(context, undefined, ticket);
    if (check.kind === 'missing') {
      // Not a guess: the first step of a two-step sign-in. Neither counted nor forgiven (a
      // success would clear the account's failed codes).
      await attempt.abandoned();
      return { ok: false, reason: 'second-factor', userId: user.id };
    }
    const gate: CodeGate = attempt.device.known
      ? {
          kind: 'device',
          tokenDigest: attempt.device.sent!.digest,
          accountDigest: attempt.forgiveness.accountDigest,
        }
      : { kind: 'account', userId: user.id };
    const claim = await this.#d.secondFactor.claimCheck(gate);
    if (!claim.ok) {
      // The code was not looked at: nothing is counted by the sliding window, for or against.
      await attempt.abandoned();
      return { ok: false, reason: 'throttled', retryAfterSeconds: Math.ceil(claim.retryAfterMs / 1000) };
    }
    if (check.kind === 'wrong')
      return this.#wrongCode(user, claim.failures, attempt, ticket, context.method, context.client);
    const spent = { match: check, gate, failures: claim.failures };
    return this.#grant(context, spent, ticket);
  }

  async #wrongCode(
    user: User,
    failures: number,
    attempt: Attempt,
    ticket: { digest: string } | undefined,
    method: SigninMethodName,
    client: SigninClient,
  ): Promise<SigninOutcome> {
    await attempt.failed();
    await this.#d.journal.record({
      type: 'signin.failed',
      userId: user.id,
      actor: { actorId: null, address: client.address, userAgent: client.userAgent ?? null },
      details: { method, reason: 'second-factor' },
    });
    if (ticket) await this.#d.tickets.failed(ticket.digest, TICKET_MAX_FAILURES);
    await this.#d.secondFactor.failed(user, failures);
    return { ok: false, reason: 'second-factor', userId: user.id };
  }

  /**
   * The session, created only while the fence holds, in the same statement or transaction as
   * that check (which share-locks the row on PostgreSQL): a password change either committed
   * first, and no session starts, or waits and then ends this one. The attempt's success is
   * recorded with it. A second-factor code (and a ticket) is spent in the same transaction, so
   * it is used up exactly when it grants a session.
   */
  async #grant(
    { method, proof, attempt, client, remembers }: Judging,
    code: { match: CodeMatch; gate: CodeGate; failures: number } | undefined,
    ticket: { digest: string } | undefined,
  ): Promise<SigninOutcome> {
    const { user } = proof;
    const throttle = this.#d.throttle;
    // The token the client is to be known by, made only for a sign-in that can succeed, and only
    // for a method judged by the account's throttle (the device is the account's).
    const device = remembers && throttle.devicesOn ? throttle.deviceToRemember(attempt.device) : undefined;
    const amr = methodReferences(method, code?.match.kind, proof.secondFactor.by === 'method');
    const { row, started } = this.#d.sessions.issue(user.id, client.userAgent, amr);
    const now = row.now.getTime();
    // The sign-in's audit record and user.signed_in event, written with the session.
    const factorUsed = code?.match.kind;
    const entry = this.#d.journal.prepare(
      {
        type: 'signin.succeeded',
        userId: user.id,
        actor: { actorId: user.id, address: client.address, userAgent: client.userAgent ?? null },
        details: { method, ...(factorUsed ? { factor: factorUsed } : {}), sessionId: started.session.id },
      },
      { type: 'user.signed_in', userId: user.id, data: { method, sessionId: started.session.id } },
      row.now,
    );
    const grant = {
      session: row,
      passwordHash: proof.fence?.passwordHash,
      forgive: attempt.forgiveness,
      remember: device && { tokenDigest: device.digest, now, expiresAt: throttle.deviceExpiry(now) },
      entry,
    };
    let granted: boolean;
    let written: number[] = [];
    if (!code && !ticket) ({ granted, written } = await this.#d.signins.grantSession(grant));
    else
      try {
        ({ granted, written } = await this.#d.transaction(async (repos) => {
          const refused = { granted: false, written: [] };
          if (ticket) {
            // The user row first, as a deletion takes it before the ticket's and the factor's.
            await repos.users.holdForReference(user.id);
            if (!(await repos.tickets.spend(ticket.digest, this.#d.now(), TICKET_MAX_FAILURES)))
              return refused;
          }
          // The fence is checked (and the row locked) before the code is spent, so a code is never
          // spent for a password that changed meanwhile.
          const fence = grant.passwordHash;
          if (fence !== undefined && !(await repos.users.hasPasswordHash(user.id, fence))) return refused;
          // Thrown, so that the ticket spent above is given back with the rollback.
          if (code && !(await this.#d.secondFactor.use(repos, user, code.match, code.gate))) throw CODE_SPENT;
          const result = await repos.signins.grantSession(grant);
          if (result.granted && code)
            await repos.journal.record({
              type: 'mfa.used',
              userId: user.id,
              actor: { actorId: user.id, address: client.address, userAgent: client.userAgent ?? null },
              details: { factor: code.match.kind, method },
            });
          return result;
        }));
      } catch (error) {
        if (error !== CODE_SPENT) throw error;
        return this.#wrongCode(user, code!.failures, attempt, ticket, method, client);
      }
    this.#d.journal.written(written);
    if (!granted) {
      await attempt.failed();
      return { ok: false, reason: 'credentials', userId: user.id };
    }
    if (code) this.#d.secondFactor.signedIn(code.match.kind);
    await proof.granted?.();
    return { ok: true, user, started, method, factor: code?.match.kind, deviceToken: device?.token };
  }

  /** A ticket for a method's sign-in that still needs a code; only its digest is stored. */
  async #ticket(user: User, method: SigninMethodName): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await this.#d.tickets.create({
      tokenDigest: digestOf(token),
      userId: user.id,
      method,
      expiresAt: this.#d.now() + TICKET_TTL_MS,
    });
    return token;
  }

  /**
   * POST /api/signin/second-factor: finishes a ticket's sign-in with a code, as the method that
   * left the ticket. Throttled per address like any code, and by the account's code delay; the
   * ticket dies with its 5th wrong code or when it is spent.
   */
  async redeem(ticket: string, code: string | undefined, client: SigninClient): Promise<RedeemOutcome> {
    const verdict = await this.#d.throttle.beginForAddress('second-factor', client.address);
    const outcome = await this.#judged<RedeemOutcome>(verdict, async (attempt) => {
      const digest = TICKET_FORM.test(ticket) ? digestOf(ticket) : undefined;
      const stored = digest && (await this.#d.tickets.find(digest, this.#d.now(), TICKET_MAX_FAILURES));
      const user = stored && (await this.#d.userById(stored.userId));
      if (!digest || !stored || !user) {
        await attempt.failed();
        return { ok: false, reason: 'credentials', userId: undefined };
      }
      if (user.disabled) {
        // Disabled since the ticket was left: the ticket proved the first step.
        await attempt.abandoned();
        return { ok: false, reason: 'disabled', userId: user.id, method: stored.method };
      }
      const totp = await this.#d.factorOf(user.id);
      const proof = { ok: true, user, secondFactor: { by: 'code', code, totp } } as const;
      const context = { method: stored.method, proof, attempt, client, remembers: false };
      const outcome = await this.#withCode(context, totp, code, { digest });
      return outcome.ok ? outcome : { ...outcome, method: stored.method };
    });
    // A wrong code was recorded as it was judged; a bad ticket, a throttled or a disabled one here.
    if (!outcome.ok && outcome.reason !== 'second-factor')
      await this.#recordFailure(
        'method' in outcome ? outcome.method : 'second-factor',
        client,
        outcome,
        undefined,
      );
    return outcome;
  }

  /** The device cookie's Max-Age. */
  get deviceTtlSeconds(): number {
    return this.#d.throttle.deviceTtlSeconds;
  }

  purgeExpired(): Promise<void> {
    return this.#d.tickets.deleteExpired(this.#d.now());
  }
}
