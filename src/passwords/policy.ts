import { codePoints, invalid } from '../shared/text.ts';
import { isCommonPassword } from './common.ts';
import { normalizePassword, PASSWORD_INPUT_MAX } from './hasher.ts';

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

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
