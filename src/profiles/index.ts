// The wire formats of the documented endpoints (SPEC 4.1). Every difference between profile A and B
// lives here; routes ask the active profile for schemas and bodies instead of branching on it.
import { type TSchema, Type } from 'typebox';
import type { Profile } from '../config.ts';
import { codeOnlyErrorBody, errorBody, Id } from '../shared/schemas.ts';
import type { User } from '../users/user.ts';

export interface WireProfile {
  readonly name: Profile;
  /** Which documented endpoints exist in this profile. */
  readonly serves: { readonly userList: boolean; readonly restProbe: boolean };
  readonly userSchema: TSchema;
  user(user: User): object;
  readonly signinSuccessSchema: TSchema;
  signinSuccess(user: User): object;
  readonly signinFailureSchema: TSchema;
  signinFailure(message: string): object;
}

const userA = Type.Object(
  { id: Id, email: Type.String(), name: Type.String() },
  { additionalProperties: false },
);

const userB = Type.Object(
  {
    id: Id,
    email: Type.String(),
    name: Type.String(),
    createdAt: Type.String({ format: 'date-time', description: 'When the account was registered.' }),
    emailVerified: Type.Boolean({ description: 'The email was confirmed through a link mailed to it.' }),
  },
  { additionalProperties: false },
);

const profileA: WireProfile = {
  name: 'a',
  serves: { userList: false, restProbe: false },
  userSchema: userA,
  user: (u) => ({ id: u.id, email: u.email, name: u.name }),
  signinSuccessSchema: userA,
  signinSuccess: (u) => profileA.user(u),
  signinFailureSchema: codeOnlyErrorBody('SIGNIN_FAILED'),
  signinFailure: () => ({ error: 'SIGNIN_FAILED' }),
};

const profileB: WireProfile = {
  name: 'b',
  serves: { userList: true, restProbe: true },
  userSchema: userB,
  user: (u) => ({
    id: u.id,
    email: u.email,
    name: u.name,
    createdAt: u.createdAt.toISOString(),
    emailVerified: u.emailVerified,
  }),
  signinSuccessSchema: Type.Object({ user: userB }, { additionalProperties: false }),
  signinSuccess: (u) => ({ user: profileB.user(u) }),
  signinFailureSchema: errorBody('SIGNIN_FAILED'),
  signinFailure: (message) => ({ error: 'SIGNIN_FAILED', message }),
};

export function wireProfile(name: Profile): WireProfile {
  return name === 'a' ? profileA : profileB;
}
