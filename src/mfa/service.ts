// TOTP (RFC 6238) as a second factor: set-up, confirmation, turning off, and the check sign-in
// makes once the password is right (auth/service.ts).
import { createHash, randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { InTransaction } from '../db/transactions.ts';
import type { AccountMail } from '../mail/account-mail.ts';
import type { OutboxRepository } from '../mail/repository.ts';
import type { MailService } from '../mail/service.ts';
import type { PasswordHasher } from '../passwords/hasher.ts';
import type { ActiveSession } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import { invalid } from '../shared/text.ts';
import { confirmPresentPassword, type PasswordAttempts } from '../users/reauth.ts';
import { toUser, type UsersRepository } from '../users/repository.ts';
import type { User } from '../users/user.ts';
import type { MfaRepository, TotpFactor } from './repository.ts';
import { SecretBox } from './sealing.ts';

const ISSUER = 'Usher';
const PERIOD_SECONDS = 30;
const DIGITS = 6;
/** Steps of clock drift accepted either way. */
const DRIFT_STEPS = 1;
/** 160 bits, RFC 4226's recommended secret length for HMAC-SHA-1. */
const SECRET_BYTES = 20;
const RECOVERY_CODES = 10;
// No 0/O, 1/I/L: read off a screen or paper and typed back without doubt. 31 symbols, so 12 of them
// carry about 59 random bits: too many to guess, even offline, which is why a fast hash is enough.
const RECOVERY_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
const RECOVERY_LENGTH = 12;
/** Longer than any code with its separators: not worth normalising. */
const CODE_INPUT_MAX = 64;

/**
 * Wrong codes after the right password (decision 146). The first FREE_CODE_FAILURES in a row are
 * judged at once (a person mistyping); then each one starts a delay, doubling from
 * FIRST_CODE_DELAY_MS up to MAX_CODE_DELAY_MS, before any code is checked again from a client the
 * account does not know. With three codes valid at a time (one step of drift either way), about
 * 45 guesses fit in 30 days: a 0.014% chance for someone holding the password (SECURITY.md).
 */
export const FREE_CODE_FAILURES = 5;
export const FIRST_CODE_DELAY_MS = 60_000;
export const MAX_CODE_DELAY_MS = 24 * 3600 * 1000;
/** At this many wrong codes in a row, the account's owner is mailed: someone has their password. */
export const CODE_FAILURES_MAILED_AT = 3;

/** The delay after `failures` wrong codes in a row; 0 while they are free. */
export function codeDelayMs(failures: number): number {
  if (failures < FREE_CODE_FAILURES) return 0;
  return Math.min(MAX_CODE_DELAY_MS, FIRST_CODE_DELAY_MS * 2 ** Math.min(30, failures - FREE_CODE_FAILURES));
}

export interface MfaRepositories {
  mfa: MfaRepository;
  outbox: OutboxRepository;
}

/** What sign-in learned about the second factor of an account whose password was right. */
export type SecondFactorCheck =
  | { kind: 'none' }
  | { kind: 'missing' }
  | { kind: 'wrong' }
  | { kind: 'totp'; step: number }
  | { kind: 'recovery_code'; codeHash: string };

const unavailable = () =>
  new AppError(
    'UNAVAILABLE',
    'Two-step sign-in is not available on this server: ENCRYPTION_KEY is needed (see README).',
  );

function recoveryCode(): string {
  let code = '';
  for (let i = 0; i < RECOVERY_LENGTH; i++) code += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8)}`;
}

/** The code as typed (any letter case, spaces or hyphens anywhere) to what is hashed. */
const normaliseRecoveryCode = (code: string) => code.toUpperCase().replace(/[\s-]/g, '');
const hashRecoveryCode = (normalised: string) => createHash('sha256').update(normalised).digest('hex');

export interface TotpServiceDeps {
  mfa: MfaRepository;
  users: UsersRepository;
  hasher: PasswordHasher;
  attempts: PasswordAttempts;
  transaction: InTransaction<MfaRepositories>;
  accountMail: AccountMail;
  mail: Pick<MailService, 'wake'>;
  /** The sealing key, or undefined where TOTP cannot be set up (PostgreSQL without ENCRYPTION_KEY). */
  key: () => Buffer | undefined;
  now: () => number;
}

export class TotpService {
  readonly #d: TotpServiceDeps;
  constructor(deps: TotpServiceDeps) {
    this.#d = deps;
  }

  #box(): SecretBox {
    const key = this.#d.key();
    if (!key) throw unavailable();
    return new SecretBox(key);
  }

  async #confirmPassword(actor: ActiveSession, password: string | undefined, address: string) {
    const current = await this.#d.users.findCredentialsById(actor.userId);
    if (!current) throw new AppError('UNAUTHENTICATED', 'The session has ended; sign in again.');
    await confirmPresentPassword(
      this.#d,
      current,
      password,
      address,
      'password',
      'your present password is required',
    );
    return current.user;
  }

  /**
   * POST /api/mfa/totp: a new secret, pending until a code from it is confirmed. A set-up in force
   * is refused (409): replacing it would need no code, so a session plus the password could move
   * the second factor to another device.
   */
  async begin(
    actor: ActiveSession,
    password: string | undefined,
    client: { address: string },
  ): Promise<{ secret: string; uri: string }> {
    const box = this.#box();
    const user = await this.#confirmPassword(actor, password, client.address);
    const secret = new Secret({ size: SECRET_BYTES }).base32;
    const saved = await this.#d.mfa.savePending(
      user.id,
      box.seal(secret, String(user.id)),
      new Date(this.#d.now()),
    );
    if (!saved) throw alreadyOn();
    const label = `${encodeURIComponent(ISSUER)}:${encodeURIComponent(user.email)}`;
    const uri = `otpauth://totp/${label}?secret=${secret}&issuer=${ISSUER}&algorithm=SHA1&digits=${DIGITS}&period=${PERIOD_SECONDS}`;
    return { secret, uri };
  }

  /** POST /api/mfa/totp/confirm: a code from the pending secret puts it in force. */
  async confirm(actor: ActiveSession, code: string): Promise<{ recoveryCodes: string[] }> {
    const factor = await this.#d.mfa.find(actor.userId);
    if (!factor) throw invalid('code', 'no set-up is pending; POST /api/mfa/totp first');
    if (factor.confirmed) throw alreadyOn();
    const secret = this.#box().open(factor.sealedSecret, String(actor.userId));
    const step = this.#matchingStep(secret, code);
    if (step === undefined) throw invalid('code', 'is not the current code of the new secret');
    const codes = Array.from({ length: RECOVERY_CODES }, recoveryCode);
    const user = toUser(actor.owner);
    const done = await this.#d.transaction(async ({ mfa, outbox }) => {
      if (!(await mfa.confirm(actor.userId, factor.sealedSecret, step, new Date(this.#d.now()))))
        return false;
      await mfa.replaceRecoveryCodes(
        actor.userId,
        codes.map((c) => hashRecoveryCode(normaliseRecoveryCode(c))),
      );
      await this.#d.accountMail.totpEnabled({ outbox }, user);
      return true;
    });
    // Another request replaced or confirmed the set-up meanwhile.
    if (!done) throw invalid('code', 'the set-up changed meanwhile; start again');
    this.#d.mail.wake();
    return { recoveryCodes: codes };
  }

  /** DELETE /api/mfa/totp: the password again; a pending set-up goes too. Nothing on: 204 all the same. */
  async disable(actor: ActiveSession, password: string | undefined, client: { address: string }) {
    const user = await this.#confirmPassword(actor, password, client.address);
    const wasOn = await this.#d.transaction(async ({ mfa, outbox }) => {
      const on = await mfa.remove(user.id);
      if (on) await this.#d.accountMail.totpDisabled({ outbox }, user);
      return on;
    });
    if (wasOn) this.#d.mail.wake();
  }

  /**
   * Sign-in, after the password verified: what the code is worth for the account whose factor
   * (`factor`, undefined without one) was read with its credentials. Reads nothing; `use` spends
   * the code in the transaction that starts the session.
   */
  check(factor: TotpFactor | undefined, code: string | undefined): SecondFactorCheck {
    if (!factor?.confirmed) return { kind: 'none' };
    if (code === undefined || code.trim() === '') return { kind: 'missing' };
    if (code.length > CODE_INPUT_MAX) return { kind: 'wrong' };
    const digits = code.replace(/\s/g, '');
    if (/^[0-9]+$/.test(digits)) {
      const secret = this.#box().open(factor.sealedSecret, String(factor.userId));
      const step = this.#matchingStep(secret, digits);
      // Whether the step was used already is decided by `use`, in the session's transaction.
      return step === undefined ? { kind: 'wrong' } : { kind: 'totp', step };
    }
    const normalised = normaliseRecoveryCode(code);
    if (normalised.length !== RECOVERY_LENGTH) return { kind: 'wrong' };
    return { kind: 'recovery_code', codeHash: hashRecoveryCode(normalised) };
  }

  /**
   * Spends a checked code in the caller's transaction (the one starting the session): false when
   * it was spent meanwhile, or the recovery code is not one of the user's. A recovery code's use
   * is mailed from the same transaction.
   */
  async use(
    repos: MfaRepositories,
    user: User,
    match: Extract<SecondFactorCheck, { kind: 'totp' | 'recovery_code' }>,
  ): Promise<boolean> {
    if (match.kind === 'totp') return repos.mfa.useStep(user.id, match.step);
    if (!(await repos.mfa.useRecoveryCode(user.id, match.codeHash))) return false;
    await repos.mfa.clearFailures(user.id);
    await this.#d.accountMail.recoveryCodeUsed(repos, user, await repos.mfa.recoveryCodesLeft(user.id));
    return true;
  }

  /**
   * How long before a code is checked again for the account whose factor is `factor` (0: now).
   * Clients the account knows are not held by it (auth/service.ts), so an attacker who has the
   * password cannot keep the owner out with wrong codes.
   */
  delayLeft(factor: TotpFactor | undefined): number {
    const until = factor?.lockedUntil;
    return until == null ? 0 : Math.max(0, until - this.#d.now());
  }

  /**
   * A wrong (or replayed) code after the right password: counted in a row, delayed once past the
   * free ones, and the owner mailed when the count reaches CODE_FAILURES_MAILED_AT.
   */
  async failed(user: User): Promise<void> {
    const mailed = await this.#d.transaction(async (repos) => {
      const failures = await repos.mfa.recordFailure(user.id);
      const delay = codeDelayMs(failures);
      if (delay > 0) await repos.mfa.delayCodes(user.id, this.#d.now() + delay);
      if (failures !== CODE_FAILURES_MAILED_AT) return false;
      await this.#d.accountMail.secondFactorFailures(repos, user, failures);
      return true;
    });
    if (mailed) this.#d.mail.wake();
  }

  /** After the session's transaction committed. */
  signedIn(method: SecondFactorCheck['kind']): void {
    if (method === 'recovery_code') this.#d.mail.wake();
  }

  /** The RFC 6238 time step `code` belongs to, within the drift allowed, or undefined. */
  #matchingStep(secret: string, code: string): number | undefined {
    if (!/^[0-9]{6}$/.test(code)) return undefined;
    const timestamp = this.#d.now();
    const totp = new TOTP({
      issuer: ISSUER,
      secret: Secret.fromBase32(secret),
      algorithm: 'SHA1',
      digits: DIGITS,
      period: PERIOD_SECONDS,
    });
    const delta = totp.validate({ token: code, timestamp, window: DRIFT_STEPS });
    if (delta === null) return undefined;
    return TOTP.counter({ period: PERIOD_SECONDS, timestamp }) + delta;
  }
}

const alreadyOn = () =>
  new AppError(
    'TOTP_ALREADY_ON',
    'Two-step sign-in is already on; turn it off (DELETE /api/mfa/totp) to set it up again.',
  );
