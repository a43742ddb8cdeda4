// totp/ offers the sign-in an account's TOTP factor as the signer reads it.
export { type TotpFactor, toTotpFactor } from './repository.ts';
