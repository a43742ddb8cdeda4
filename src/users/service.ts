import type { InTransaction } from '../db/transactions.ts';
import type { AccountEvent, Journal } from '../kernel/journal.ts';
import type { EmailChangeLimits, RegistrationLimits } from '../kernel/limits.ts';
import type { LimitEventsRepository } from '../kernel/limits-repository.ts';
import { confirmPresentPassword, type PasswordAttempts, type Reauthentication } from '../kernel/reauth.ts';
import type { AccountMail, AccountMailRepositories } from '../mail/account-mail.ts';
import type { MailService } from '../mail/service.ts';
import { checkPassword } from '../passwords/index.ts';
import type {
  NewPassword,
  PasswordProof,
  PasswordRepositories,
  PasswordService,
} from '../passwords/service.ts';
import { sessionsEnded } from '../sessions/index.ts';
import type { SessionsRepository } from '../sessions/repository.ts';
import type { ActiveSession } from '../sessions/service.ts';
import { type Awaitable, mapAwaitable } from '../shared/awaitable.ts';
import { AppError } from '../shared/errors.ts';
import { type PageRequest, readPage } from '../shared/paging.ts';
import { invalid } from '../shared/text.ts';
import type { EmailProven, EmailProvenRepositories } from './email-proven.ts';
import { userData } from './events.ts';
import type { CheckedImport, ImportAccount, ImportResult } from './imports.ts';
import { mailAccountDeleted, mailEmailChanged, mailPasswordChanged, mailVerification } from './mails.ts';
import {
  type EmailKeyCollision,
  EmailTakenError,
  type ImportedUser,
  toUser,
  type UsersRepository,
} from './repository.ts';
import { checkEmail, checkLocale, checkName } from './rules.ts';
import {
  type AccountRole,
  emailKey,
  savedEmail,
  USER_DEEP_SORTS,
  type User,
  type UserSortKey,
} from './user.ts';

export interface Registration {
  email: string;
  name: string;
  password: string;
  /** The account's language (BCP 47); by default the first of the client's Accept-Language there are texts for, else en. */
  locale?: string | undefined;
}

/** Who registers: their address (for the registration limits) and their browser's Accept-Language. */
export interface RegistrationClient {
  address: string;
  acceptLanguage?: string | undefined;
}

/** GET /api/account: the signed-in account, its user object and how it may sign in. */
export interface AccountView {
  user: User;
  password: boolean;
  /** TOTP in force (confirmed), not a pending set-up. */
  totp: boolean;
  passkeys: number;
  /** Linked provider identities, oldest first. */
  identities: AccountIdentity[];
  /** What the account may administer (admin/): `user`, `support` or `admin`. */
  role: AccountRole;
  /** The account's language (BCP 47), what its mail is written in. */
  locale: string;
}

/** A linked provider identity, as the account view shows it. */
export interface AccountIdentity {
  id: string;
  provider: string;
  email: string;
  createdAt: Date;
}

/** What the account view reads from the features that keep the other sign-in methods. */
export interface AccountMethodReaders {
  totpInForce(userId: bigint): Promise<boolean>;
  passkeyCount(userId: bigint): Promise<number>;
  identities(userId: bigint): Promise<AccountIdentity[]>;
}

export interface UserUpdate {
  email: string;
  name: string;
  password?: string | undefined;
  /** The present password: needed to change the email or the password. */
  currentPassword?: string | undefined;
  /** A new language (BCP 47); the account keeps its own when absent. */
  locale?: string | undefined;
}

/** What a bulk import did with one row. */
export type ImportOutcome = 'imported' | 'skipped' | AppError;

/** The limits on registrations from client addresses and on email changes (kernel/limits.ts). */
export interface UsersLimits {
  registration: RegistrationLimits;
  emailChange: EmailChangeLimits;
}

