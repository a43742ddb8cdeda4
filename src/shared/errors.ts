import { BODY_LIMITS, describeBytes, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from './body-limits.ts';

/**
 * Every error code Usher answers with, its HTTP status, and when it is used. This table is the
 * source for docs/api.md's error table and for the OpenAPI document.
 */
export const ERROR_CODES = {
  USER_NOT_FOUND: { status: 404, when: 'No user has that id (or the id is not a valid user id).' },
  SIGNIN_FAILED: {
    status: 401,
    when: 'Sign-in failed: wrong or missing credentials (401), a body that is not a JSON object of strings (400), the email not yet verified while REQUIRE_VERIFIED_EMAIL is on, or the account disabled by an admin (403, only after a right credential), too large (413), not JSON (415), throttled (429, with Retry-After; also when wrong present passwords (currentPassword) have throttled the account), database down or too busy (503, with Retry-After when busy).',
  },
  NOT_FOUND: {
    status: 404,
    when: 'No such route, or no record with that id (a product, review, session or passkey), including records of other users.',
  },
  VALIDATION_FAILED: {
    status: 400,
    when: `The body is not valid JSON (or is nested deeper than ${MAX_JSON_DEPTH} arrays or objects, or holds more than ${MAX_JSON_CONTAINERS}), or a field breaks a rule; the message names the field.`,
  },
  INVALID_QUERY: {
    status: 400,
    when: 'A query parameter (page, size, sort) has a value that is not accepted, or page × size is over 10,000 in an order that pages no deeper.',
  },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, when: 'The body is not application/json.' },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    when: `The body is larger than the route accepts: ${describeBytes(BODY_LIMITS.small)}, or ${describeBytes(BODY_LIMITS.account)} for a change to your account or a passkey registration, ${describeBytes(BODY_LIMITS.text)} for products and reviews.`,
  },
  UNAUTHENTICATED: {
    status: 401,
    when: 'The request needs a session: sign in and send the cookie or a Bearer token.',
  },
  FORBIDDEN: {
    status: 403,
    when: "The signed-in user may not change this record (someone else's), lacks the role the route needs (support or admin), or a cookie was sent cross-site.",
  },
  EMAIL_TAKEN: { status: 409, when: 'Another user already has that email, in any letter case.' },
  TOTP_ALREADY_ON: {
    status: 409,
    when: 'Two-step sign-in (TOTP) is already on for this account; turn it off first to set it up again.',
  },
  QUOTA_EXCEEDED: {
    status: 409,
    when: 'You own as many products (or reviews) as one account may (PRODUCTS_MAX_PER_USER, REVIEWS_MAX_PER_USER); delete some to create more.',
  },
  INVALID_TOKEN: {
    status: 400,
    when: 'The password-reset or email-verification token is unknown, already used, or expired.',
  },
  REAUTHENTICATION_REQUIRED: {
    status: 401,
    when: 'The change needs a sign-in of the last 10 minutes: sign in again, then retry.',
  },
  LAST_SIGNIN_METHOD: {
    status: 409,
    when: 'Unlinking this identity would leave the account without a way to sign in (no password, passkey or other identity).',
  },
  ACCOUNT_EXISTS: {
    status: 409,
    when: "An account has this identity's email, but the provider or the account has not verified it: sign in the usual way, then link the provider from the account.",
  },
  LAST_ADMIN: {
    status: 409,
    when: 'The change would leave no admin who can sign in (a demotion, disabling or deletion of the last one): make another account admin first.',
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
  TOO_MANY_REQUESTS: {
    status: 429,
    when: 'Too many requests of this kind from this client address, or creations from this account; try again after Retry-After seconds.',
  },
  BAD_REQUEST: {
    status: 400,
    when: 'The request is not valid HTTP/1.1 (for example both Content-Length and Transfer-Encoding).',
  },
  HEADERS_TOO_LARGE: { status: 431, when: 'The request headers exceed 16 KiB.' },
  REQUEST_TIMEOUT: { status: 408, when: 'The request headers or body took too long to arrive.' },
  UNAVAILABLE: { status: 503, when: 'The database does not answer, or the server is shutting down.' },
  INTERNAL: { status: 500, when: 'An unexpected failure; details are logged, never returned.' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** A failure with a stable code; the error handler turns it into the route's error body. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    code: ErrorCode,
    message: string,
    statusCode?: number,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.code = code;
    this.headers = headers;
    this.name = 'AppError';
    this.statusCode = statusCode ?? ERROR_CODES[code].status;
  }
}

/**
 * The hash queue is full: the request is answered 503 with Retry-After instead of waiting. Thrown
 * by passwords/hasher.ts; here so that what gives back a counted attempt when the server, not the
 * client, failed (kernel/limits.ts, kernel/reauth.ts) can tell it apart without a password import.
 */
export class HashOverloadedError extends AppError {
  constructor(retryAfterSeconds: number) {
    super('UNAVAILABLE', 'The server is too busy to check passwords right now; try again shortly.', 503, {
      'retry-after': String(retryAfterSeconds),
    });
    this.name = 'HashOverloadedError';
  }
}
