import { canonicalLocale, LOCALE_MAX } from '../shared/locale.ts';
import { checkStorableText, codePoints, invalid } from '../shared/text.ts';
import { emailForm } from './user.ts';

export const EMAIL_MAX = 254;
export const NAME_MAX = 100;

// Deliberately loose about what mail servers accept (deliverability is theirs to judge, not a
// regex's), strict about what a mailer would read as something else: an address is stored only
// in the form it is delivered to. Each side of the @ is a dot-atom (RFC 5322 3.2.3): runs of
// atext joined by single dots, any character beyond ASCII allowed (RFC 6532) but spaces,
// controls and format characters. nodemailer reads `x<evil@evil.example>` as the name "x" and
// the address evil@evil.example, `a,b@example.com` as two addresses, `a(b)c@…` as a comment,
// and quotes a local part with a leading, trailing or doubled dot: each would be stored as one
// address and mailed to another (or to the same one, written otherwise), so each is refused.
const ATOM = String.raw`[^\s@."(),:;<>[\]\\\p{Cc}\p{Cf}\p{Cs}]+`;
const EMAIL_SHAPE = new RegExp(`^${ATOM}(\\.${ATOM})*@${ATOM}(\\.${ATOM})+$`, 'u');
/**
 * Control (Cc), format (Cf: zero-width spaces and joiners, the soft hyphen, bidi embeddings,
 * overrides and isolates, the byte-order mark) and lone surrogate (Cs) characters: invisible or
 * reordering, they make an address that looks like another's.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}]/u;
/** RFC 5322's specials other than @ and the dot: what turns an address into a display name, a list or a comment. */
const ADDRESS_SYNTAX = /["(),:;<>[\]\\]/;

export function checkEmail(raw: string): string {
  // Bounded before trimming and counting, so a megabyte of email costs nothing.
  if (raw.length > EMAIL_MAX * 4) throw invalid('email', `must be at most ${EMAIL_MAX} characters`);
  // Normalised before any rule: NFKC makes `＠`, `．` and `＜` of fullwidth forms into the ASCII
  // syntax each rule below looks for, and the stored address is this form (decision 353).
  const email = emailForm(raw);
  if (email.length === 0) throw invalid('email', 'must not be empty');
  if (codePoints(email) > EMAIL_MAX) throw invalid('email', `must be at most ${EMAIL_MAX} characters`);
  if (INVISIBLE.test(email))
    throw invalid(
      'email',
      'must not contain control or invisible formatting characters (zero-width, soft hyphen, bidirectional controls)',
    );
  if (ADDRESS_SYNTAX.test(email))
    throw invalid(
      'email',
      'must be the address alone, like name@example.com: no display name, quotes, brackets, parentheses, commas, colons, semicolons or backslashes',
    );
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

/** A language as an account keeps it: a BCP 47 tag, stored in its canonical form (`DE-at` → `de-AT`). */
export function checkLocale(raw: string): string {
  const locale = raw.length > LOCALE_MAX * 4 ? undefined : canonicalLocale(raw.trim());
  if (locale === undefined)
    throw invalid(
      'locale',
      `must be a BCP 47 language tag of at most ${LOCALE_MAX} characters, like en, de-AT or pt-BR`,
    );
  return locale;
}
