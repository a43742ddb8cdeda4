import { Type } from 'typebox';
import { ERROR_CODES, type ErrorCode } from '../shared/errors.ts';

/**
 * A 64-bit id. The domain carries it as a bigint and the serializer writes bigints as exact JSON
 * integers, so ids at or above 2^53 are neither rounded nor quoted.
 */
export const Id = Type.Unsafe<bigint>({
  type: 'integer',
  minimum: 1,
  description: 'A 64-bit integer, 1 to 2^63-1, written as an exact JSON integer.',
});

/** Failures every database-backed route can give. */
export const SERVER_ERRORS = ['UNAVAILABLE', 'INTERNAL'] as const satisfies readonly ErrorCode[];
/** Failures of any route that reads a JSON body. */
export const BODY_ERRORS = [
  'VALIDATION_FAILED',
  'UNSUPPORTED_MEDIA_TYPE',
  'PAYLOAD_TOO_LARGE',
] as const satisfies readonly ErrorCode[];

const codeList = (codes: readonly ErrorCode[]) =>
  codes.map((code) => `- \`${code}\` (${ERROR_CODES[code].status}): ${ERROR_CODES[code].when}`).join('\n');
const codeEnum = (codes: readonly ErrorCode[]) =>
  Type.Unsafe<string>({ type: 'string', enum: [...new Set(codes)], description: 'Error code' });

/**
 * The failure body of a route, `{error, message}`, listing the codes that route can answer with
 * (the OpenAPI document shows them per route).
 */
export function errorBody(...codes: ErrorCode[]) {
  return Type.Object(
    { error: codeEnum(codes), message: Type.String() },
    { additionalProperties: false, description: `Failure. Codes:\n${codeList(codes)}` },
  );
}

/** The documented endpoints' failure body, `{error}` alone, with the codes that route can answer with. */
export function codeOnlyErrorBody(...codes: ErrorCode[]) {
  return Type.Object(
    { error: codeEnum(codes) },
    { additionalProperties: false, description: `Failure (code only). Codes:\n${codeList(codes)}` },
  );
}
