// The passkey sign-in options' limit, read by config.ts (the only reader of the environment).
import { type Env, integer } from '../kernel/settings.ts';

/** Passkey sign-in options per client address per window (each stores a challenge); more get 429. */
export interface PasskeyOptionsSettings {
  perAddress: number;
  windowMs: number;
}

export function passkeyOptionsSettings(env: Env): PasskeyOptionsSettings {
  return {
    perAddress: integer(env, 'PASSKEY_OPTIONS_MAX_PER_ADDRESS', 100, 1, 1_000_000),
    windowMs: 15 * 60 * 1000,
  };
}
