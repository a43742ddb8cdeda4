// Composition: repositories and services for one database and configuration. The HTTP app and
// the admin CLI share it, so both apply the same rules (validation, hashing, session revocation).

import { AuthService } from './auth/service.ts';
import { SigninThrottle } from './auth/throttle.ts';
import { SigninAttemptsRepository } from './auth/throttle-repository.ts';
import { CatalogRepository } from './catalog/repository.ts';
import { CatalogService } from './catalog/service.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import { inTransaction } from './db/transactions.ts';
import { PasswordHasher } from './passwords/hasher.ts';
import { SessionsRepository } from './sessions/repository.ts';
import { type Clock, SessionService } from './sessions/service.ts';
import { UsersRepository } from './users/repository.ts';
import { UsersService } from './users/service.ts';

export interface Services {
  hasher: PasswordHasher;
  users: UsersService;
  auth: AuthService;
  sessions: SessionService;
  throttle: SigninThrottle;
  catalog: CatalogService;
  /** Background clean-up of expired sessions and sign-in failures. */
  housekeeping(): Promise<void>;
}

/** `now`: the clock sessions and the throttle read; tests pass one they can move. */
export function createServices(config: Config, database: Database, now: Clock = Date.now): Services {
  const rowLocks = database.dialect === 'postgres';
  const hasher = new PasswordHasher(config.passwordHash);
  const usersRepository = new UsersRepository(database.db, { rowLocks });
  const sessions = new SessionService(new SessionsRepository(database.db), config.session, now);
  const throttle = new SigninThrottle(new SigninAttemptsRepository(database.db), config.throttle, now);
  const accountTransaction = inTransaction(database.db, (trx) => ({
    users: new UsersRepository(trx, { rowLocks }),
    sessions: new SessionsRepository(trx),
  }));
  return {
    hasher,
    users: new UsersService(usersRepository, hasher, accountTransaction, throttle),
    auth: new AuthService(usersRepository, hasher, throttle, sessions, accountTransaction),
    sessions,
    throttle,
    catalog: new CatalogService(new CatalogRepository(database.db)),
    housekeeping: async () => {
      await Promise.all([sessions.purgeExpired(), throttle.purgeExpired()]);
    },
  };
}
