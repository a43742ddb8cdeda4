import { type Static, Type } from 'typebox';

/**
 * A 64-bit id. The domain carries it as a bigint and the serializer writes bigints as exact JSON
 * integers, so ids at or above 2^53 are neither rounded nor quoted.
 */
export const Id = Type.Unsafe<bigint>({
  type: 'integer',
  minimum: 1,
  description: 'A 64-bit integer, 1 to 2^63-1, written as an exact JSON integer.',
});

/** `{error}`: the documented endpoints' failure body (USER_NOT_FOUND, profile A's SIGNIN_FAILED). */
export const CodeOnlyError = Type.Object(
  { error: Type.String() },
  { additionalProperties: false, description: 'Failure: an error code only.' },
);

/** `{error, message}`: every failure outside the documented bodies, and profile B's SIGNIN_FAILED. */
export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'Error code, UPPER_SNAKE_CASE' }), message: Type.String() },
  { additionalProperties: false, description: 'Failure: an error code and a human-readable message.' },
);
export type ErrorBody = Static<typeof ErrorBody>;
