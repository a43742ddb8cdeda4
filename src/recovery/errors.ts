// A single-use token that does not check out. Recovery's tokens (reset, verification) are what the
// text says; oauth (a callback's state) and oidc (a sign-in page's interaction) answer with it too,
// with their own notes. shared/errors.ts says how codes are declared.
import type { Declares, ErrorDeclarations } from '../shared/errors.ts';

export const RECOVERY_ERRORS = {
  INVALID_TOKEN: {
    status: 400,
    when: 'The password-reset or email-verification token is unknown, already used, or expired.',
  },
} as const satisfies ErrorDeclarations;

declare module '../shared/errors.ts' {
  interface ErrorCodes extends Declares<typeof RECOVERY_ERRORS, 'recovery'> {}
}
