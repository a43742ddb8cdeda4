// The users feature's settings: registration's limits, email changes' caps, and who may look users
// up. Read by config.ts (the only reader of the environment).
import { type Env, integer, oneOf } from '../kernel/settings.ts';

export interface RegistrationSettings {
  /** Registrations per client address (IPv6: per /64) per window, counted in the shared database; more get 429. */
  perAddress: number;
  windowMs: number;
  /** Registrations from one client address being worked on at once in this process; more get 429. */
  concurrentPerAddress: number;
  /** Registrations being worked on at once in this process, from anywhere; more get 503. */
  concurrent: number;
}

export function registrationSettings(env: Env): RegistrationSettings {
  return {
    perAddress: integer(env, 'REGISTRATION_MAX_PER_ADDRESS', 10, 1, 1_000_000),
    windowMs: 15 * 60 * 1000,
    concurrentPerAddress: integer(env, 'REGISTRATION_MAX_CONCURRENT_PER_ADDRESS', 2, 1, 10_000),
    concurrent: integer(env, 'REGISTRATION_MAX_CONCURRENT', 16, 1, 10_000),
  };
}

export interface EmailChangeSettings {
  /** Email changes per account per window; more get 429. */
  perAccount: number;
  /** Mails email changes send to one address (new or old) per window; a change that would send more gets 429. */
  perMailbox: number;
  windowMs: number;
}

export function emailChangeSettings(env: Env): EmailChangeSettings {
  return {
    perAccount: integer(env, 'EMAIL_CHANGE_MAX_PER_ACCOUNT', 3, 1, 1000),
    perMailbox: integer(env, 'EMAIL_CHANGE_MAX_PER_MAILBOX', 3, 1, 1000),
    windowMs: 15 * 60 * 1000,
  };
}

export const USER_LOOKUPS = ['public', 'signed-in', 'self'] as const;
export type UserLookup = (typeof USER_LOOKUPS)[number];

/** USER_LOOKUP: who may read GET /api/users/{id} and GET /api/users. */
export function userLookupSetting(env: Env): UserLookup {
  return oneOf(env, 'USER_LOOKUP', USER_LOOKUPS, 'public');
}
