import { createHash, randomBytes } from 'node:crypto';

/** 256 bits from the CSPRNG, base64url: what goes into the link, and nowhere else. */
export function newAccountToken(): { token: string; tokenHash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, tokenHash: hashAccountToken(token) };
}

/** Only this digest is stored, so a copy of the database holds no usable link. */
export function hashAccountToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A made-up or mangled token cannot be one of ours; checking its shape first costs nothing. */
export function isTokenShaped(token: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(token);
}
