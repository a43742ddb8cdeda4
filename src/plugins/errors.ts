// The one error path: every failure, from Fastify, Ajv, a service or the database, becomes a
// Failure and is written by the route's renderer (documented endpoints have their own bodies).
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { describeBytes } from '../shared/body-limits.ts';
import { AppError, type ErrorCode, servedErrorCodes } from '../shared/errors.ts';
import type { App } from '../shared/fastify.ts';

export interface Failure {
  statusCode: number;
  code: ErrorCode;
  message: string;
  headers: Readonly<Record<string, string>>;
}

export interface Rendered {
  statusCode: number;
  body: object;
}

export type ErrorRenderer = (failure: Failure, request: FastifyRequest) => Rendered;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Writes this route's failures; the default is `{error, message}`. */
    renderError?: ErrorRenderer;
    /** The code for a path id that cannot name a row: such an id is a 404, never a 400. */
    notFoundCode?: ErrorCode;
    /** The route's own not-found failure, for a path id its schema refuses (the same body as an unknown id). */
    notFound?: () => AppError;
    /** false for routes that answer without the database (liveness). */
    usesDatabase?: boolean;
  }
}

export const renderWithMessage: ErrorRenderer = (f) => ({
  statusCode: f.statusCode,
  body: { error: f.code, message: f.message },
});

/** The documented endpoints' body (SPEC 7): the code alone. */
export const renderCodeOnly: ErrorRenderer = (f) => ({ statusCode: f.statusCode, body: { error: f.code } });

function failure(
  code: ErrorCode,
  message: string,
  statusCode: number = servedErrorCodes().declaration(code).status,
): Failure {
  return { statusCode, code, message, headers: {} };
}

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** Present because Ajv runs with `verbose`: lets a message quote the schema's own description. */
  parentSchema?: { description?: string };
}

/** Names the field at fault, in the words a client developer needs. */
function describeValidation(errors: AjvError[]): string {
  const e = errors[0];
  if (!e) return 'body: is invalid';
  const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const at = (field: string) => (path ? `${path}.${field}` : field);
  switch (e.keyword) {
    case 'required':
      return `${at(String(e.params.missingProperty))}: is required`;
    case 'additionalProperties':
      return `${at(String(e.params.additionalProperty))}: is not a known field`;
    case 'type': {
      const type = String(e.params.type);
      return path
        ? `${path}: must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`
        : 'body: must be a JSON object';
    }
    case 'maxLength':
      return `${path || 'body'}: must be at most ${String(e.params.limit)} characters`;
    default: {
      const rule = e.parentSchema?.description;
      return `${path || 'body'}: ${rule ? `must be ${rule}` : (e.message ?? 'is invalid')}`;
    }
  }
}

const FASTIFY_CODES: Record<string, (request: FastifyRequest) => Failure> = {
  // Each route has its own limit (shared/body-limits.ts); the message names this one.
  FST_ERR_CTP_BODY_TOO_LARGE: (request) =>
    failure(
      'PAYLOAD_TOO_LARGE',
      `body: larger than the ${describeBytes(request.routeOptions.bodyLimit)} this route accepts`,
    ),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    failure('UNSUPPORTED_MEDIA_TYPE', 'Content-Type: must be application/json'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => failure('VALIDATION_FAILED', 'body: must not be empty'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => failure('VALIDATION_FAILED', 'body: is not valid JSON'),
};

function fromAppError(error: AppError): Failure {
  return { statusCode: error.statusCode, code: error.code, message: error.message, headers: error.headers };
}

export function toFailure(error: FastifyError, request: FastifyRequest): Failure {
  if (error instanceof AppError) return fromAppError(error);
  if (error.validation) {
    if (error.validationContext === 'params') {
      const notFound = request.routeOptions.config.notFound?.();
      if (notFound) return fromAppError(notFound);
      const code = request.routeOptions.config.notFoundCode ?? 'NOT_FOUND';
      return failure(code, servedErrorCodes().declaration(code).when);
    }
    if (error.validationContext === 'querystring') {
      return failure(
        'INVALID_QUERY',
        describeValidation(error.validation as AjvError[]).replace(/^body: /, 'query: '),
      );
    }
    return failure('VALIDATION_FAILED', describeValidation(error.validation as AjvError[]));
  }
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known) return known(request);
  if (isDatabaseUnavailable(error))
    return failure('UNAVAILABLE', 'The database is not answering; try again shortly.');
  // Fastify's other client errors (malformed JSON, poisoned prototypes, bad framing) carry a 4xx.
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return failure(
      'VALIDATION_FAILED',
      error instanceof SyntaxError ? 'body: is not valid JSON' : 'request: cannot be read',
      400,
    );
  }
  return failure('INTERNAL', 'Something went wrong on our side.');
}

async function handleError(this: App, error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const f = toFailure(error, request);
  if (f.statusCode >= 500) {
    request.log.error({ err: error }, 'request failed');
  } else {
    request.log.info({ code: f.code, statusCode: f.statusCode }, 'request refused');
  }
  const render = request.routeOptions.config.renderError ?? renderWithMessage;
  const { statusCode, body } = render(f, request);
  return reply.code(statusCode).headers(f.headers).send(body);
}

/** Longest path segment the router accepts as a parameter; also Fastify's maxParamLength. */
export const MAX_SEGMENT_LENGTH = 200;

/**
 * Runs before routing (Fastify's rewriteUrl). A path segment that cannot be percent-decoded, or is
 * longer than any id, names nothing; it becomes "-" so that the router and the route's own error
 * path answer (GET /api/users/%zz is USER_NOT_FOUND like any other bad id) instead of Fastify's
 * built-in 400/414 bodies. Ordinary URLs return at the first check.
 */
export function neutraliseUnroutableSegments(url: string): string {
  if (url.length <= MAX_SEGMENT_LENGTH && !url.includes('%')) return url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q);
  const segments = path.split('/').map((segment) => {
    if (segment.length > MAX_SEGMENT_LENGTH) return '-';
    try {
      decodeURIComponent(segment);
      return segment;
    } catch {
      return '-';
    }
  });
  return segments.join('/') + query;
}

/** Fastify's framework errors (kept as a backstop: rewriting should leave none) in Usher's body. */
export function frameworkError(_error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  reply.code(404).send({ error: 'NOT_FOUND', message: 'No such route.' });
}

/** The one error path (and the not-found answer), for the whole app. */
export const errorsPlugin = fp(
  async (app) => {
    app.setErrorHandler(handleError);
    app.setNotFoundHandler((_request, reply) =>
      reply.code(404).send({ error: 'NOT_FOUND', message: 'No such route.' }),
    );
  },
  { name: 'usher-errors' },
);
