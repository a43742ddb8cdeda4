// The wire formats of the documented endpoints (SPEC 4.1). Every difference between profile A and B
// lives here; routes ask the active profile for schemas and bodies instead of branching on it.
import { type TSchema, Type } from 'typebox';
import type { Profile } from '../config.ts';
import { BODY_LIMITS, describeBytes } from '../shared/body-limits.ts';
import { type Component, component, failures, type HeaderName, Id, Timestamp } from '../shared/schemas.ts';
import { EMAIL_MAX, NAME_MAX } from '../users/index.ts';
import type { User } from '../users/user.ts';

export interface WireProfile {
  readonly name: Profile;
  /** Which documented endpoints exist in this profile. */
  readonly serves: { readonly userList: boolean; readonly restProbe: boolean };
  /** The user as this profile writes it: the document's `User`. */
  readonly userComponent: Component;
  readonly userSchema: TSchema;
  user(user: User): object;
  /** The documented sign-in's success body: the document's `SigninSuccess` (profile B's wraps the user). */
  readonly signinSuccessComponent: Component | undefined;
  readonly signinSuccessSchema: TSchema;
  signinSuccess(user: User): object;
  /** The sign-in routes' failure responses: SIGNIN_FAILED at every status, in this profile's shape. */
  readonly signinFailures: Record<number, TSchema>;
  signinFailure(message: string): object;
}

const email = Type.String({
  format: 'email',
  maxLength: EMAIL_MAX,
  description: "The account's email address.",
});
const name = Type.String({ maxLength: NAME_MAX, description: 'Display name.' });

const userA = component(
  'User',
  Type.Object({ id: Id, email, name }, { additionalProperties: false, description: 'A user (profile A).' }),
);

const userB = component(
  'User',
  Type.Object(
    {
      id: Id,
      email,
      name,
      createdAt: Timestamp('When the account was registered.'),
      emailVerified: Type.Boolean({ description: 'The email was confirmed through a link mailed to it.' }),
    },
    { additionalProperties: false, description: 'A user (profile B).' },
  ),
);

const signinSuccessB = component(
  'SigninSuccess',
  Type.Object(
    { user: userB.ref },
    { additionalProperties: false, description: 'Signed in (profile B): the user, wrapped.' },
  ),
);

/** Every failure of a sign-in route, whatever the method, is SIGNIN_FAILED; its status says which. */
export const SIGNIN_FAILED_STATUSES = [400, 401, 403, 413, 415, 429, 500, 503] as const;
/** What SIGNIN_FAILED means at each status; none of them says whether the email has an account. */
export const SIGNIN_NOTES = {
  SIGNIN_FAILED: {
    400: 'The body is not a JSON object with string fields.',
    401: 'Wrong or missing credentials; with `Usher-Second-Factor: totp` when the password was right and a code is needed.',
    403: 'The credential was right, but the email is not verified yet while REQUIRE_VERIFIED_EMAIL is on, or an admin disabled the account (profile B says which).',
    413: `The body is larger than ${describeBytes(BODY_LIMITS.small)}.`,
    415: 'The body is not application/json.',
    429: 'Too many attempts for this account or from this address; try again after Retry-After seconds.',
    500: 'An unexpected failure; details are logged, never returned.',
    503: 'The database does not answer, or the server is too busy to check passwords (then with Retry-After).',
  },
};
/**
 * A sign-in route's failure responses: SIGNIN_FAILED at every status, with only the code
 * (profile A's documented routes) or with a message; `notes` a method's own meanings.
 */
export const signinFailureResponses = (
  codeOnly: boolean,
  notes: { SIGNIN_FAILED: Partial<Record<(typeof SIGNIN_FAILED_STATUSES)[number], string>> } = SIGNIN_NOTES,
  /** What a 401 may carry besides `Usher-Second-Factor` (a mail sign-in's ticket). */
  more401: readonly HeaderName[] = [],
) =>
  failures(
    SIGNIN_FAILED_STATUSES.map((status) => ['SIGNIN_FAILED', status] as const),
    {
      codeOnly,
      everyRoute: false,
      notes: { SIGNIN_FAILED: { ...SIGNIN_NOTES.SIGNIN_FAILED, ...notes.SIGNIN_FAILED } },
      headers: { 401: ['Usher-Second-Factor', ...more401] },
    },
  );
const signinFailures = (codeOnly: boolean) => signinFailureResponses(codeOnly);

const profileA: WireProfile = {
  name: 'a',
  serves: { userList: false, restProbe: false },
  userComponent: userA,
  userSchema: userA.ref,
  user: (u) => ({ id: u.id, email: u.email, name: u.name }),
  signinSuccessComponent: undefined,
  signinSuccessSchema: userA.ref,
  signinSuccess: (u) => profileA.user(u),
  signinFailures: signinFailures(true),
  signinFailure: () => ({ error: 'SIGNIN_FAILED' }),
};

const profileB: WireProfile = {
  name: 'b',
  serves: { userList: true, restProbe: true },
  userComponent: userB,
  userSchema: userB.ref,
  user: (u) => ({
    id: u.id,
    email: u.email,
    name: u.name,
    createdAt: u.createdAt.toISOString(),
    emailVerified: u.emailVerified,
  }),
  signinSuccessComponent: signinSuccessB,
  signinSuccessSchema: signinSuccessB.ref,
  signinSuccess: (u) => ({ user: profileB.user(u) }),
  signinFailures: signinFailures(false),
  signinFailure: (message) => ({ error: 'SIGNIN_FAILED', message }),
};

export function wireProfile(name: Profile): WireProfile {
  return name === 'a' ? profileA : profileB;
}
