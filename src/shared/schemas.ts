// Schemas shared by every feature's routes, and the machinery that turns them into the OpenAPI
// document's named components: a shape defined once (User, Product, the error body of a status)
// is registered with an $id and referenced by routes, so validation, serialisation and the
// document read the same definition.
import type { preValidationHookHandler } from 'fastify';
import { type Static, type TSchema, type TUnsafe, Type } from 'typebox';
import { type ErrorCode, servedErrorCodes } from '../shared/errors.ts';

/** The largest id: 2^63-1, the top of a signed 64-bit column. */
export const MAX_ID = 2n ** 63n - 1n;
/**
 * What the document writes as an id's `maximum`. A double cannot hold 2^63-1, so the document is
 * serialised with this value replaced by the exact digits (plugins/openapi.ts).
 */
export const MAX_ID_IN_DOCUMENT = Number(MAX_ID);

/**
 * A 64-bit id. The domain carries it as a bigint and the serializer writes bigints as exact JSON
 * integers, so ids at or above 2^53 are neither rounded nor quoted.
 */
export const Id = Type.Unsafe<bigint>({
  type: 'integer',
  format: 'int64',
  minimum: 1,
  maximum: MAX_ID_IN_DOCUMENT,
  description: 'A 64-bit integer, 1 to 2^63-1, written as an exact JSON integer.',
});

/**
 * A 64-bit id or null. One schema with two types rather than a union: the serializer checks a
 * union's branches with a validator that knows no bigints.
 */
export const NullableId = (description: string) =>
  Type.Unsafe<bigint | null>({
    type: ['integer', 'null'],
    format: 'int64',
    minimum: 1,
    maximum: MAX_ID_IN_DOCUMENT,
    description,
  });

/** An instant as `Date.toISOString()` writes it (24 characters; 27 for years past 9999). */
export const Timestamp = (description?: string) =>
  Type.String({ format: 'date-time', maxLength: 27, ...(description ? { description } : {}) });

/** The human-readable text of a failure, never parsed by clients: the code is. */
export const MESSAGE_MAX = 1000;

/** A response header as the document shows it. */
interface HeaderSchema {
  description: string;
  schema?: never;
  type: 'string' | 'integer';
  [keyword: string]: unknown;
}

export const HEADERS = {
  Location: {
    type: 'string',
    format: 'uri-reference',
    maxLength: 64,
    description: 'The path of what was created.',
  },
  'Set-Cookie': {
    type: 'string',
    maxLength: 512,
    description:
      'The session cookie (HttpOnly, SameSite=Lax; Secure behind HTTPS), or its removal; after a sign-in or ' +
      'a password reset also the device cookie `usher_device` (HttpOnly, SameSite=Strict, Path=/api), by which ' +
      "this browser's sign-ins to the account are judged by their own failures, not by others'.",
  },
  'Usher-Device': {
    type: 'string',
    minLength: 43,
    maxLength: 43,
    pattern: '^[A-Za-z0-9_-]{43}$',
    description:
      'The device token of this client for the account (it replaces the device cookie for clients without ' +
      "cookies): send it back in the `Usher-Device` request header on later sign-ins, so that others' failed " +
      'guesses on the account do not lock this client out. Keep it like a session token.',
  },
  'X-Total-Count': {
    type: 'integer',
    format: 'int64',
    minimum: 0,
    maximum: MAX_ID_IN_DOCUMENT,
    description: 'How many items the whole collection holds.',
  },
  'X-Total-Count-Capped': {
    type: 'string',
    enum: ['true'],
    description:
      'Sent when more items match than a page may reach (admin search: 1,000): X-Total-Count then says that number; narrow the search.',
  },
  Link: {
    type: 'string',
    maxLength: 4096,
    description: 'RFC 8288 links to the first, prev, next and last pages (other query parameters kept).',
  },
  'Retry-After': {
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: 86_400,
    description: 'Seconds to wait before trying again.',
  },
  'Usher-Second-Factor': {
    type: 'string',
    enum: ['totp'],
    description: 'The password was right and the account needs a code too: send `code`.',
  },
  'Usher-Second-Factor-Ticket': {
    type: 'string',
    minLength: 43,
    maxLength: 43,
    pattern: '^[A-Za-z0-9_-]{43}$',
    description:
      'Sent with `Usher-Second-Factor` by a sign-in whose method has no field for the code (a mail link or ' +
      'code): the ticket that POST /api/signin/second-factor finishes it with. Single-use, 5 minutes.',
  },
  'Usher-Redirect-To': {
    type: 'string',
    format: 'uri',
    maxLength: 2048,
    description:
      'Where the sign-in link was asked to send the browser afterwards (its `redirectTo`, checked when it was asked for).',
  },
} as const satisfies Record<string, HeaderSchema>;
export type HeaderName = keyof typeof HEADERS;

