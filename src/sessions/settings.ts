// The sessions feature's settings, read by config.ts (the only reader of the environment).
import { type Env, oneOf, secondsAsMs } from '../kernel/settings.ts';

export interface SessionSettings {
  /** Lifetime from sign-in. */
  absoluteTtlMs: number;
  /** Lifetime without a request. */
  idleTtlMs: number;
  /** `auto`: Secure cookie when the request came over https; `always`: every time. */
  cookieSecure: 'auto' | 'always';
}

const DAY_SECONDS = 24 * 3600;

export function sessionSettings(env: Env): SessionSettings {
  return {
    absoluteTtlMs: secondsAsMs(env, 'SESSION_TTL_SECONDS', 7 * DAY_SECONDS, 60, 365 * DAY_SECONDS),
    idleTtlMs: secondsAsMs(env, 'SESSION_IDLE_SECONDS', DAY_SECONDS, 60, 365 * DAY_SECONDS),
    cookieSecure: oneOf(env, 'SESSION_COOKIE_SECURE', ['auto', 'always'] as const, 'auto'),
  };
}
