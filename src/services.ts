// Composition: repositories and services for one database and configuration. The HTTP app and
// the admin CLI share it, so both apply the same rules (validation, hashing, session revocation).

import type { Kysely } from 'kysely';
import { adminMails } from './admin/mails.ts';
import { AdminRepository } from './admin/repository.ts';
import { AdminService } from './admin/service.ts';
import { AuditRepository } from './audit/repository.ts';
import { AuditService } from './audit/service.ts';
import { auditSink } from './audit/sink.ts';
import { AuthService } from './auth/service.ts';
import { SignerRepository } from './auth/signer-repository.ts';
import { CatalogRepository } from './catalog/repository.ts';
import { CatalogService } from './catalog/service.ts';
import { type Config, ConfigError } from './config.ts';
import type { Database } from './db/database.ts';
import type { Tables } from './db/schema.ts';
import { AUTOCOMMIT, type CommitHooks, inTransaction } from './db/transactions.ts';
import { Journal } from './kernel/journal.ts';
import { AddressLimits, EmailChangeLimits, RegistrationLimits } from './kernel/limits.ts';
import { LimitEventsRepository } from './kernel/limits-repository.ts';
import { Reauthentication } from './kernel/reauth.ts';
import { keySource } from './kernel/sealing.ts';
import { AccountMail } from './mail/account-mail.ts';
import type { MailDefinition } from './mail/catalog.ts';
import { mailMails } from './mail/mails.ts';
import { TemplateError } from './mail/operator-templates.ts';
import { OutboxRepository } from './mail/repository.ts';
import type { MailLog } from './mail/service.ts';
import { MailService } from './mail/service.ts';
import { MailTemplates } from './mail/templates.ts';
import { createTransport } from './mail/transport.ts';
import { mailSigninMails } from './mail-signin/mails.ts';
import { MailSigninsRepository } from './mail-signin/repository.ts';
import { MailSigninService } from './mail-signin/service.ts';
import { IdentitiesRepository } from './oauth/identity-repository.ts';
import { oauthMails } from './oauth/mails.ts';
import { Providers } from './oauth/providers.ts';
import { OAuthService } from './oauth/service.ts';
import { OAuthStatesRepository } from './oauth/state-repository.ts';
import { OidcLoginBaselinesRepository } from './oidc/baseline-repository.ts';
import { OidcClientsRepository, OidcConsentsRepository } from './oidc/client-repository.ts';
import { ClientRegistry } from './oidc/clients.ts';
import { OidcKeysRepository } from './oidc/key-repository.ts';
import { KeyRing } from './oidc/keys.ts';
import { OidcModelsRepository } from './oidc/model-repository.ts';
import { passkeysMails } from './passkeys/mails.ts';
import { PasskeysRepository } from './passkeys/repository.ts';
import { PasskeyService, relyingParty } from './passkeys/service.ts';
import { PasswordHasher } from './passwords/hasher.ts';
import { PasswordCredentialsRepository } from './passwords/repository.ts';
import { PasswordService } from './passwords/service.ts';
import type { MetricObservers } from './plugins/metrics.ts';
import { recoveryMails } from './recovery/mails.ts';
import { ResetRequestsRepository } from './recovery/repository.ts';
import { RecoveryService } from './recovery/service.ts';
import { SessionsRepository } from './sessions/repository.ts';
import { type Clock, SessionService } from './sessions/service.ts';
import { Signal } from './shared/signal.ts';
import { SigninCore } from './signin/core.ts';
import { SigninDevicesRepository } from './signin/device-repository.ts';
import { GrantRepository } from './signin/grant-repository.ts';
import { SigninThrottle } from './signin/throttle.ts';
import { SigninAttemptsRepository } from './signin/throttle-repository.ts';
import { SigninTicketsRepository } from './signin/ticket-repository.ts';
import { AccountTokensRepository } from './tokens/repository.ts';
import { totpMails } from './totp/mails.ts';
import { TotpRepository } from './totp/repository.ts';
import { TotpService } from './totp/service.ts';
import { EmailProven } from './users/email-proven.ts';
import { usersMails } from './users/mails.ts';
import { EmailProofsRepository } from './users/proof-repository.ts';
import { UsersRepository } from './users/repository.ts';
import { UsersService } from './users/service.ts';
import { emailKey } from './users/user.ts';
import { WebhooksRepository } from './webhooks/repository.ts';
import { type WebhookLog, WebhookService } from './webhooks/service.ts';
import { webhooksSink } from './webhooks/sink.ts';
import { WebhookTransport } from './webhooks/transport.ts';

