import { BODY_LIMITS, describeBytes, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from './body-limits.ts';

/**
 * A code's HTTP status and when it is used, in the OpenAPI document's words (docs/api.md's table
 * has its own; test/docs/error-codes.test.ts holds it to the codes and statuses).
 */
export interface ErrorDeclaration {
  readonly status: number;
  readonly when: string;
  /** The statuses it is also answered with (sign-in folds every failure into one code). */
  readonly alsoAt?: readonly number[];
}

/** Codes with their declarations: the generic ones below, or a feature's (its errors.ts). */
export type ErrorDeclarations = Readonly<Record<string, ErrorDeclaration>>;

/**
 * What a declaration adds to `ErrorCodes`: each of its codes, owned by `Owner` (the feature's
 * name). Two owners of one code are two types for one property, which does not compile.
 */
export type Declares<Table extends ErrorDeclarations, Owner extends string> = {
  readonly [Code in keyof Table]: Owner;
};

/**
 * The codes that belong to no feature: the request itself (routing, body, query, HTTP framing),
 * the session and role guard, the throttles, re-authentication (kernel/reauth.ts's rule, used by
 * totp and oauth) and the server's own failures. A feature's codes are in its errors.ts.
 */
export const GENERIC_ERRORS = {
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
  REAUTHENTICATION_REQUIRED: {
    status: 401,
    when: 'The change needs a sign-in of the last 10 minutes: sign in again, then retry.',
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
} as const satisfies ErrorDeclarations;

/** Who the generic codes belong to, for ErrorCodes and the table (a feature's is its name). */
const GENERIC_OWNER = 'shared';

/**
 * Every error code Usher may answer with, each mapped to its owner. The generic ones are here; a
 * feature adds its own in its errors.ts, as webhooks/events.ts adds to the journal's types:
 *
 *   export const USERS_ERRORS = { EMAIL_TAKEN: { status: 409, when: '…' } } as const satisfies ErrorDeclarations;
 *   declare module '../shared/errors.ts' {
 *     interface ErrorCodes extends Declares<typeof USERS_ERRORS, 'users'> {}
 *   }
 *
 * and names the same object as its Feature's `errors`, from which the app's table is built
 * (`ErrorTable.of`). A code that nobody declares fails to compile where it is thrown or listed in
 * `failures()`; one declared by two owners fails to compile at every declaration (and is refused
 * at start by `ErrorTable.of`). A feature that answers with another's code imports nothing for it.
 */
export interface ErrorCodes extends Declares<typeof GENERIC_ERRORS, typeof GENERIC_OWNER> {}

export type ErrorCode = keyof ErrorCodes & string;

/**
 * The codes an app answers with and their declarations: the generic ones, then each feature's.
 * Built at start from the features the app runs; the source for the OpenAPI document's error
 * components and the routes' failure lists (shared/schemas.ts), for the statuses of errors thrown
 * without one, and for what tests compare docs/api.md's table with.
 */
export class ErrorTable {
  readonly #declared: ReadonlyMap<string, ErrorDeclaration & { owner: string }>;

  private constructor(declared: ReadonlyMap<string, ErrorDeclaration & { owner: string }>) {
    this.#declared = declared;
  }

  /** The generic codes and those the features declare; a code declared twice is a programming error. */
  static of(features: readonly { name: string; errors?: ErrorDeclarations }[]): ErrorTable {
    const declared = new Map<string, ErrorDeclaration & { owner: string }>();
    const add = (owner: string, errors: ErrorDeclarations) => {
      for (const [code, declaration] of Object.entries(errors)) {
        const other = declared.get(code);
        if (other)
          throw new Error(`the error code ${code} is declared twice: by ${other.owner} and by ${owner}`);
        declared.set(code, { ...declaration, owner });
      }
    };
    add(GENERIC_OWNER, GENERIC_ERRORS);
    for (const feature of features) add(feature.name, feature.errors ?? {});
    return new ErrorTable(declared);
  }

  /** Every code, in the order declared. */
  codes(): ErrorCode[] {
    return [...this.#declared.keys()] as ErrorCode[];
  }

  has(code: string): code is ErrorCode {
    return this.#declared.has(code);
  }

  /** A code's declaration and owner ('shared' or a feature's name); throws for one no feature here declares. */
  declaration(code: ErrorCode): ErrorDeclaration & { owner: string } {
    const found = this.#declared.get(code);
    if (!found) throw new Error(`the error code ${code} is declared by no feature this app runs`);
    return found;
  }
}

// The table of the features that run in this process: the generic codes until the app (or the
// CLI) says which features those are. One per process because route schemas and thrown errors
// read it where no app is at hand; an app built with other features (a test's) replaces it.
let served = ErrorTable.of([]);

/** Makes `table` the one thrown errors and route schemas read (app.ts, the CLI, at start). */
export function serveErrorCodes(table: ErrorTable): void {
  served = table;
}

/** The table of the features that run (see serveErrorCodes). */
export function servedErrorCodes(): ErrorTable {
  return served;
}

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
    // A code that no running feature declares (one whose feature this app leaves out) is the
    // server's fault, not the client's; it is never thrown in place of the error being raised.
    this.statusCode = statusCode ?? (served.has(code) ? served.declaration(code).status : 500);
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
