import { AppError } from './errors.ts';

/** Length as a person counts characters: code points, not UTF-16 units. */
export const codePoints = (s: string) => [...s].length;

/** A 400 VALIDATION_FAILED whose message names the field first, as every rule's message does. */
export function invalid(field: string, rule: string): AppError {
  return new AppError('VALIDATION_FAILED', `${field}: ${rule}`);
}

/**
 * Text that is stored must not hold U+0000: PostgreSQL cannot store it in text columns, and no
 * name or description needs it. Refusing it everywhere keeps both stores alike.
 */
export function checkStorableText(field: string, value: string): string {
  if (value.includes('\u0000')) throw invalid(field, 'must not contain the NUL character (U+0000)');
  return value;
}
