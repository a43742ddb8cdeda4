// The codes of accounts: an unknown user, a taken email, the last admin (roles live on the
// account). Admin's routes answer with them too. shared/errors.ts says how codes are declared.
import type { Declares, ErrorDeclarations } from '../shared/errors.ts';

export const USERS_ERRORS = {
  USER_NOT_FOUND: { status: 404, when: 'No user has that id (or the id is not a valid user id).' },
  EMAIL_TAKEN: { status: 409, when: 'Another user already has that email, in any letter case.' },
  LAST_ADMIN: {
    status: 409,
    when: 'The change would leave no admin who can sign in (a demotion, disabling or deletion of the last one): make another account admin first.',
  },
} as const satisfies ErrorDeclarations;

declare module '../shared/errors.ts' {
  interface ErrorCodes extends Declares<typeof USERS_ERRORS, 'users'> {}
}
