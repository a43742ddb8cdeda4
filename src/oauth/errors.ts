// Sign-in with a provider: the linking rule's refusals and the provider's failure (also written
// into a callback's redirect as ?error=, with OAUTH_DENIED, which is never an HTTP error).
// shared/errors.ts says how codes are declared.
import type { Declares, ErrorDeclarations } from '../shared/errors.ts';

export const OAUTH_ERRORS = {
  LAST_SIGNIN_METHOD: {
    status: 409,
    when: 'Unlinking this identity would leave the account without a way to sign in (no password, passkey or other identity).',
  },
  ACCOUNT_EXISTS: {
    status: 409,
    when: "An account has this identity's email, but the provider or the account has not verified it: sign in the usual way, then link the provider from the account.",
  },
  IDENTITY_TAKEN: { status: 409, when: 'This provider identity is linked to another account.' },
  SIGNUP_CLOSED: {
    status: 409,
    when: 'No account has this identity, and new accounts through providers are off (OAUTH_SIGNUP=false).',
  },
  OAUTH_FAILED: {
    status: 409,
    when: 'The provider sign-in failed: the provider did not answer in time, refused, shared no email, or answered something that does not check out.',
  },
} as const satisfies ErrorDeclarations;

declare module '../shared/errors.ts' {
  interface ErrorCodes extends Declares<typeof OAUTH_ERRORS, 'oauth'> {}
}
