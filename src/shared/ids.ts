import { randomBytes } from 'node:crypto';
import type { AppError } from './errors.ts';

const MAX_ID = 2n ** 63n - 1n;

/** Decimal digits from 1 to 2^63-1, nothing else (no sign, exponent, hex or leading zero). */
export const ID_PATTERN = '^[1-9][0-9]{0,18}$';
const ID_REGEX = new RegExp(ID_PATTERN);

/** Parses a path id; undefined for anything that cannot name a row. */
export function parseId(raw: string): bigint | undefined {
  if (!ID_REGEX.test(raw)) return undefined;
  // Up to 15 digits a Number holds the id exactly, and converting it is cheaper than BigInt's
  // own parse of the text (measured on the user lookup, docs/benchmarks.md).
  const id = raw.length <= 15 ? BigInt(Number(raw)) : BigInt(raw);
  return id <= MAX_ID ? id : undefined;
}

/** Parses a path id at the edge: one that cannot name a row is that route's not-found answer. */
export function requireId(raw: string, notFound: () => AppError): bigint {
  const id = parseId(raw);
  if (id === undefined) throw notFound();
  return id;
}

/**
 * A random id in base64url that does not start with `-`: one that did would read as an option
 * where an operator pastes it into a command line (`usher clients remove -Awo…`).
 */
export function randomTextId(bytes: number): string {
  for (;;) {
    const id = randomBytes(bytes).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * A sign-in provider's id: the OAUTH_X_ settings' X (oauth/settings.ts), the routes' `{provider}`
 * and a linked identity's `provider` (users/routes.ts). Here, not in oauth/, because users/ shows
 * it and oauth/ imports users/.
 */
export const PROVIDER_ID = /^[a-z0-9-]{1,32}$/;
