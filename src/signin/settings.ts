// The sign-in core's settings: the throttle's counts and window, known devices, and whether an
// unverified email may sign in. Read by config.ts (the only reader of the environment).
import { type Env, flag, integer, secondsAsMs } from '../kernel/settings.ts';

export interface ThrottleSettings {
  windowMs: number;
  perAccountAddress: number;
  perAccount: number;
  perAddress: number;
  concurrentPerAccount: number;
  concurrentPerAddress: number;
  /** How long a client that signed in stays a known device of the account; 0: no known devices. */
  deviceTtlMs: number;
}

export function throttleSettings(env: Env): ThrottleSettings {
  return {
    windowMs: secondsAsMs(env, 'SIGNIN_THROTTLE_WINDOW_SECONDS', 900, 1, 86400),
    perAccountAddress: integer(env, 'SIGNIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS', 10, 1, 1_000_000),
    perAccount: integer(env, 'SIGNIN_MAX_FAILURES_PER_ACCOUNT', 100, 1, 1_000_000),
    perAddress: integer(env, 'SIGNIN_MAX_FAILURES_PER_ADDRESS', 100, 1, 1_000_000),
    concurrentPerAccount: integer(env, 'SIGNIN_MAX_CONCURRENT_PER_ACCOUNT', 4, 1, 10_000),
    concurrentPerAddress: integer(env, 'SIGNIN_MAX_CONCURRENT_PER_ADDRESS', 8, 1, 10_000),
    deviceTtlMs: secondsAsMs(env, 'SIGNIN_DEVICE_TTL_SECONDS', 180 * 24 * 3600, 0, 2 * 365 * 24 * 3600),
  };
}

/** REQUIRE_VERIFIED_EMAIL: refuse sign-in (403) to accounts whose email is not verified. */
export function requireVerifiedEmailSetting(env: Env): boolean {
  return flag(env, 'REQUIRE_VERIFIED_EMAIL', false);
}
