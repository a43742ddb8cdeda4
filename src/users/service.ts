import type { PasswordHasher } from '../passwords/hasher.ts';
import { checkPassword } from '../passwords/policy.ts';
import type { ActiveSession, SessionService } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import type { PageRequest } from '../shared/paging.ts';
import { EmailTakenError, type UsersRepository } from './repository.ts';
import { checkEmail, checkName } from './rules.ts';
import { emailKey, type User, type UserSortKey } from './user.ts';

export interface Registration {
  email: string;
  name: string;
  password: string;
}

export interface UserUpdate {
  email: string;
  name: string;
  password?: string;
}

export const userNotFound = () => new AppError('USER_NOT_FOUND', 'No user has that id.');
const forbidden = () => new AppError('FORBIDDEN', 'A user may change or delete only their own account.');

export class UsersService {
  readonly #users: UsersRepository;
  readonly #hasher: PasswordHasher;

  readonly #sessions: SessionService;

  constructor(users: UsersRepository, hasher: PasswordHasher, sessions: SessionService) {
    this.#users = users;
    this.#hasher = hasher;
    this.#sessions = sessions;
  }

  async get(id: bigint | undefined): Promise<User> {
    const user = id === undefined ? undefined : await this.#users.findById(id);
    if (!user) throw userNotFound();
    return user;
  }

  async list(paging: PageRequest<UserSortKey>): Promise<{ users: User[]; total: number }> {
    return this.#users.list(paging);
  }

  /**
   * PUT /api/users/{id}: a user replaces their own email and name, and optionally password. A new
   * password ends every other session of theirs; the session making the change stays.
   */
  async update(actor: ActiveSession, id: bigint | undefined, input: UserUpdate): Promise<User> {
    if (id === undefined) throw userNotFound();
    if (id !== actor.userId) throw forbidden();
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    const passwordHash =
      input.password === undefined ? undefined : await this.#hasher.hash(await checkPassword(input.password));
    let user: User | undefined;
    try {
      user = await this.#users.update(id, { email, emailKey: emailKey(email), name, passwordHash });
    } catch (error) {
      if (error instanceof EmailTakenError) throw emailTaken();
      throw error;
    }
    if (!user) throw userNotFound();
    if (passwordHash !== undefined) await this.#sessions.endOthers(id, actor.tokenHash);
    return user;
  }

  /** DELETE /api/users/{id}: only oneself; sessions, products and reviews go too. */
  async delete(actor: ActiveSession, id: bigint | undefined): Promise<void> {
    if (id === undefined) throw userNotFound();
    if (id !== actor.userId) throw forbidden();
    if (!(await this.#users.delete(id))) throw userNotFound();
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
    await this.#users.setPasswordHash(user.id, await this.#hasher.hash(await checkPassword(password)));
    await this.#sessions.endOthers(user.id);
    return user;
  }

  /** Admin (CLI): deletes the user with that email (sessions, products and reviews go too). */
  async deleteByEmail(email: string): Promise<User> {
    const user = await this.findByEmail(email);
    if (!(await this.#users.delete(user.id))) throw userNotFound();
    return user;
  }

  async register(input: Registration): Promise<User> {
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    const password = await checkPassword(input.password);
    const key = emailKey(email);
    // Checked before hashing so an obvious duplicate costs no hash; the unique index still
    // decides races between simultaneous registrations.
    if (await this.#users.findCredentials(key)) throw emailTaken();
    const passwordHash = await this.#hasher.hash(password);
    try {
      return await this.#users.insert({ email, emailKey: key, name, passwordHash });
    } catch (error) {
      if (error instanceof EmailTakenError) throw emailTaken();
      throw error;
    }
  }
}

const emailTaken = () => new AppError('EMAIL_TAKEN', 'email: another account already uses this email');
