// TOTP (RFC 6238) as a second factor: set-up, confirmation, turning off, and the check sign-in
// makes once the password is right (auth/service.ts).
import { createHash, randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { confirmPresentPassword, type PasswordAttempts, signedInRecently } from '../kernel/reauth.ts';
import { SecretBox } from '../kernel/sealing.ts';
import type { AccountMail } from '../mail/account-mail.ts';
import { recipient } from '../mail/index.ts';
import type { OutboxRepository } from '../mail/repository.ts';
import type { MailService } from '../mail/service.ts';
import type { PasswordService } from '../passwords/service.ts';
import type { ActiveSession } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import { invalid } from '../shared/text.ts';
import { emailKey, toUser, type User, type UsersRepository } from '../users/index.ts';
import { totpMails } from './mails.ts';
import type { CodeGate, GateState, TotpFactor, TotpRepository } from './repository.ts';

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
 * Wrong codes after the right password (decision 146). The first FREE_CODE_FAILURES are judged at
 * once (a person mistyping); then each one starts a delay, doubling from FIRST_CODE_DELAY_MS up to
 * MAX_CODE_DELAY_MS, before any code is checked again through the same gate (the account's, for
 * clients it does not know; each known device's own). A good code does not wipe the count, it
 * only does not add to it; the count falls by one per CODE_FAILURE_DECAY_MS after the last wrong
 * code, and a password reset clears it. With three codes valid at a time, about 45 guesses fit in
 * 30 days through one gate: a 0.014% chance for someone holding the password (SECURITY.md).
 */
export const FREE_CODE_FAILURES = 5;
export const FIRST_CODE_DELAY_MS = 60_000;
export const MAX_CODE_DELAY_MS = 24 * 3600 * 1000;
export const CODE_FAILURE_DECAY_MS = 24 * 3600 * 1000;
/** At this many wrong codes, the account's owner is mailed: someone has their password. */
export const CODE_FAILURES_MAILED_AT = 3;

/** The wrong codes that still count at `now`: one fewer per CODE_FAILURE_DECAY_MS since the last. */
export function countingFailures(state: GateState, now: number): number {
  if (state.failuresAt === null) return state.failures;
  return Math.max(
    0,
    state.failures - Math.floor(Math.max(0, now - state.failuresAt) / CODE_FAILURE_DECAY_MS),
  );
}

/** Whether a code may be checked now, and if so how many wrong ones it makes should it be wrong. */
export type CodeCheckClaim = { ok: true; failures: number } | { ok: false; retryAfterMs: number };

/** The delay after `failures` wrong codes in a row; 0 while they are free. */
export function codeDelayMs(failures: number): number {
  if (failures < FREE_CODE_FAILURES) return 0;
  return Math.min(MAX_CODE_DELAY_MS, FIRST_CODE_DELAY_MS * 2 ** Math.min(30, failures - FREE_CODE_FAILURES));
}

/** A known device's wrong codes, kept by signin/ with the device (SigninDevicesRepository). */
export interface DeviceCodeGates {
  readCodeFailures(tokenDigest: string, accountDigest: string): Promise<GateState | undefined>;
  writeCodeFailures(tokenDigest: string, accountDigest: string, state: GateState): Promise<void>;
}

export interface TotpRepositories {
  totp: TotpRepository;
  devices: DeviceCodeGates;
  outbox: OutboxRepository;
  journal: Journal;
}

/** The state of `gate`: the account's (its factor's row) or a known device's (its device row). */
function readGate(repos: Pick<TotpRepositories, 'totp' | 'devices'>, gate: CodeGate) {
  return gate.kind === 'account'
    ? repos.totp.readGate(gate.userId)
    : repos.devices.readCodeFailures(gate.tokenDigest, gate.accountDigest);
}

function writeGate(repos: Pick<TotpRepositories, 'totp' | 'devices'>, gate: CodeGate, state: GateState) {
  return gate.kind === 'account'
    ? repos.totp.writeGate(gate.userId, state)
    : repos.devices.writeCodeFailures(gate.tokenDigest, gate.accountDigest, state);
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
    'Two-step sign-in is not available on this server: ENCRYPTION_KEY is needed (see docs/configuration.md).',
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
  totp: TotpRepository;
  users: Pick<UsersRepository, 'findById'>;
  passwords: Pick<PasswordService, 'verify' | 'has'>;
  attempts: PasswordAttempts;
  transaction: InTransaction<TotpRepositories>;
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
    const current = await this.#d.users.findById(actor.userId);
    if (!current) throw new AppError('UNAUTHENTICATED', 'The session has ended; sign in again.');
    // An account without a password (made through a provider) has none to confirm: a sign-in of
    // the last 10 minutes stands in for it, as it does for unlinking a provider (decision 199).
    if (password === undefined && !(await this.#d.passwords.has(current.id))) {
      if (signedInRecently(actor.createdAt, this.#d.now())) return current;
      throw new AppError(
        'REAUTHENTICATION_REQUIRED',
        'Your account has no password: sign in again, then do this within 10 minutes.',
      );
    }
    await confirmPresentPassword(
      { attempts: this.#d.attempts, passwords: this.#d.passwords, accountKey: emailKey },
      current,
      password,
      address,
      'password',
      'your present password is required',
    );
    return current;
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
    const saved = await this.#d.totp.savePending(
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
    const factor = await this.#d.totp.find(actor.userId);
    if (!factor) throw invalid('code', 'no set-up is pending; POST /api/mfa/totp first');
    if (factor.confirmed) throw alreadyOn();
    const secret = this.#box().open(factor.sealedSecret, String(actor.userId));
    const step = this.#matchingStep(secret, code);
    if (step === undefined) throw invalid('code', 'is not the current code of the new secret');
    const codes = Array.from({ length: RECOVERY_CODES }, recoveryCode);
    const user = toUser(actor.owner);
    const done = await this.#d.transaction(async ({ totp, outbox, journal }) => {
      if (!(await totp.confirm(actor.userId, factor.sealedSecret, step, new Date(this.#d.now()))))
        return false;
      await totp.replaceRecoveryCodes(
        actor.userId,
        codes.map((c) => hashRecoveryCode(normaliseRecoveryCode(c))),
      );
      await this.#d.accountMail.send({ outbox }, totpMails.totpEnabled, recipient(user), {});
      await journal.record({
        type: 'mfa.totp_added',
        userId: actor.userId,
        details: { recoveryCodes: RECOVERY_CODES },
      });
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
    const wasOn = await this.#d.transaction(async ({ totp, outbox, journal }) => {
      const on = await totp.remove(user.id);
      if (on) {
        await this.#d.accountMail.send({ outbox }, totpMails.totpDisabled, recipient(user), {});
        await journal.record({ type: 'mfa.totp_removed', userId: user.id, details: { via: 'self' } });
      }
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
    repos: TotpRepositories,
    user: User,
    match: Extract<SecondFactorCheck, { kind: 'totp' | 'recovery_code' }>,
    gate: CodeGate,
  ): Promise<boolean> {
    if (match.kind === 'totp') {
      if (!(await repos.totp.useStep(user.id, match.step))) return false;
      await this.checked(repos, gate);
      return true;
    }
    if (!(await repos.totp.useRecoveryCode(user.id, match.codeHash))) return false;
    await this.checked(repos, gate);
    const left = await repos.totp.recoveryCodesLeft(user.id);
    await this.#d.accountMail.send(repos, totpMails.recoveryCodeUsed, recipient(user), { left });
    return true;
  }

  /**
   * Before a code is checked: takes one check from `gate`, counted as a wrong code now, in a
   * transaction that holds its row, so simultaneous guesses cannot all slip in before the first
   * one's delay is written. A good code gives the check back (`checked`, in the session's
   * transaction). Refused while the gate's delay runs.
   */
  async claimCheck(gate: CodeGate): Promise<CodeCheckClaim> {
    return this.#d.transaction(async (repos) => {
      const state = await readGate(repos, gate);
      // The device or factor went meanwhile: the session's transaction decides.
      if (!state) return { ok: true, failures: 0 };
      const now = this.#d.now();
      if (state.lockedUntil !== null && state.lockedUntil > now)
        return { ok: false, retryAfterMs: state.lockedUntil - now };
      const failures = countingFailures(state, now) + 1;
      const delay = codeDelayMs(failures);
      await writeGate(repos, gate, {
        failures,
        failuresAt: now,
        lockedUntil: delay > 0 ? now + delay : null,
      });
      return { ok: true, failures };
    });
  }

  /** A good code, in the transaction that spends it: the check it claimed is given back. */
  async checked(repos: TotpRepositories, gate: CodeGate): Promise<void> {
    const state = await readGate(repos, gate);
    if (!state) return;
    const now = this.#d.now();
    await writeGate(repos, gate, {
      failures: Math.max(0, countingFailures(state, now) - 1),
      failuresAt: state.failuresAt,
      lockedUntil: null,
    });
  }

  /**
   * After a wrong (or replayed) code, whose claim made it the `failures`-th: the owner is mailed
   * when that reaches CODE_FAILURES_MAILED_AT.
   */
  async failed(user: User, failures: number): Promise<void> {
    if (failures !== CODE_FAILURES_MAILED_AT) return;
    await this.#d.transaction((repos) =>
      this.#d.accountMail.send(repos, totpMails.secondFactorFailures, recipient(user), { failures }),
    );
    this.#d.mail.wake();
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
