// What account events carry about the account in their webhook data, so that an app keeping its
// own user table can write the row from the event alone.
import type { User } from './user.ts';

export function userData(user: User) {
  return {
    email: user.email,
    name: user.name,
    emailVerified: user.emailVerified,
    role: user.role,
    createdAt: user.createdAt.toISOString(),
  };
}
