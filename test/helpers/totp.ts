// TOTP codes computed by the tests themselves (RFC 6238 with SHA-1, written out here so that the
// tests do not trust the library the app uses), from the secret the API hands out.
import { createHmac } from 'node:crypto';

export const STEP_MS = 30_000;

export function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of text.replace(/=+$/, '')) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(Number.parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

/** RFC 6238 with SHA-1, written out here so the test does not trust the library the app uses. */
export function hotp(key: Buffer, counter: number, digits = 6): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0xf;
  const value = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(value % 10 ** digits).padStart(digits, '0');
}
export const totpAt = (secret: string, ms: number) => hotp(base32Decode(secret), Math.floor(ms / STEP_MS));
/** A six-digit code that is none of the codes within one step of `ms`. */
export function wrongCodeAt(secret: string, ms: number): string {
  const near = new Set([-1, 0, 1].map((d) => totpAt(secret, ms + d * STEP_MS)));
  for (let n = 0; ; n++) {
    const code = String(n).padStart(6, '0');
    if (!near.has(code)) return code;
  }
}
