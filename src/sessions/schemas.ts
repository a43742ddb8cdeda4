// A session as the wire shows it. The id is the public one: never the token nor its hash.
import { Type } from 'typebox';
import { component, Timestamp } from '../shared/schemas.ts';

export const SESSION_ID_PATTERN = '^[0-9a-f]{32}$';
/** A session token: 32 random bytes, base64url (43 characters). */
export const TOKEN_MAX = 43;

const sessionFields = {
  id: Type.String({ pattern: SESSION_ID_PATTERN, maxLength: 32, description: "The session's public id." }),
  createdAt: Timestamp('When it started (the sign-in).'),
  expiresAt: Timestamp('When it ends at the latest, however it is used.'),
};

/** `{id, createdAt, expiresAt}`: what GET /api/session and a token sign-in show of a session. */
export const SessionComponent = component(
  'Session',
  Type.Object(sessionFields, { additionalProperties: false, description: 'A session (never its token).' }),
);

export const SessionListItemComponent = component(
  'SessionListItem',
  Type.Object(
    {
      ...sessionFields,
      lastSeenAt: Timestamp('Its last request, to within a minute (it is written at most once a minute).'),
      current: Type.Boolean({ description: 'This is the session making the request.' }),
      userAgent: Type.Union([Type.String({ maxLength: 256 }), Type.Null()], {
        description: 'The User-Agent it signed in with (up to 256 characters), or null.',
      }),
    },
    { additionalProperties: false, description: 'One of your sessions, as GET /api/sessions lists it.' },
  ),
);

export function sessionBody(session: { id: string; createdAt: Date; expiresAt: Date }) {
  return {
    id: session.id,
    createdAt: session.createdAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
  };
}
