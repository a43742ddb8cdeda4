// Composition: repositories and services for one database and configuration. The HTTP app and
// the admin CLI share it, so both apply the same rules (validation, hashing, session revocation).

import type { Kysely } from 'kysely';
import { SigninDevicesRepository } from './auth/device-repository.ts';
import { AuthService } from './auth/service.ts';
import { SigninRepository } from './auth/signin-repository.ts';
import { SigninThrottle } from './auth/throttle.ts';
import { SigninAttemptsRepository } from './auth/throttle-repository.ts';
import { CatalogRepository } from './catalog/repository.ts';
import { CatalogService } from './catalog/service.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { Tables } from './db/schema.ts';
import { inTransaction } from './db/transactions.ts';
import { AccountMail } from './mail/account-mail.ts';
import { OutboxRepository } from './mail/repository.ts';
import { MailService } from './mail/service.ts';
import { createTransport } from './mail/transport.ts';
import { MfaRepository } from './mfa/repository.ts';
import { keySource } from './mfa/sealing.ts';
import { TotpService } from './mfa/service.ts';
import { PasskeysRepository } from './passkeys/repository.ts';
import { PasskeyService, relyingParty } from './passkeys/service.ts';
import { PasswordHasher } from './passwords/hasher.ts';
import { PasswordCredentialsRepository } from './passwords/repository.ts';
import { PasswordService } from './passwords/service.ts';
import { ResetRequestsRepository } from './recovery/repository.ts';
import { RecoveryService } from './recovery/service.ts';
import { SessionsRepository } from './sessions/repository.ts';
import { type Clock, SessionService } from './sessions/service.ts';
import { AccountTokensRepository } from './tokens/repository.ts';
import { EmailChangeLimits, PasskeyOptionsLimits, RegistrationLimits } from './users/limits.ts';
import { LimitEventsRepository } from './users/limits-repository.ts';
import { Reauthentication } from './users/reauth.ts';
import { UsersRepository } from './users/repository.ts';
import { UsersService } from './users/service.ts';

export interface Services {
  hasher: PasswordHasher;
  users: UsersService;
  auth: AuthService;
  sessions: SessionService;
  throttle: SigninThrottle;
  catalog: CatalogService;
  mail: MailService;
  recovery: RecoveryService;
  passkeys: PasskeyService;
  totp: TotpService;
  /** Background clean-up of expired sessions, sign-in attempts, tokens and old mail. */
  housekeeping(): Promise<void>;
  /** Background work: forgot-password asks, then the mail that is due (until `stopping()`). */
  deliver(stopping?: () => boolean): Promise<void>;
}

/** Sent and failed messages are kept this long for operators, then removed. */
const FINISHED_MAIL_KEPT_MS = 7 * 24 * 3600 * 1000;

/** `now`: the clock sessions, the throttle, tokens and mail read; tests pass one they can move. */
export function createServices(config: Config, database: Database, now: Clock = Date.now): Services {
  const postgres = database.dialect === 'postgres';
  // Row locks are PostgreSQL's; SQLite's one writer at a time needs none.
  const rowLocks = postgres;
  const repositories = (db: Kysely<Tables>) => ({
    users: new UsersRepository(db, { rowLocks }),
    passwords: new PasswordCredentialsRepository(db, { rowLocks }),
    sessions: new SessionsRepository(db),
    tokens: new AccountTokensRepository(db),
    outbox: new OutboxRepository(db, { rowLocks }),
    requests: new ResetRequestsRepository(db),
    mfa: new MfaRepository(db, { rowLocks }),
    attempts: new SigninAttemptsRepository(db),
    signins: new SigninRepository(db, { postgres }),
    limits: new LimitEventsRepository(db),
  });
  const repos = repositories(database.db);
  const transaction = inTransaction(database.db, repositories);

  const hasher = new PasswordHasher(config.passwordHash);
  const passwords = new PasswordService({ credentials: repos.passwords, hasher, now });
  const usersLimits = {
    registration: new RegistrationLimits(config.registration, repos.limits, now),
    emailChange: new EmailChangeLimits(config.emailChange, repos.limits, now),
    passkeyOptions: new PasskeyOptionsLimits(config.passkeyOptions, repos.limits, now),
  };
  const sessions = new SessionService(repos.sessions, config.session, now);
  const throttle = new SigninThrottle({
    attempts: repos.attempts,
    devices: new SigninDevicesRepository(database.db),
    policy: config.throttle,
    now,
  });
  const mail = new MailService(repos.outbox, createTransport(config.mail), config.mail, now);
  const accountMail = new AccountMail(
    mail,
    {
      publicUrl: config.publicUrl,
      passwordResetTtlMs: config.tokens.passwordResetTtlMs,
      emailVerifyTtlMs: config.tokens.emailVerifyTtlMs,
    },
    now,
  );
  const recovery = new RecoveryService({
    repositories: repos,
    transaction,
    passwords,
    throttle,
    accountMail,
    mail,
    policy: config.passwordReset,
    now,
  });
  const reauth = new Reauthentication({ users: repos.users, attempts: throttle, passwords, now });
  const passkeysRepository = new PasskeysRepository(database.db);
  const passkeys = new PasskeyService({
    passkeys: passkeysRepository,
    users: repos.users,
    sessions,
    transaction: inTransaction(database.db, (db) => ({
      passkeys: new PasskeysRepository(db),
      sessions: new SessionsRepository(db),
      tokens: new AccountTokensRepository(db),
      outbox: new OutboxRepository(db, { rowLocks }),
    })),
    accountMail,
    mail,
    reauth,
    relyingParty: relyingParty(config.publicUrl),
    requireVerifiedEmail: config.requireVerifiedEmail,
    optionsLimit: usersLimits.passkeyOptions,
    now,
  });
  const totp = new TotpService({
    mfa: repos.mfa,
    users: repos.users,
    passwords,
    attempts: throttle,
    transaction,
    accountMail,
    mail,
    key: keySource(config.encryptionKey, config.databaseUrl),
    now,
  });
  return {
    hasher,
    users: new UsersService(
      repos.users,
      passwords,
      transaction,
      accountMail,
      mail,
      throttle,
      reauth,
      usersLimits,
      {
        totpInForce: async (userId) => (await repos.mfa.find(userId))?.confirmed === true,
        passkeyCount: (userId) => passkeysRepository.count(userId),
      },
    ),
    auth: new AuthService({
      users: repos.users,
      signins: repos.signins,
      // Sign-in hashes in a lane of its own: other hashing cannot take all of its slots and queue.
      hasher: hasher.signInLane(),
      throttle,
      sessions,
      transaction,
      requireVerifiedEmail: config.requireVerifiedEmail,
      secondFactor: totp,
    }),
    totp,
    sessions,
    throttle,
    catalog: new CatalogService({
      catalog: new CatalogRepository(database.db, { postgres }),
      transaction: inTransaction(database.db, (db) => ({ catalog: new CatalogRepository(db, { postgres }) })),
      limits: config.catalog,
      now,
    }),
    mail,
    recovery,
    passkeys,
    housekeeping: async () => {
      await Promise.all([
        sessions.purgeExpired(),
        throttle.purgeExpired(),
        recovery.purge(),
        passkeys.purgeExpired(),
        usersLimits.registration.purge(),
        usersLimits.emailChange.purge(),
        usersLimits.passkeyOptions.purge(),
        repos.outbox.purgeFinished(new Date(now() - FINISHED_MAIL_KEPT_MS)),
      ]);
    },
    deliver: async (stopping = () => false) => {
      await recovery.processRequests();
      await mail.deliverDue(stopping);
    },
  };
}
