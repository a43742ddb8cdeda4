// Every sign-in method's failure, whatever went wrong: one code, its status saying which (profiles/
// index.ts writes its notes per status). kernel/reauth.ts answers a throttled account with it too.
// shared/errors.ts says how codes are declared.
import type { Declares, ErrorDeclarations } from '../shared/errors.ts';

export const SIGNIN_ERRORS = {
  SIGNIN_FAILED: {
    status: 401,
    when: 'Sign-in failed: wrong or missing credentials (401), a body that is not a JSON object of strings (400), the email not yet verified while REQUIRE_VERIFIED_EMAIL is on, or the account disabled by an admin (403, only after a right credential), too large (413), not JSON (415), throttled (429, with Retry-After; also when wrong present passwords (currentPassword) have throttled the account), database down or too busy (503, with Retry-After when busy).',
    alsoAt: [400, 403, 413, 415, 429, 500, 503],
  },
} as const satisfies ErrorDeclarations;

declare module '../shared/errors.ts' {
  interface ErrorCodes extends Declares<typeof SIGNIN_ERRORS, 'signin'> {}
}
