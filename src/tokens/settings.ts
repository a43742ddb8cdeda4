// How long a mailed link's single-use token stays good. Read by config.ts (the only reader of the
// environment).
import { type Env, secondsAsMs } from '../kernel/settings.ts';

export interface TokenSettings {
  passwordResetTtlMs: number;
  emailVerifyTtlMs: number;
}

export function tokenSettings(env: Env): TokenSettings {
  return {
    passwordResetTtlMs: secondsAsMs(env, 'PASSWORD_RESET_TTL_SECONDS', 1800, 60, 7 * 24 * 3600),
    emailVerifyTtlMs: secondsAsMs(env, 'EMAIL_VERIFY_TTL_SECONDS', 86400, 60, 30 * 24 * 3600),
  };
}