/**
 * Refuses a change that would leave no admin who can sign in: `target` stops being one (demoted,
 * disabled, deleted). Takes the admins' row locks (PostgreSQL) in the change's transaction and
 * decides on what they hold then, so callers run it for any such change, whatever role they read
 * before. A deletion locks the user's credential row before it (UsersRepository.lockForDelete).
 */
export async function keepAnAdmin(
  users: Pick<UsersRepository, 'lockActiveAdmins'>,
  target: bigint,
): Promise<void> {
  const admins = await users.lockActiveAdmins();
  if (admins.length === 1 && admins[0] === target)
    throw new AppError(
      'LAST_ADMIN',
      'This is the last admin who can sign in: make another account admin first, so that someone can still administer Usher.',
    );
}

export const userNotFound = () => new AppError('USER_NOT_FOUND', 'No user has that id.');
const forbidden = () => new AppError('FORBIDDEN', 'A user may change or delete only their own account.');
const wrongCurrentPassword = () => invalid('currentPassword', 'is not your present password');

/** What a user change that ends sessions writes, together. */
export interface AccountRepositories
  extends AccountMailRepositories,
    PasswordRepositories,
    EmailProvenRepositories {
  users: UsersRepository;
  sessions: SessionsRepository;
  limits: LimitEventsRepository;
  /** What apps signed in through Usher's provider hold (oidc/): revoked with a password change. */
  appAccess: { revokeAccount(userId: bigint): Promise<void> };
  /** The audit record and webhook deliveries of each change, in its transaction. */
  journal: Journal;
}

function found(user: User | undefined): User {
  if (!user) throw userNotFound();
  return user;
}

export class UsersService {
  readonly #users: UsersRepository;
  readonly #passwords: PasswordService;
  readonly #transaction: InTransaction<AccountRepositories>;
  readonly #attempts: PasswordAttempts;

  readonly #accountMail: AccountMail;
  readonly #mail: Pick<MailService, 'wake'>;
  readonly #reauth: Reauthentication;
  readonly #limits: UsersLimits;
  readonly #methods: AccountMethodReaders;
  readonly #emailProven: EmailProven;

  constructor(deps: {
    users: UsersRepository;
    passwords: PasswordService;
    transaction: InTransaction<AccountRepositories>;
    accountMail: AccountMail;
    mail: Pick<MailService, 'wake'>;
    attempts: PasswordAttempts;
    reauth: Reauthentication;
    limits: UsersLimits;
    /** What GET /api/account says of the account's other sign-in methods. */
    methods: AccountMethodReaders;
    emailProven: EmailProven;
  }) {
    this.#users = deps.users;
    this.#passwords = deps.passwords;
    this.#transaction = deps.transaction;
    this.#accountMail = deps.accountMail;
    this.#mail = deps.mail;
    this.#attempts = deps.attempts;
    this.#reauth = deps.reauth;
    this.#limits = deps.limits;
    this.#methods = deps.methods;
    this.#emailProven = deps.emailProven;
  }