const headers = (names: readonly HeaderName[]) =>
  names.length === 0 ? {} : { headers: Object.fromEntries(names.map((n) => [n, HEADERS[n]])) };

/**
 * A success response: its schema, what it means and the headers it carries. The returned schema
 * is the one Fastify serialises with; `description` and `headers` are read only by the document.
 */
export function success<T extends TSchema>(schema: T, description: string, ...with_: HeaderName[]): T {
  return { ...schema, description, ...headers(with_) };
}

/**
 * The preValidation hook of a route whose JSON body is optional (a DELETE that may carry one): a
 * request without a body (no Content-Type, no length, as clients sent it before there was one) is
 * validated and handled as `{}`, where the body schema would refuse `undefined`. A body that is
 * sent is parsed and checked as usual. The document marks such a route's body as not required
 * (plugins/openapi.ts), which @fastify/swagger would otherwise always do.
 */
export const bodyOptional: preValidationHookHandler = (request, _reply, done) => {
  request.body ??= {};
  done();
};

/** An empty success (204). */
export function noContent(description: string, ...with_: HeaderName[]) {
  return Type.Null({ description, ...headers(with_) });
}

// ---------------------------------------------------------------------------------------------
// Named components

export interface Component<T extends TSchema = TSchema> {
  readonly id: string;
  readonly schema: T;
  /** A reference to the component, typed as the component's own shape. */
  readonly ref: TUnsafe<Static<T>>;
}

/** A shape with a name: registered once per app (app.ts), referenced by the routes that use it. */
export function component<T extends TSchema>(id: string, schema: T): Component<T> {
  return {
    id,
    schema: { ...schema, $id: id },
    ref: Type.Unsafe<Static<T>>({ $ref: `${id}#` }),
  };
}

/** The `$ref`s a route schema makes, to register exactly the components the document uses. */
export function referencedComponents(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) referencedComponents(item, into);
  } else if (schema !== null && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') into.add(value.replace(/#.*$/, ''));
      else referencedComponents(value, into);
    }
  }
  return into;
}

// ---------------------------------------------------------------------------------------------
// Failures: one named body per status, its code an enum of the codes Usher answers with there

/** The statuses a code is answered with: its own, and those it folds in (sign-in's). */
const statusesOf = (code: ErrorCode): readonly number[] => {
  const declared = servedErrorCodes().declaration(code);
  return [declared.status, ...(declared.alsoAt ?? [])];
};

/**
 * The codes answered with at a status, in alphabetical order: the document reads the same
 * whichever feature declares a code and in whatever order the features run.
 */
const codesAt = (status: number) =>
  servedErrorCodes()
    .codes()
    .filter((code) => statusesOf(code).includes(status))
    .sort();

const codeSchema = (status: number) =>
  Type.Unsafe<ErrorCode>({
    type: 'string',
    enum: codesAt(status),
    description: 'What went wrong, as a stable code; routes list the codes they give.',
  });

// Kept for the table they were made from: an app built with other features makes them anew.
let errorComponents = new Map<string, Component>();
let errorComponentsOf = servedErrorCodes();

