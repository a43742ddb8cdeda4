// Two-step sign-in's code. shared/errors.ts says how codes are declared.
import type { Declares, ErrorDeclarations } from '../shared/errors.ts';

export const TOTP_ERRORS = {
  TOTP_ALREADY_ON: {
    status: 409,
    when: 'Two-step sign-in (TOTP) is already on for this account; turn it off first to set it up again.',
  },
} as const satisfies ErrorDeclarations;

declare module '../shared/errors.ts' {
  interface ErrorCodes extends Declares<typeof TOTP_ERRORS, 'totp'> {}
}
