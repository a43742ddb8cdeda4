import { normalizePassword, PASSWORD_INPUT_MAX } from '../auth/passwords.ts';
import { AppError } from '../shared/errors.ts';
import { isCommonPassword } from './common-passwords.ts';

export const EMAIL_MAX = 254;
export const NAME_MAX = 100;
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

// Deliberately loose: one @, something on each side, a dot in the domain, no spaces or control
// characters. Deliverability is the mail server's business, not a regex's.
const EMAIL_SHAPE = /^[^\s@\p{Cc}]+@[^\s@.\p{Cc}]+(\.[^\s@.\p{Cc}]+)+$/u;

const codePoints = (s: string) => [...s].length;

function invalid(field: string, rule: string): AppError {
  return new AppError('VALIDATION_FAILED', `${field}: ${rule}`);
}

export function checkEmail(raw: string): string {
  // Bounded before trimming and counting, so a megabyte of email costs nothing.
  if (raw.length > EMAIL_MAX * 4) throw invalid('email', `must be at most ${EMAIL_MAX} characters`);
  const email = raw.trim();
  if (email.length === 0) throw invalid('email', 'must not be empty');
  if (codePoints(email) > EMAIL_MAX) throw invalid('email', `must be at most ${EMAIL_MAX} characters`);
  if (!EMAIL_SHAPE.test(email)) throw invalid('email', 'must be an email address like name@example.com');
  return email;
}

/**
 * Text that is stored must not hold U+0000: PostgreSQL cannot store it in text columns, and no
 * name or description needs it. Refusing it everywhere keeps both stores alike.
 */
export function checkStorableText(field: string, value: string): string {
  if (value.includes('\u0000')) throw invalid(field, 'must not contain the NUL character (U+0000)');
  return value;
}

// C0 and C1 controls and DEL: a name is shown in pages, mails and terminals, where these move
// the cursor, ring bells or rewrite what was printed before.
const CONTROL = /\p{Cc}/u;

export function checkName(raw: string): string {
  if (raw.length > NAME_MAX * 4) throw invalid('name', `must be 1 to ${NAME_MAX} characters after trimming`);
  const name = checkStorableText('name', raw).trim();
  const length = codePoints(name);
  if (length < 1 || length > NAME_MAX)
    throw invalid('name', `must be 1 to ${NAME_MAX} characters after trimming`);
  if (CONTROL.test(name))
    throw invalid('name', 'must not contain control characters (U+0000-U+001F, U+007F-U+009F)');
  return name;
}

/** Length in code points after NFKC (NIST SP 800-63B: no composition rules), and not a common password. */
export async function checkPassword(raw: string): Promise<string> {
  // Refused before NFKC, which can grow a string 18-fold on the event loop.
  if (raw.length > PASSWORD_INPUT_MAX) {
    throw invalid('password', `must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  }
  const length = codePoints(normalizePassword(raw));
  if (length < PASSWORD_MIN || length > PASSWORD_MAX) {
    throw invalid('password', `must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  }
  if (await isCommonPassword(raw)) {
    throw invalid(
      'password',
      'is one of the most commonly used passwords, which attackers try first; choose another',
    );
  }
  return raw;
}
