// sessions/ offers: the guard, the session on the wire, the ended sessions' record, a session row for the grant.
export { type Authenticator, currentSession, DEVICE_HEADER } from './guard.ts';
export { sessionsEnded } from './journal.ts';
export { type NewSession, sessionRow } from './repository.ts';
export { SessionComponent, SessionListItemComponent, sessionBody, TOKEN_MAX } from './schemas.ts';