/** The failure body of a status: `{error, message}`, or `{error}` alone on the documented endpoints. */
export function errorComponent(status: number, codeOnly: boolean): Component {
  const id = `${codeOnly ? 'CodeOnlyError' : 'Error'}${status}`;
  if (errorComponentsOf !== servedErrorCodes()) {
    errorComponents = new Map();
    errorComponentsOf = servedErrorCodes();
  }
  let found = errorComponents.get(id);
  if (!found) {
    const fields: Record<string, TSchema> = { error: codeSchema(status) };
    if (!codeOnly) fields.message = Type.String({ maxLength: MESSAGE_MAX });
    found = component(
      id,
      Type.Object(fields, {
        additionalProperties: false,
        description: codeOnly
          ? `A ${status} failure of a documented endpoint: the code alone (SPEC 7).`
          : `A ${status} failure: a stable code and a message for people.`,
      }),
    );
    errorComponents.set(id, found);
  }
  return found;
}

/** Every error component, for the app to register those its routes reference. */
export function errorComponentById(id: string): Component | undefined {
  const match = /^(CodeOnlyError|Error)(\d{3})$/.exec(id);
  return match ? errorComponent(Number(match[2]), match[1] === 'CodeOnlyError') : undefined;
}

/** A code, or a code at one of its statuses only (`['SIGNIN_FAILED', 429]`). */
export type Failing = ErrorCode | readonly [ErrorCode, number];

/**
 * Failures any route can give, so routes list only their own: a request without a Host (400), an
 * unexpected fault (500), a database that does not answer or a server shutting down (503).
 */
const EVERY_ROUTE: readonly ErrorCode[] = ['BAD_REQUEST', 'INTERNAL', 'UNAVAILABLE'];
/** Failures of any route that reads a JSON body. */
export const BODY_ERRORS = [
  'VALIDATION_FAILED',
  'UNSUPPORTED_MEDIA_TYPE',
  'PAYLOAD_TOO_LARGE',
] as const satisfies readonly ErrorCode[];

function byStatus(failing: readonly Failing[]): Map<number, ErrorCode[]> {
  const statuses = new Map<number, ErrorCode[]>();
  const add = (status: number, code: ErrorCode) => {
    const codes = statuses.get(status) ?? [];
    if (!codes.includes(code)) codes.push(code);
    statuses.set(status, codes);
  };
  for (const f of failing) {
    if (typeof f === 'string') for (const status of statusesOf(f)) add(status, f);
    else add(f[1], f[0]);
  }
  return new Map([...statuses].sort(([a], [b]) => a - b));
}

const RETRY_AFTER_SOMETIMES: HeaderSchema = {
  ...HEADERS['Retry-After'],
  description: 'Seconds to wait, when the server is busy rather than down.',
};

/**
 * The failure responses of a route, one per status, each referencing that status's named body and
 * listing the codes this route gives there. `codeOnly` for the documented endpoints' `{error}`.
 */
export function failures(
  failing: readonly Failing[],
  options: {
    codeOnly?: boolean;
    /** false when the route folds every failure into its own codes (sign-in). */
    everyRoute?: boolean;
    /** What a code means on this route (or at one status of it), where the general text would not say enough. */
    notes?: Partial<Record<ErrorCode, string | Partial<Record<number, string>>>>;
    /** Headers a status carries on this route besides Retry-After (429, 503). */
    headers?: Partial<Record<number, readonly HeaderName[]>>;
  } = {},
): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  const all = options.everyRoute === false ? failing : [...EVERY_ROUTE, ...failing];
  for (const [status, codes] of byStatus(all)) {
    const noteOf = (code: ErrorCode) => {
      const note = options.notes?.[code];
      return (typeof note === 'string' ? note : note?.[status]) ?? servedErrorCodes().declaration(code).when;
    };
    const list = codes.map((code) => `\`${code}\`: ${noteOf(code)}`);
    const responseHeaders: Record<string, HeaderSchema> = {};
    if (status === 429) responseHeaders['Retry-After'] = HEADERS['Retry-After'];
    if (status === 503) responseHeaders['Retry-After'] = RETRY_AFTER_SOMETIMES;
    for (const name of options.headers?.[status] ?? []) responseHeaders[name] = HEADERS[name];
    out[status] = Type.Unsafe({
      $ref: `${errorComponent(status, options.codeOnly ?? false).id}#`,
      description: list.join('\n\n'),
      ...(Object.keys(responseHeaders).length > 0 ? { headers: responseHeaders } : {}),
    });
  }
  return out;
}
