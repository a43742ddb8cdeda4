// The password reset's limits, read by config.ts (the only reader of the environment).
import { type Env, integer } from '../kernel/settings.ts';

export interface PasswordResetSettings {
  /** Reset mails per account per window; further asks still answer 202 and send nothing. */
  perAccount: number;
  /** Asks per client address per window; further asks get 429. */
  perAddress: number;
  windowMs: number;
}

export function passwordResetSettings(env: Env): PasswordResetSettings {
  return {
    perAccount: integer(env, 'PASSWORD_RESET_MAX_PER_ACCOUNT', 3, 1, 1000),
    perAddress: integer(env, 'PASSWORD_RESET_MAX_PER_ADDRESS', 20, 1, 1_000_000),
    windowMs: 15 * 60 * 1000,
  };
}
