import type { InTransaction } from '../db/transactions.ts';
import type { CodeGate } from '../mfa/repository.ts';
import type { MfaRepositories, SecondFactorCheck, TotpService } from '../mfa/service.ts';
import { HashOverloadedError, PASSWORD_INPUT_MAX, type PasswordHasher } from '../passwords/hasher.ts';
import type { ActiveSession, SessionService, StartedSession } from '../sessions/service.ts';
import { toUser, type UsersRepository } from '../users/repository.ts';
import { EMAIL_MAX } from '../users/rules.ts';
import { emailKey, type User } from '../users/user.ts';
import type { SigninRepository } from './signin-repository.ts';
import type { Attempt, SigninThrottle } from './throttle.ts';

/** How a sign-in proved itself (the metric's label); passkeys will add theirs. */
export type SigninMethod = 'password' | 'totp' | 'recovery_code';

export type SigninOutcome =
  | {
      ok: true;
      user: User;
      started: StartedSession;
      method: SigninMethod;
      /** The token the client is known by from now on (its device cookie); undefined when devices are off. */
      deviceToken: string | undefined;
    }
  /** The right password for an account with TOTP in force, without a good code. */
  | { ok: false; reason: 'second-factor'; userId: bigint }
  | { ok: false; reason: 'credentials'; userId: bigint | undefined }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number }
  /** The right password for an account whose email is not verified, with REQUIRE_VERIFIED_EMAIL. */
  | { ok: false; reason: 'unverified'; userId: bigint };

export interface SigninRequest {
  email: string;
  password: string;
  /** A TOTP code or a recovery code, for accounts with TOTP in force. */
  code?: string | undefined;
  /** The client's address, for the throttle. */
  address: string;
  /** The device token the client sent (cookie or header), if any. */
  deviceToken?: string | undefined;
  userAgent?: string | undefined;
}

/** No account can have this email or password: registration refuses them. */
function impossibleCredentials(email: string, key: string, password: string): boolean {
  return (
    password.length > PASSWORD_INPUT_MAX ||
    email.length > EMAIL_MAX * 4 ||
    [...key].length > EMAIL_MAX ||
    // PostgreSQL cannot even compare text holding U+0000, and registration refuses it.
    key.includes('\u0000')
  );
}

/** A sign-in that spends a second-factor code writes its session in the transaction that spends it. */
export interface SigninRepositories extends MfaRepositories {
  users: UsersRepository;
  signins: SigninRepository;
}

/** The second factor as sign-in uses it (mfa/service.ts's TotpService). */
export type SecondFactor = Pick<TotpService, 'check' | 'use' | 'signedIn' | 'claimCheck' | 'failed'>;

type CodeMatch = Extract<SecondFactorCheck, { kind: 'totp' | 'recovery_code' }>;

export interface AuthServiceDeps {
  users: UsersRepository;
  signins: SigninRepository;
  hasher: PasswordHasher;
  throttle: SigninThrottle;
  sessions: SessionService;
  transaction: InTransaction<SigninRepositories>;
  requireVerifiedEmail: boolean;
  secondFactor: SecondFactor;
}

export class AuthService {
  readonly #users: UsersRepository;
  readonly #signins: SigninRepository;
  readonly #hasher: PasswordHasher;
  readonly #throttle: SigninThrottle;
  readonly #sessions: SessionService;
  readonly #transaction: InTransaction<SigninRepositories>;
  readonly #requireVerifiedEmail: boolean;
  readonly #secondFactor: SecondFactor;

  constructor(deps: AuthServiceDeps) {
    this.#secondFactor = deps.secondFactor;
    this.#requireVerifiedEmail = deps.requireVerifiedEmail;
    this.#users = deps.users;
    this.#signins = deps.signins;
    this.#hasher = deps.hasher;
    this.#throttle = deps.throttle;
    this.#sessions = deps.sessions;
    this.#transaction = deps.transaction;
  }

  /**
   * Checks an email and password from a client address and starts a session for them.
   *
   * Cheap checks first: credentials no account can have fail at once, touching neither the store
   * nor the hasher (their timing tells nothing: no account has them). Then the attempt is
   * reserved and counted in one step before any hashing, so simultaneous guesses are held to the
   * limit; throttled attempts are refused, the right password included. An unknown email costs
   * one dummy hash, the same work as a wrong password, so neither the answer nor its timing tells
   * whether the account exists. A session starts only if the verified hash is still the user's.
   */
  async signIn({
    email,
    password,
    code,
    address,
    deviceToken,
    userAgent,
  }: SigninRequest): Promise<SigninOutcome> {
    const key = email.length > EMAIL_MAX * 4 ? '' : emailKey(email);
    if (impossibleCredentials(email, key, password))
      return { ok: false, reason: 'credentials', userId: undefined };

    const verdict = await this.#throttle.begin(key, address, deviceToken);
    if (!verdict.allowed)
      return { ok: false, reason: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds };
    try {
      return await this.#judge(key, password, code, verdict.attempt, userAgent);
    } catch (error) {
      // Too busy to hash, or the database failed mid-way: the attempt was never judged, so it
      // is not held against anyone (best effort: the database may still be down).
      await verdict.attempt.abandoned().catch(() => {});
      throw error;
    }
  }