export interface Services {
  hasher: PasswordHasher;
  users: UsersService;
  auth: AuthService;
  /** The sign-in core every method ends in. */
  core: SigninCore;
  /** What support staff and admins do to accounts (admin/). */
  admin: AdminService;
  sessions: SessionService;
  throttle: SigninThrottle;
  catalog: CatalogService;
  mail: MailService;
  recovery: RecoveryService;
  /** Sign-in by a link or a code in a mail (mail-signin/). */
  mailSignin: MailSigninService;
  passkeys: PasskeyService;
  totp: TotpService;
  /** Sign-in with providers, and the identities it links. */
  oauth: OAuthService;
  /** Usher as an OpenID Connect provider: its clients, keys, stored models and consents. */
  oidc: {
    clients: ClientRegistry;
    keys: KeyRing;
    models: OidcModelsRepository;
    consents: OidcConsentsRepository;
    /** What a browser had when an interaction wanting a new sign-in began (prompt=login). */
    baselines: OidcLoginBaselinesRepository;
  };
  /** The clock every service reads (tests move it). */
  now: Clock;
  /** Registration, email-change and passkey-options limits (kernel/limits.ts). */
  limits: {
    registration: RegistrationLimits;
    emailChange: EmailChangeLimits;
    passkeyOptions: AddressLimits;
    oauthStart: AddressLimits;
    /** Authorization requests to the OpenID Connect provider (each may store an interaction). */
    oidcAuthorization: AddressLimits;
    /** Pushed authorization requests (each stores the request). */
    oidcPushedRequest: AddressLimits;
  };
  /** The audit log as support and users read it, and its retention. */
  audit: AuditService;
  /** Records account events outside a change's transaction (a refused admin call). */
  journal: Journal;
  /** Webhook receivers, and the sender of their deliveries. */
  webhooks: WebhookService;
  /** Notified when mail was recorded: the delivery loop (mail/feature.ts) listens. */
  mailDue: Signal;
  /** Notified after a commit that queued webhook deliveries: the sender (webhooks/feature.ts) listens. */
  webhooksDue: Signal;
  /** Background work: forgot-password asks, then the mail that is due (until `stopping()`). */
  deliver(stopping?: () => boolean): Promise<void>;
  /** Sent and failed mail kept FINISHED_MAIL_KEPT_MS for operators, then removed (housekeeping). */
  purgeFinishedMail(): Promise<unknown>;
  /** Sent and failed webhook deliveries kept FINISHED_DELIVERIES_KEPT_MS, then removed (housekeeping). */
  purgeFinishedDeliveries(): Promise<unknown>;
}

/** What the app gives the services it builds besides configuration (none of it for the CLI). */
export interface ServiceOptions {
  /** The clock sessions, the throttle, tokens and mail read; tests pass one they can move. */
  now?: Clock;
  /** What the metrics are told (plugins/metrics.ts's MetricObservers). */
  observers?: Partial<
    Pick<
      MetricObservers,
      'hashSeconds' | 'hashWaited' | 'mailOutcome' | 'webhookOutcome' | 'auditPurged' | 'accountEvent'
    >
  >;
  /** Where the mail sender logs its deliveries. */
  mailLog?: MailLog;
  /** Where the webhook sender logs its deliveries. */
  webhookLog?: WebhookLog;
}

/**
 * Every mail the features send, each declared in its feature's mails.ts (decision 380); the
 * mail feature gets them from here and knows none by name.
 */
