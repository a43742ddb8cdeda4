import { checkStorableText, codePoints, invalid } from '../shared/text.ts';

export const EMAIL_MAX = 254;
export const NAME_MAX = 100;

// Deliberately loose: one @, something on each side, a dot in the domain, no spaces or control
// characters. Deliverability is the mail server's business, not a regex's.
const EMAIL_SHAPE = /^[^\s@\p{Cc}]+@[^\s@.\p{Cc}]+(\.[^\s@.\p{Cc}]+)+$/u;

export function checkEmail(raw: string): string {
  // Bounded before trimming and counting, so a megabyte of email costs nothing.
  if (raw.length > EMAIL_MAX * 4) throw invalid('email', `must be at most ${EMAIL_MAX} characters`);
  const email = raw.trim();
  if (email.length === 0) throw invalid('email', 'must not be empty');
  if (codePoints(email) > EMAIL_MAX) throw invalid('email', `must be at most ${EMAIL_MAX} characters`);
  if (!EMAIL_SHAPE.test(email)) throw invalid('email', 'must be an email address like name@example.com');
  return email;
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
  // Anywhere in what was sent, before trimming too: a name is one line of text, not a layout.
  if (CONTROL.test(raw))
    throw invalid('name', 'must not contain control characters (U+0000-U+001F, U+007F-U+009F)');
  return name;
}
