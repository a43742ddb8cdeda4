import type { InTransaction } from '../db/transactions.ts';
import type { AccountMail, AccountMailRepositories } from '../mail/account-mail.ts';
import type { MailService } from '../mail/service.ts';
import type { PasswordHasher } from '../passwords/hasher.ts';
import { checkPassword } from '../passwords/policy.ts';
import type { SessionsRepository } from '../sessions/repository.ts';
import type { ActiveSession } from '../sessions/service.ts';
import { type Awaitable, mapAwaitable } from '../shared/awaitable.ts';
import { AppError } from '../shared/errors.ts';
import { type PageRequest, readPage } from '../shared/paging.ts';
import { invalid } from '../shared/text.ts';
import type { EmailChangeLimits, RegistrationLimits } from './limits.ts';
import type { LimitEventsRepository } from './limits-repository.ts';
import { confirmPresentPassword, type PasswordAttempts, type Reauthentication } from './reauth.ts';
import { type Credentials, EmailTakenError, type UsersRepository } from './repository.ts';
import { checkEmail, checkName } from './rules.ts';
import { emailKey, USER_DEEP_SORTS, type User, type UserSortKey } from './user.ts';

export interface Registration {
  email: string;
  name: string;
  password: string;
}

export interface UserUpdate {
  email: string;
  name: string;
  password?: string | undefined;
  /** The present password: needed to change the email or the password. */
  currentPassword?: string | undefined;
}

export type { PasswordAttempts } from './reauth.ts';

/** The limits on registrations from client addresses and on email changes (users/limits.ts). */
export interface UsersLimits {
  registration: RegistrationLimits;
  emailChange: EmailChangeLimits;
}

export const userNotFound = () => new AppError('USER_NOT_FOUND', 'No user has that id.');
const forbidden = () => new AppError('FORBIDDEN', 'A user may change or delete only their own account.');
const wrongCurrentPassword = () => invalid('currentPassword', 'is not your present password');

/** What a user change that ends sessions writes, together. */
export interface AccountRepositories extends AccountMailRepositories {
  users: UsersRepository;
  sessions: SessionsRepository;
  limits: LimitEventsRepository;
}

function found(user: User | undefined): User {
  if (!user) throw userNotFound();
  return user;
}

export class UsersService {
  readonly #users: UsersRepository;
  readonly #hasher: PasswordHasher;
  readonly #transaction: InTransaction<AccountRepositories>;
  readonly #attempts: PasswordAttempts;

  readonly #accountMail: AccountMail;
  readonly #mail: Pick<MailService, 'wake'>;
  readonly #reauth: Reauthentication;
  readonly #limits: UsersLimits;

  constructor(
    users: UsersRepository,
    hasher: PasswordHasher,
    transaction: InTransaction<AccountRepositories>,
    accountMail: AccountMail,
    mail: Pick<MailService, 'wake'>,
    attempts: PasswordAttempts,
    reauth: Reauthentication,
    limits: UsersLimits,
  ) {
    this.#reauth = reauth;
    this.#limits = limits;
    this.#accountMail = accountMail;
    this.#mail = mail;
    this.#users = users;
    this.#hasher = hasher;
    this.#transaction = transaction;
    this.#attempts = attempts;
  }