export const MAILS: readonly MailDefinition[] = [
  ...Object.values(recoveryMails),
  ...Object.values(usersMails),
  ...Object.values(passkeysMails),
  ...Object.values(oauthMails),
  ...Object.values(mailMails),
  ...Object.values(totpMails),
  ...Object.values(adminMails),
  ...Object.values(mailSigninMails),
];

/**
 * The operator's mail templates (MAIL_TEMPLATES_DIR) checked against MAILS: loadConfig checks all
 * of them it can without knowing the mails (decision 381), this the rest, with the same ConfigError
 * naming the file. The server and the CLI call it right after loadConfig, before the database.
 */
export function checkMailTemplates(config: Config): void {
  try {
    new MailTemplates(MAILS, config.mail.templates);
  } catch (error) {
    if (error instanceof TemplateError) throw new ConfigError('MAIL_TEMPLATES_DIR', error.message);
    throw error;
  }
}

/** Sent and failed messages are kept this long for operators, then removed. */
const FINISHED_MAIL_KEPT_MS = 7 * 24 * 3600 * 1000;
/** Sent and failed webhook deliveries are kept this long for admins to look at, then removed. */
const FINISHED_DELIVERIES_KEPT_MS = 7 * 24 * 3600 * 1000;
/** Finished deliveries removed per housekeeping round. */
const DELIVERIES_PURGED_PER_ROUND = 10_000;