  async #judge(
    key: string,
    password: string,
    code: string | undefined,
    attempt: Attempt,
    userAgent: string | undefined,
  ): Promise<SigninOutcome> {
    const found = key === '' ? undefined : await this.#signins.findSigner(key);
    // An account without a password costs the dummy hash too: refused exactly like a wrong one.
    const verified =
      found?.passwordHash !== undefined
        ? await this.#hasher.verify(password, found.passwordHash)
        : await this.#hasher.verifyDummy(password);
    if (found && verified && this.#requireVerifiedEmail && !found.user.emailVerified) {
      // The credentials were right, so they are not held against the account; only the session waits.
      await attempt.succeeded();
      return { ok: false, reason: 'unverified', userId: found.user.id };
    }
    // The second factor is only looked at once the password is right, so a wrong password is
    // answered exactly as for any account and never tells that TOTP is on (the factor was read
    // with the hash, for any account, so the read's timing tells nothing either).
    let match: CodeMatch | undefined;
    let gate: CodeGate = { kind: 'account', userId: 0n };
    let failures = 0;
    if (found && verified) {
      const factor = this.#secondFactor.check(found.totp, code);
      if (factor.kind === 'missing') {
        // Not a guess: the first step of a two-step sign-in. Neither counted nor forgiven (a
        // success would clear the account's failed codes).
        await attempt.abandoned();
        return { ok: false, reason: 'second-factor', userId: found.user.id };
      }
      if (factor.kind !== 'none') {
        // Past a few wrong codes, codes wait a growing delay. A device the account knows counts
        // its own (the owner's), so wrong codes from someone with the password cannot lock the
        // owner out, and a stolen device cookie gets no more guesses than anyone else.
        gate = attempt.device.known
          ? {
              kind: 'device',
              tokenDigest: attempt.device.sent!.digest,
              accountDigest: attempt.forgiveness.accountDigest,
            }
          : { kind: 'account', userId: found.user.id };
        const claim = await this.#secondFactor.claimCheck(gate);
        if (!claim.ok) {
          // The code was not looked at: nothing is counted by the sliding window, for or against.
          await attempt.abandoned();
          return { ok: false, reason: 'throttled', retryAfterSeconds: Math.ceil(claim.retryAfterMs / 1000) };
        }
        failures = claim.failures;
        if (factor.kind === 'wrong') {
          await attempt.failed();
          await this.#secondFactor.failed(found.user, failures);
          return { ok: false, reason: 'second-factor', userId: found.user.id };
        }
        match = factor;
      }
    }
    // The hash was read before this request waited for a hashing slot: the password may have
    // changed, or the account gone, since. The session is only created against the same hash.
    // The token the client is to be known by, made only for a sign-in that can succeed.
    const device =
      found && verified && this.#throttle.devicesOn
        ? this.#throttle.deviceToRemember(attempt.device)
        : undefined;
    const started =
      found && verified
        ? await this.#startIfHash(found.user, found.passwordHash!, userAgent, match, gate, attempt, device)
        : undefined;
    if (started === 'code-spent') {
      await attempt.failed();
      await this.#secondFactor.failed(found!.user, failures);
      return { ok: false, reason: 'second-factor', userId: found!.user.id };
    }
    if (!found || started === undefined) {
      await attempt.failed();
      return { ok: false, reason: 'credentials', userId: found?.user.id };
    }
    if (match) this.#secondFactor.signedIn(match.kind);
    if (this.#hasher.needsRehash(found.passwordHash!))
      await this.#rehash(found.user.id, found.passwordHash!, password);
    return {
      ok: true,
      user: found.user,
      started,
      method: match?.kind ?? 'password',
      deviceToken: device?.token,
    };
  }

  /**
   * The session, created only if `passwordHash` is still the user's, in the same statement or
   * transaction as that check (which share-locks the row on PostgreSQL): a password change
   * either committed first, and no session starts, or waits and then ends this one. The
   * attempt's success is recorded with it, which also spares a commit (on SQLite, a disk flush
   * that holds up every other request) per sign-in. A second-factor code is spent in the same
   * transaction, so a code is used up exactly when it grants a session.
   */
  async #startIfHash(
    user: User,
    passwordHash: string,
    userAgent: string | undefined,
    match: CodeMatch | undefined,
    gate: CodeGate,
    attempt: Attempt,
    device: { digest: string } | undefined,
  ): Promise<StartedSession | 'code-spent' | undefined> {
    const { row, started } = this.#sessions.issue(user.id, userAgent);
    const now = row.now.getTime();
    const remember = device && {
      tokenDigest: device.digest,
      now,
      expiresAt: this.#throttle.deviceExpiry(now),
    };
    const grant = { session: row, passwordHash, forgive: attempt.forgiveness, remember };
    if (!match) return (await this.#signins.grantSession(grant)) ? started : undefined;
    return this.#transaction(async (repos) => {
      // The row is locked before the code is spent, so a code is never spent for a hash that
      // changed meanwhile.
      if (!(await repos.users.hasPasswordHash(user.id, passwordHash))) return undefined;
      if (!(await this.#secondFactor.use(repos, user, match, gate))) return 'code-spent';
      return (await repos.signins.grantSession(grant)) ? started : undefined;
    });
  }

  /** The device cookie's Max-Age. */
  get deviceTtlSeconds(): number {
    return this.#throttle.deviceTtlSeconds;
  }

  /** The user a session belongs to, as read with the session: no second query. */
  signedInUser(session: ActiveSession): User {
    return toUser(session.owner);
  }

  /** Upgrades a hash made with old parameters; when the hasher is too busy, the next sign-in will. */
  async #rehash(userId: bigint, current: string, password: string): Promise<void> {
    try {
      await this.#users.replacePasswordHash(userId, current, await this.#hasher.hash(password));
    } catch (error) {
      if (!(error instanceof HashOverloadedError)) throw error;
    }
  }
}
