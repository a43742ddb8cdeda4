import type { PasswordHasher } from '../auth/passwords.ts';
import { AppError } from '../shared/errors.ts';
import { EmailTakenError, type UsersRepository } from './repository.ts';
import { checkEmail, checkName, checkPassword } from './rules.ts';
import { emailKey, type User } from './user.ts';

export interface Registration {
  email: string;
  name: string;
  password: string;
}

export const userNotFound = () => new AppError('USER_NOT_FOUND', 'No user has that id.');

export class UsersService {
  readonly #users: UsersRepository;
  readonly #hasher: PasswordHasher;

  constructor(users: UsersRepository, hasher: PasswordHasher) {
    this.#users = users;
    this.#hasher = hasher;
  }

  async get(id: bigint | undefined): Promise<User> {
    const user = id === undefined ? undefined : await this.#users.findById(id);
    if (!user) throw userNotFound();
    return user;
  }

  list(offset: number, limit: number): Promise<User[]> {
    return this.#users.list(offset, limit);
  }

  async register(input: Registration): Promise<User> {
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    const password = checkPassword(input.password);
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
