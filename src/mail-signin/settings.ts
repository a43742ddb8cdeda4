// Sign-in by mail's setting, read by config.ts (the only reader of the environment).
import { type Env, flag } from '../kernel/settings.ts';

/**
 * EMAIL_SIGNIN_CREATES_ACCOUNTS: a sign-in link or code is mailed to an email with no account
 * too, and using it creates the account (email verified, no password).
 */
export function emailSigninCreatesAccountsSetting(env: Env): boolean {
  return flag(env, 'EMAIL_SIGNIN_CREATES_ACCOUNTS', false);
}
