// How much body each route reads (Fastify's bodyLimit, enforced while the body arrives: a
// Content-Length over it is refused before a byte is read). Over it: 413, in the route's shape.
// Every route reads `small` unless it declares more (app.ts sets it as the default), so a new route
// gets the small limit until someone decides it needs more. Sized for the largest body the route
// can accept with every character written as a \uXXXX escape (6 bytes a UTF-16 unit), with room to
// spare: docs/decisions.md, 155.

const KIB = 1024;

export const BODY_LIMITS = {
  /**
   * Credentials, a token, a code, a user object: sign-in (a password of at most 4096 UTF-16 units
   * and an email of at most 1016, about 30 KB fully escaped), registration, /rest, the reset and
   * verification links, TOTP, passkey sign-in (a WebAuthn assertion is 1-2 KiB), and every route
   * that takes no body.
   */
  small: 32 * KIB,
  /** Two passwords (an account change with `currentPassword`), or a passkey with its attestation. */
  account: 64 * KIB,
  /** A product or a review: up to 5,200 characters of text, about 62 KB fully escaped. */
  text: 128 * KIB,
} as const;

/**
 * The deepest JSON any route reads, counted in arrays and objects: a passkey credential is 3 to 5
 * levels, every other body 1 or 2. Deeper bodies are refused before JSON.parse builds anything
 * (plugins/json-body.ts): docs/decisions.md, 156.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * The most arrays and objects any route reads in one body: a passkey credential has about ten, a
 * user object or a product one. A 128 KiB body of `[],` would make 43,000 (decision 156).
 */
export const MAX_JSON_CONTAINERS = 1000;

/** "32 KiB": how a limit is written in messages. */
export const describeBytes = (bytes: number): string =>
  bytes % (1024 * KIB) === 0 ? `${bytes / (1024 * KIB)} MiB` : `${Math.ceil(bytes / KIB)} KiB`;