  /** The user, or USER_NOT_FOUND; thrown at once, not as a rejection, when the lookup answered at once. */
  get(id: bigint): Awaitable<User> {
    return mapAwaitable(this.#users.findById(id), found);
  }

  find(id: bigint): Awaitable<User | undefined> {
    return this.#users.findById(id);
  }

  /** The application's own roles (set by admins), for the tokens Usher issues. */
  rolesOf(id: bigint): Promise<string[]> {
    return this.#users.rolesOf(id);
  }

  async list(paging: PageRequest<UserSortKey>): Promise<{ users: User[]; total: number }> {
    const users = this.#users;
    if (USER_DEEP_SORTS.includes(paging.sort)) return users.listInIdOrder(paging);
    const { items, total } = await readPage(paging, USER_DEEP_SORTS, users.count(), () => users.list(paging));
    return { users: items, total };
  }

  /**
   * PUT /api/users/{id}: a user replaces their own email and name, and optionally password. A new
   * email (another email key) or a new password needs the present password too, so a session
   * alone (a borrowed device, a stolen token) cannot take the account over. A new password ends
   * every other session of theirs; the session making the change stays.
   */
  async update(
    actor: ActiveSession,
    id: bigint,
    input: UserUpdate,
    client: { address: string },
  ): Promise<User> {
    if (id !== actor.userId) throw forbidden();
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    const locale = input.locale === undefined ? undefined : checkLocale(input.locale);
    const password = input.password === undefined ? undefined : await checkPassword(input.password);
    const found = await this.#users.findForChange(id);
    if (!found) throw userNotFound();
    const current = found.user;
    // Against the key stored: an account migration 0028 kept apart saves its own address as it is.
    const saved = savedEmail({ email: current.email, emailKey: found.emailKey }, email);
    const emailChanged = saved.emailKey !== undefined;
    const sensitive = password !== undefined || emailChanged;
    const proof = sensitive
      ? await this.#confirmPassword(current, input.currentPassword, client.address)
      : undefined;
    const next = password === undefined ? undefined : await this.#passwords.prepare(password);
    // The new hash and the end of the other sessions commit together: a password change never
    // leaves a session it should have ended. A confirmed change only applies to the password
    // that was checked: if it changed meanwhile, it was not the present one any more (the
    // credential row is written or share-locked first, before the user row, as every password
    // write and sign-in's fence take them).
    // A new address is unproven until a link mailed to it is followed; the old address hears of
    // the change, and a new password is announced, in the same transaction as the change.
    const user = await this.#transaction(async (repos) => {
      if (proof) {
        const held = next
          ? await this.#passwords.change(repos, proof, next)
          : await this.#passwords.stillHeld(repos, proof);
        if (!held) return undefined;
      }
      let updated: User | undefined;
      try {
        updated = await repos.users.update(id, {
          email: saved.email,
          emailKey: saved.emailKey,
          name,
          unverify: emailChanged,
          locale,
        });
      } catch (error) {
        if (error instanceof EmailTakenError) throw emailTaken();
        throw error;
      }
      if (!updated) return undefined;
      // Counted here, after the write that decided who holds each address: any change that
      // mails an address waits for the row or index entry of the one before it, so the counts
      // are exact on both stores. Beyond a cap the change is refused (429) and rolls back,
      // rather than made without its mails: every change that happens is announced.
      if (emailChanged)
        await this.#limits.emailChange.take(repos.limits, id, emailKey(current.email), emailKey(saved.email));
      const changed = [
        ...(saved.email !== current.email ? ['email'] : []),
        ...(name !== current.name ? ['name'] : []),
        ...(locale !== undefined && locale !== current.locale ? ['locale'] : []),
      ];
      if (emailChanged)
        await repos.journal.record({
          type: 'email.changed',
          userId: id,
          details: { from: current.email, to: saved.email },
        });
      if (changed.length > 0)
        await repos.journal.record(
          { type: 'user.updated', userId: id, details: { changed } },
          { type: 'user.updated', userId: id, data: { changed, ...userData(updated) } },
        );
      if (next !== undefined) {
        const ended = await repos.sessions.deleteForUser(id, actor.tokenHash);
        await repos.appAccess.revokeAccount(id);
        await mailPasswordChanged(this.#accountMail, repos, updated);
        await repos.journal.record(
          { type: 'password.changed', userId: id, details: { via: 'change' } },
          { type: 'password.changed', userId: id, data: { via: 'change' } },
        );
        await sessionsEnded(repos.journal, id, ended, 'password_changed');
      }
      if (emailChanged) {
        // Links mailed to the old address stop working: they would otherwise outlive the change.
        const now = new Date();
        await repos.tokens.voidAll(id, 'password-reset', now);
        await repos.tokens.voidAll(id, 'email-verify', now);
        await mailVerification(this.#accountMail, repos, updated);
        await mailEmailChanged(this.#accountMail, repos, updated, current);
      }
      return updated;
    });
    if (user) {
      if (next !== undefined || emailChanged) this.#mail.wake();
      return user;
    }
    if (proof !== undefined && (await this.#users.findById(id))) throw wrongCurrentPassword();
    throw userNotFound();
  }

  #confirmPassword(current: User, password: string | undefined, address: string): Promise<PasswordProof> {
    return confirmPresentPassword(
      { attempts: this.#attempts, passwords: this.#passwords, accountKey: emailKey },
      current,
      password,
      address,
      'currentPassword',
      'is required to change the email or the password',
    );
  }

  /**
   * DELETE /api/users/{id}: only oneself, after re-authentication (a recent sign-in or
   * `currentPassword`), since it cannot be undone; sessions, products and reviews go too. A
   * verified address gets a goodbye notice, recorded in the delete's transaction; an unverified
   * one gets nothing, or registering and deleting would mail any address twice.
   */
  async delete(
    actor: ActiveSession,
    id: bigint,
    input: { currentPassword?: string | undefined },
    client: { address: string },
  ): Promise<void> {
    if (id !== actor.userId) throw forbidden();
    await this.#reauth.confirm(actor, input.currentPassword, client.address, 'Deleting your account');
    const deleted = await this.#transaction(async (repos) => {
      // The credential row first, as the deletion locks it, then the admins' rows.
      await repos.users.lockForDelete(id);
      await keepAnAdmin(repos.users, id);
      const user = await repos.users.delete(id);
      if (user?.emailVerified) await mailAccountDeleted(this.#accountMail, repos, user);
      if (user) await this.#deleted(repos, user, 'self');
      return user;
    });
    if (!deleted) throw userNotFound();
    if (deleted.emailVerified) this.#mail.wake();
  }

  /** The record and user.deleted event of a deletion, in its transaction. */
  async #deleted(repos: AccountRepositories, user: User, via: 'self' | 'cli'): Promise<void> {
    await repos.journal.record(
      { type: 'user.deleted', userId: user.id, details: { via, email: user.email } },
      { type: 'user.deleted', userId: user.id, data: { via } },
    );
  }

  /** GET /api/account: the session's user (as read with the session) and its sign-in methods. */
  async account(actor: ActiveSession): Promise<AccountView> {
    const [password, totp, passkeys, identities] = await Promise.all([
      this.#passwords.has(actor.userId),
      this.#methods.totpInForce(actor.userId),
      this.#methods.passkeyCount(actor.userId),
      this.#methods.identities(actor.userId),
    ]);
    const user = toUser(actor.owner);
    return { user, password, totp, passkeys, identities, role: user.role, locale: user.locale };
  }

  /**
   * Accounts kept apart by migration 0028 because their emails now have one key (decision 355):
   * for the warning at start and `usher users collisions`.
   */
  emailKeyCollisions(): Promise<EmailKeyCollision[]> {
    return this.#users.emailKeyCollisions();
  }

  /** Admin (CLI): the user with that email, in any letter case. */
  async findByEmail(email: string): Promise<User> {
    const found = await this.#users.findByEmailKey(emailKey(email));
    if (!found) throw new AppError('USER_NOT_FOUND', 'No user has that email.');
    return found;
  }

  /**
   * Admin (CLI): a new password, by the registration rules, for an account with or without one;
   * every session of the user ends.
   */
  async setPassword(email: string, password: string): Promise<User> {
    const user = await this.findByEmail(email);
    const next = await this.#passwords.prepare(await checkPassword(password));
    await this.#transaction(async (repos) => {
      await this.#passwords.set(repos, user.id, next);
      const ended = await repos.sessions.deleteForUser(user.id);
      await repos.appAccess.revokeAccount(user.id);
      await repos.journal.record(
        { type: 'password.changed', userId: user.id, details: { via: 'cli' } },
        { type: 'password.changed', userId: user.id, data: { via: 'cli' } },
      );
      await sessionsEnded(repos.journal, user.id, ended, 'password_changed');
    });
    return user;
  }