export function createServices(config: Config, database: Database, options: ServiceOptions = {}): Services {
  const now = options.now ?? Date.now;
  const postgres = database.dialect === 'postgres';
  // Row locks are PostgreSQL's; SQLite's one writer at a time needs none.
  const rowLocks = postgres;
  const webhooksDue = new Signal();
  // Every account event is written by each of these, in this order, with its change.
  const sinks = [
    auditSink({ signins: config.audit.signins }),
    webhooksSink({ retryMs: config.webhooks.retryMs, due: webhooksDue }),
  ];
  const journalDeps = { now, sinks, onEvent: options.observers?.accountEvent };
  const repositories = (db: Kysely<Tables>, commit: CommitHooks = AUTOCOMMIT) => ({
    users: new UsersRepository(db, { rowLocks }),
    // Read by EmailProven alone (users/email-proven.ts, decision 343).
    emailProofs: new EmailProofsRepository(db),
    passwords: new PasswordCredentialsRepository(db, { rowLocks }),
    sessions: new SessionsRepository(db),
    tokens: new AccountTokensRepository(db),
    outbox: new OutboxRepository(db, { rowLocks }),
    requests: new ResetRequestsRepository(db),
    linkAsks: new ResetRequestsRepository(db, 'email-link'),
    codeAsks: new ResetRequestsRepository(db, 'email-code'),
    mailSignins: new MailSigninsRepository(db, { rowLocks }),
    totp: new TotpRepository(db, { rowLocks }),
    attempts: new SigninAttemptsRepository(db),
    signins: new GrantRepository(db, { postgres, sinks }),
    signers: new SignerRepository(db),
    limits: new LimitEventsRepository(db),
    tickets: new SigninTicketsRepository(db),
    identities: new IdentitiesRepository(db, { rowLocks }),
    appAccess: new OidcModelsRepository(db),
    passkeys: new PasskeysRepository(db),
    admin: new AdminRepository(db, { postgres }),
    audit: new AuditRepository(db),
    journal: new Journal(db, commit, journalDeps),
    webhooks: new WebhooksRepository(db, { rowLocks }),
  });
  const repos = repositories(database.db);
  const transaction = inTransaction(database.db, repositories);

  const hasher = new PasswordHasher(config.passwordHash, {
    onHash: options.observers?.hashSeconds,
    onWait: options.observers?.hashWaited,
  });
  const passwords = new PasswordService({ credentials: repos.passwords, hasher, now });
  const usersLimits = {
    registration: new RegistrationLimits({ policy: config.registration, events: repos.limits, now }),
    emailChange: new EmailChangeLimits({ policy: config.emailChange, events: repos.limits, now }),
    passkeyOptions: new AddressLimits({
      policy: config.passkeyOptions,
      events: repos.limits,
      now,
      scope: 'passkey-options',
      message: 'Too many passkey sign-in options asked from this address; try again later.',
    }),
    oauthStart: new AddressLimits({
      policy: config.oauth.starts,
      events: repos.limits,
      now,
      scope: 'oauth-start',
      message: 'Too many provider sign-ins started from this address; try again later.',
    }),
    oidcAuthorization: new AddressLimits({
      policy: config.oidcLimits.authorizations,
      events: repos.limits,
      now,
      scope: 'oidc-authorization',
      message: 'Too many authorization requests from this address; try again later.',
    }),
    oidcPushedRequest: new AddressLimits({
      policy: config.oidcLimits.pushed,
      events: repos.limits,
      now,
      scope: 'oidc-pushed-request',
      message: 'Too many pushed authorization requests from this address; try again later.',
    }),
  };
  const sessions = new SessionService({ sessions: repos.sessions, policy: config.session, now, transaction });
  const throttle = new SigninThrottle({
    attempts: repos.attempts,
    devices: new SigninDevicesRepository(database.db),
    policy: config.throttle,
    now,
  });
  const mailDue = new Signal();
  const mail = new MailService({
    outbox: repos.outbox,
    transport: createTransport(config.mail),
    policy: config.mail,
    now,
    due: mailDue,
    onOutcome: options.observers?.mailOutcome,
    log: options.mailLog,
    templates: new MailTemplates(MAILS, config.mail.templates, { now }),
  });
  const accountMail = new AccountMail({
    mail,
    policy: {
      publicUrl: config.publicUrl,
      passwordResetTtlMs: config.tokens.passwordResetTtlMs,
      emailVerifyTtlMs: config.tokens.emailVerifyTtlMs,
    },
    now,
  });
  const providers = new Providers(config.oauth.providers, config.publicUrl, config.oauth.timeoutMs);
  const emailProven = new EmailProven({
    accountMail,
    unlinkedMail: oauthMails.identityUnlinked,
    providerName: (id) => providers.get(id)?.settings.name ?? id,
  });
  const recovery = new RecoveryService({
    repositories: repos,
    transaction,
    passwords,
    throttle,
    accountMail,
    mail,
    emailProven,
    policy: config.passwordReset,
    now,
  });
  // TOTP secrets, client secrets and the provider's keys are sealed under one key.
  const sealingKey = keySource(config.encryptionKey, config.databaseUrl);
  const totp = new TotpService({
    totp: repos.totp,
    users: repos.users,
    passwords,
    attempts: throttle,
    transaction,
    accountMail,
    mail,
    key: sealingKey,
    now,
  });
  const core = new SigninCore({
    throttle,
    signins: repos.signins,
    tickets: repos.tickets,
    factorOf: (userId) => repos.totp.find(userId),
    userById: async (userId) => repos.users.findById(userId),
    sessions,
    transaction,
    secondFactor: totp,
    requireVerifiedEmail: config.requireVerifiedEmail,
    now,
    journal: repos.journal,
    userIdByAccount: async (account) => (await repos.users.findByEmailKey(account))?.id,
  });
  const mailSignin = new MailSigninService({
    repositories: repos,
    transaction,
    core,
    mail,
    emailProven,
    policy: {
      ...config.passwordReset,
      createsAccounts: config.emailSigninCreatesAccounts,
      publicUrl: config.publicUrl,
    },
    now,
  });
  const reauth = new Reauthentication({
    users: repos.users,
    attempts: throttle,
    passwords,
    now,
    accountKey: emailKey,
  });
  const passkeysRepository = repos.passkeys;
  const passkeys = new PasskeyService({
    passkeys: passkeysRepository,
    users: repos.users,
    core,
    transaction: inTransaction(database.db, (db, commit) => ({
      passkeys: new PasskeysRepository(db),
      tokens: new AccountTokensRepository(db),
      outbox: new OutboxRepository(db, { rowLocks }),
      journal: new Journal(db, commit, journalDeps),
    })),
    accountMail,
    mail,
    reauth,
    relyingParty: relyingParty(config.publicUrl),
    optionsLimit: usersLimits.passkeyOptions,
    now,
  });
  const oauth = new OAuthService({
    providers,
    states: new OAuthStatesRepository(database.db),
    identities: repos.identities,
    users: repos.users,
    core,
    transaction,
    accountMail,
    mail,
    emailProven,
    factorOf: (userId) => repos.totp.find(userId),
    signup: config.oauth.signup,
    startLimit: usersLimits.oauthStart,
    now,
  });
  const oidc = {
    clients: new ClientRegistry({
      clients: new OidcClientsRepository(database.db),
      transaction: inTransaction(database.db, (db, commit) => ({
        clients: new OidcClientsRepository(db),
        journal: new Journal(db, commit, journalDeps),
      })),
      key: sealingKey,
      now,
    }),
    keys: new KeyRing({
      keys: new OidcKeysRepository(database.db),
      transaction: inTransaction(database.db, (db, commit) => ({
        keys: new OidcKeysRepository(db),
        journal: new Journal(db, commit, journalDeps),
      })),
      key: sealingKey,
      now,
    }),
    models: new OidcModelsRepository(database.db),
    consents: new OidcConsentsRepository(database.db),
    baselines: new OidcLoginBaselinesRepository(database.db),
  };
  const methods = {
    totpInForce: async (userId: bigint) => (await repos.totp.find(userId))?.confirmed === true,
    passkeyCount: (userId: bigint) => passkeysRepository.count(userId),
    identities: (userId: bigint) => repos.identities.list(userId),
  };
  return {
    hasher,
    oauth,
    oidc,
    now,
    admin: new AdminService({
      admin: repos.admin,
      transaction,
      sessions,
      passkeys: passkeysRepository,
      methods: { ...methods, hasPassword: (userId) => passwords.has(userId) },
      accountMail,
      mail,
      emailProven,
      now,
    }),
    users: new UsersService({
      users: repos.users,
      passwords,
      transaction,
      accountMail,
      mail,
      attempts: throttle,
      reauth,
      limits: usersLimits,
      methods,
      emailProven,
    }),
    auth: new AuthService({
      core,
      users: repos.users,
      signers: repos.signers,
      // Sign-in hashes in a lane of its own: other hashing cannot take all of its slots and queue.
      hasher: hasher.signInLane(),
    }),
    core,
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
    mailSignin,
    passkeys,
    mailDue,
    limits: usersLimits,
    deliver: async (stopping = () => false) => {
      await recovery.processRequests();
      await mailSignin.processRequests();
      await mail.deliverDue(stopping);
    },
    purgeFinishedMail: () => repos.outbox.purgeFinished(new Date(now() - FINISHED_MAIL_KEPT_MS)),
    purgeFinishedDeliveries: () =>
      repos.webhooks.purgeFinished(
        new Date(now() - FINISHED_DELIVERIES_KEPT_MS),
        DELIVERIES_PURGED_PER_ROUND,
      ),
    audit: new AuditService({
      audit: repos.audit,
      journal: repos.journal,
      retentionMs: config.audit.retentionMs,
      now,
      onPurged: options.observers?.auditPurged,
    }),
    webhooks: new WebhookService({
      webhooks: repos.webhooks,
      transaction,
      journal: repos.journal,
      transport: new WebhookTransport({
        allowPrivate: config.webhooks.allowPrivate,
        timeoutMs: config.webhooks.timeoutMs,
      }),
      policy: config.webhooks,
      key: sealingKey,
      now,
      onOutcome: options.observers?.webhookOutcome,
      log: options.webhookLog,
      due: webhooksDue,
    }),
    webhooksDue,
    journal: repos.journal,
  };
}