  /** The user, or USER_NOT_FOUND; thrown at once, not as a rejection, when the lookup answered at once. */
  get(id: bigint): Awaitable<User> {
    return mapAwaitable(this.#users.findById(id), found);
  }

  find(id: bigint): Awaitable<User | undefined> {
    return this.#users.findById(id);
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
    const password = input.password === undefined ? undefined : await checkPassword(input.password);
    const current = await this.#users.findCredentialsById(id);
    if (!current) throw userNotFound();
    const key = emailKey(email);
    const sensitive = password !== undefined || key !== emailKey(current.user.email);
    if (sensitive) await this.#confirmPassword(current, input.currentPassword, client.address);
    const passwordHash = password === undefined ? undefined : await this.#hasher.hash(password);
    // The new hash and the end of the other sessions commit together: a password change never
    // leaves a session it should have ended. A confirmed change only applies to the hash the
    // present password was checked against: if the password changed meanwhile, it was not the
    // present one any more.
    const ifPasswordHash = sensitive ? current.passwordHash : undefined;
    // A new address is unproven until a link mailed to it is followed; the old address hears of
    // the change, and a new password is announced, in the same transaction as the change.
    const emailChanged = key !== emailKey(current.user.email);
    const user = await this.#transaction(async (repos) => {
      let updated: User | undefined;
      try {
        updated = await repos.users.update(id, {
          email,
          emailKey: key,
          name,
          passwordHash,
          ifPasswordHash,
          unverify: emailChanged,
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
      if (emailChanged) await this.#limits.emailChange.take(repos.limits, id, current.user.email, email);
      if (passwordHash !== undefined) {
        await repos.sessions.deleteForUser(id, actor.tokenHash);
        await this.#accountMail.passwordChanged(repos, updated);
      }
      if (emailChanged) {
        // Links mailed to the old address stop working: they would otherwise outlive the change.
        const now = new Date();
        await repos.tokens.voidAll(id, 'password-reset', now);
        await repos.tokens.voidAll(id, 'email-verify', now);
        await this.#accountMail.verification(repos, updated);
        await this.#accountMail.emailChanged(repos, updated, current.user);
      }
      return updated;
    });
    if (user) {
      if (passwordHash !== undefined || emailChanged) this.#mail.wake();
      return user;
    }
    if (ifPasswordHash !== undefined && (await this.#users.findById(id))) throw wrongCurrentPassword();
    throw userNotFound();
  }

  #confirmPassword(current: Credentials, password: string | undefined, address: string): Promise<void> {
    return confirmPresentPassword(
      { attempts: this.#attempts, hasher: this.#hasher },
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
      const user = await repos.users.delete(id);
      if (user?.emailVerified) await this.#accountMail.accountDeleted(repos, user);
      return user;
    });
    if (!deleted) throw userNotFound();
    if (deleted.emailVerified) this.#mail.wake();
  }

  /** Admin (CLI): the user with that email, in any letter case. */
  async findByEmail(email: string): Promise<User> {
    const found = await this.#users.findCredentials(emailKey(email));
    if (!found) throw new AppError('USER_NOT_FOUND', 'No user has that email.');
    return found.user;
  }

  /** Admin (CLI): a new password, by the registration rules; every session of the user ends. */
  async setPassword(email: string, password: string): Promise<User> {
    const user = await this.findByEmail(email);
    const passwordHash = await this.#hasher.hash(await checkPassword(password));
    await this.#transaction(async ({ users, sessions }) => {
      await users.setPasswordHash(user.id, passwordHash);
      await sessions.deleteForUser(user.id);
    });
    return user;
  }

  /** Admin (CLI): the user's email counts as verified from now on. */
  async markEmailVerified(email: string): Promise<User> {
    const user = await this.findByEmail(email);
    await this.#users.markEmailVerified(user.id, new Date());
    return user;
  }

  /** Admin (CLI): deletes the user with that email (sessions, products and reviews go too). */
  async deleteByEmail(email: string): Promise<User> {
    const user = await this.findByEmail(email);
    if (!(await this.#users.delete(user.id))) throw userNotFound();
    return user;
  }

  /**
   * POST /api/users (with the client's address, within the registration limits) and the admin
   * CLI (without one: the operator is not limited).
   */
  async register(input: Registration, client?: { address: string }): Promise<User> {
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    const password = await checkPassword(input.password);
    if (!client) return this.#register(email, name, password);
    return this.#limits.registration.run(client.address, () => this.#register(email, name, password));
  }

  async #register(email: string, name: string, password: string): Promise<User> {
    const key = emailKey(email);
    // Checked before hashing so an obvious duplicate costs no hash; the unique index still
    // decides races between simultaneous registrations.
    if (await this.#users.findCredentials(key)) throw emailTaken();
    const passwordHash = await this.#hasher.hash(password);
    // The account and the mail that asks its owner to confirm the address commit together.
    const user = await this.#transaction(async (repos) => {
      let created: User;
      try {
        created = await repos.users.insert({ email, emailKey: key, name, passwordHash });
      } catch (error) {
        if (error instanceof EmailTakenError) throw emailTaken();
        throw error;
      }
      await this.#accountMail.verification(repos, created);
      return created;
    });
    this.#mail.wake();
    return user;
  }
}

const emailTaken = () => new AppError('EMAIL_TAKEN', 'email: another account already uses this email');