  /** Admin (CLI): the user's email counts as verified from now on. */
  async markEmailVerified(email: string): Promise<User> {
    const user = await this.findByEmail(email);
    // The operator vouches for the mailbox: its owner takes the account (decisions 340, 343).
    await this.#transaction((repos) => this.#emailProven.prove(repos, user, 'cli', { at: new Date() }));
    return user;
  }

  /**
   * Admin (CLI): deletes the user with that email (sessions, products and reviews go too), unless
   * they are the last admin who can sign in.
   */
  async deleteByEmail(email: string): Promise<User> {
    const user = await this.findByEmail(email);
    const deleted = await this.#transaction(async (repos) => {
      await repos.users.lockForDelete(user.id);
      await keepAnAdmin(repos.users, user.id);
      const gone = await repos.users.delete(user.id);
      if (gone) await this.#deleted(repos, gone, 'cli');
      return gone;
    });
    if (!deleted) throw userNotFound();
    return user;
  }

  /** Admin (CLI `users set-role`): the account's role; the last admin who can sign in stays one. */
  async setRole(email: string, role: AccountRole): Promise<User> {
    const user = await this.findByEmail(email);
    await this.#transaction(async (repos) => {
      // Decided on the admins as locked now, not on the role read above.
      if (role !== 'admin') await keepAnAdmin(repos.users, user.id);
      await repos.users.setRole(user.id, role);
      if (role !== user.role)
        await repos.journal.record(
          { type: 'user.role_changed', userId: user.id, details: { from: user.role, to: role, via: 'cli' } },
          {
            type: 'user.updated',
            userId: user.id,
            data: { changed: ['role'], ...userData({ ...user, role }) },
          },
        );
    });
    return { ...user, role };
  }

  /**
   * POST /api/users (with the client's address, within the registration limits) and the admin
   * CLI (without one: the operator is not limited).
   */
  async register(input: Registration, client?: RegistrationClient): Promise<User> {
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    const locale = this.localeOf(input.locale, client?.acceptLanguage);
    const password = await checkPassword(input.password);
    if (!client) return this.#register(email, name, password, 'cli', locale);
    return this.#limits.registration.run(client.address, () =>
      this.#register(email, name, password, 'registration', locale),
    );
  }

  /**
   * A new account's language: the one asked for (checked: a bad tag is 400 VALIDATION_FAILED),
   * else the first of the browser's Accept-Language that mail can be written in, else en.
   */
  localeOf(asked: string | undefined, acceptLanguage: string | undefined): string {
    return asked === undefined ? this.#accountMail.localeFor(acceptLanguage) : checkLocale(asked);
  }

  /**
   * Admin (CLI `users add --no-password`): an account without a password, by the registration
   * rules otherwise. Its owner sets one through forgot-password (or, later, signs in another way).
   */
  async registerWithoutPassword(input: { email: string; name: string; locale?: string }): Promise<User> {
    const locale = this.localeOf(input.locale, undefined);
    return this.#register(checkEmail(input.email), checkName(input.name), undefined, 'cli', locale);
  }

  /**
   * Accounts without passwords by the registration rules, many at once (a tool's bulk set-up): per
   * row imported, skipped, or the rule it breaks. `users import` itself refuses a whole file for
   * one bad line (users/imports.ts, then importAccounts).
   */
  async importWithoutPasswords(rows: readonly { email: string; name: string }[]): Promise<ImportOutcome[]> {
    const outcomes: ImportOutcome[] = [];
    const accounts: ImportAccount[] = [];
    const positions: number[] = [];
    for (const [i, row] of rows.entries()) {
      try {
        const email = checkEmail(row.email);
        const name = checkName(row.name);
        const account = { email, emailKey: emailKey(email), name, emailVerified: false };
        accounts.push({ ...account, line: i + 1, password: undefined, createdAt: undefined });
        positions.push(i);
        outcomes.push('imported');
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        outcomes.push(error);
      }
    }
    const results = await this.importAccounts(accounts);
    for (const [j, result] of results.entries()) outcomes[positions[j]!] = result;
    return outcomes;
  }

  /**
   * An import line's password ready to store: hashed by Usher (slow: the account lane's slots), or
   * the other system's hash adopted as it is (passwords/imported.ts).
   */
  async prepareImport(row: CheckedImport): Promise<ImportAccount> {
    const { secret, ...account } = row;
    if (secret === undefined) return { ...account, password: undefined };
    const password =
      'hash' in secret ? this.#passwords.adopt(secret.hash) : await this.#passwords.prepare(secret.password);
    return { ...account, password };
  }

  /**
   * Admin (CLI `users import`, POST /api/admin/users/import): accounts whose lines passed the
   * import rules (users/imports.ts), their passwords ready (prepareImport), in one transaction:
   * one insert of the users, one of their passwords, and their records and user.created events.
   * No verification mail: an import is not a sign-up (the other system's `emailVerified` says what
   * it knew; the operator invites the rest, or forgot-password proves the address). An email
   * already registered, or on an earlier line, is skipped. `summary`: the record of the whole
   * import, written in the same transaction.
   */
  async importAccounts(
    accounts: readonly ImportAccount[],
    summary?: (counts: { imported: number; skipped: number }) => AccountEvent,
  ): Promise<ImportResult[]> {
    const results: ImportResult[] = [];
    const accepted = new Map<string, number>();
    const users: ImportedUser[] = [];
    const now = new Date();
    for (const [i, account] of accounts.entries()) {
      if (accepted.has(account.emailKey)) {
        results.push('skipped');
        continue;
      }
      accepted.set(account.emailKey, i);
      results.push('imported');
      users.push({
        email: account.email,
        emailKey: account.emailKey,
        name: account.name,
        createdAt: account.createdAt,
        emailVerifiedAt: account.emailVerified ? now : undefined,
      });
    }
    const inserted = await this.#transaction(async (repos) => {
      const made = await repos.users.insertMany(users);
      const passwords: { userId: bigint; next: NewPassword }[] = [];
      for (const [key, user] of made) {
        const next = accounts[accepted.get(key)!]!.password;
        if (next) passwords.push({ userId: user.id, next });
      }
      await this.#passwords.setMany(repos, passwords);
      await repos.journal.recordMany(
        [...made.values()].map((user) => ({
          type: 'user.created',
          userId: user.id,
          details: { via: 'import' },
          notify: { type: 'user.created', userId: user.id, data: { via: 'import', ...userData(user) } },
        })),
      );
      if (summary)
        await repos.journal.record(summary({ imported: made.size, skipped: accounts.length - made.size }));
      return made;
    });
    for (const [key, i] of accepted) if (!inserted.has(key)) results[i] = 'skipped';
    return results;
  }

  async #register(
    email: string,
    name: string,
    password: string | undefined,
    via: 'registration' | 'cli',
    locale: string,
  ): Promise<User> {
    const key = emailKey(email);
    // Checked before hashing so an obvious duplicate costs no hash; the unique index still
    // decides races between simultaneous registrations.
    if (await this.#users.findByEmailKey(key)) throw emailTaken();
    const next = password === undefined ? undefined : await this.#passwords.prepare(password);
    // The account, its password and the mail that asks its owner to confirm the address commit
    // together.
    const user = await this.#transaction(async (repos) => {
      let created: User;
      try {
        created = await repos.users.insert({ email, emailKey: key, name, locale });
      } catch (error) {
        if (error instanceof EmailTakenError) throw emailTaken();
        throw error;
      }
      if (next) await this.#passwords.set(repos, created.id, next);
      await mailVerification(this.#accountMail, repos, created);
      await repos.journal.record(
        // A registration's actor is the account it makes.
        {
          type: 'user.created',
          userId: created.id,
          details: { via },
          actor: via === 'registration' ? { actorId: created.id } : {},
        },
        { type: 'user.created', userId: created.id, data: { via, ...userData(created) } },
      );
      return created;
    });
    this.#mail.wake();
    return user;
  }
}

const emailTaken = () => new AppError('EMAIL_TAKEN', 'email: another account already uses this email');
