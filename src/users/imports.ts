// The rules of one line of a users import (CLI `users import`, POST /api/admin/users/import):
// the registration rules for email and name, and a password as plain text (hashed by Usher) or
// as a hash another system made (`passwordHash`: passwords/imported.ts), with `emailVerified`
// and `createdAt` from that system. Every line is checked before any is imported; a refusal
// names the field first and never repeats a password or a hash.
import { checkPassword, parseImportedHash } from '../passwords/index.ts';
import type { NewPassword } from '../passwords/service.ts';
import { AppError } from '../shared/errors.ts';
import { invalid } from '../shared/text.ts';
import { checkEmail, checkName } from './rules.ts';
import type { UsersService } from './service.ts';
import { emailKey } from './user.ts';

/** The fields a line may have; any other is ignored, unless it looks like a misspelt one of these. */
export const IMPORT_FIELDS = [
  'email',
  'name',
  'password',
  'passwordHash',
  'emailVerified',
  'createdAt',
] as const;
export type ImportField = (typeof IMPORT_FIELDS)[number];

/** One line as read: its fields, unchecked (absent fields are undefined; JSON null counts as absent). */
export type ImportRow = { line: number } & { [F in ImportField]: unknown };

/** A line that passed the rules. */
export interface CheckedImport {
  line: number;
  email: string;
  emailKey: string;
  name: string;
  /** A password to hash, a hash to keep, or none (an account without a password). */
  secret: { password: string } | { hash: string } | undefined;
  emailVerified: boolean;
  createdAt: Date | undefined;
}

/** A checked line with its password ready to store (hashed by Usher, or the imported hash). */
export interface ImportAccount extends Omit<CheckedImport, 'secret'> {
  password: NewPassword | undefined;
}

/** What a line did: imported, or skipped (its email already had an account, or came on an earlier line). */
export type ImportResult = 'imported' | 'skipped';

/** A line refused, with why (the field first). */
export interface ImportRefusal {
  line: number;
  reason: string;
}

const folded = (key: string) => key.toLowerCase().replace(/[\s_-]/g, '');
const FOLDED = new Map(IMPORT_FIELDS.map((field) => [folded(field), field]));

/**
 * The row of a JSON object. A key that folds (case, `_`, `-`) to a field's name without being it
 * (`password_hash`, `email_verified`) is refused rather than ignored: ignored, it would import an
 * account without its password, or unverified.
 */
export function rowOfObject(line: number, value: Record<string, unknown>): ImportRow {
  for (const key of Object.keys(value)) {
    const field = FOLDED.get(folded(key));
    if (field !== undefined && field !== key)
      throw invalid(key.slice(0, 40), `is not a field of an import line; the field is ${field}`);
  }
  const present = (field: ImportField) => (value[field] === null ? undefined : value[field]);
  return {
    line,
    email: present('email'),
    name: present('name'),
    password: present('password'),
    passwordHash: present('passwordHash'),
    emailVerified: present('emailVerified'),
    createdAt: present('createdAt'),
  };
}

/** RFC 3339 date-time with a zone (Z or an offset), as exports write `created_at`. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
/** How far ahead of this server's clock a createdAt may be (another server's clock). */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

function checkCreatedAt(value: unknown, now: number): Date {
  if (typeof value !== 'string' || !DATE_TIME.test(value))
    throw invalid('createdAt', 'must be a date and time with its zone, like 2024-05-01T12:00:00Z');
  const at = new Date(value.replace(' ', 'T'));
  if (Number.isNaN(at.getTime()))
    throw invalid('createdAt', 'must be a date and time with its zone, like 2024-05-01T12:00:00Z');
  if (at.getTime() < 0) throw invalid('createdAt', 'must be in 1970 or later');
  if (at.getTime() > now + CLOCK_SKEW_MS) throw invalid('createdAt', 'must not be in the future');
  return at;
}

/**
 * Checks one line by the rules above; throws VALIDATION_FAILED naming the field. A plain
 * password is held to the registration rules (length, not a common one); a hash must be a format
 * Usher verifies, with parameters within its bounds.
 */
export async function checkImportRow(row: ImportRow, now: number): Promise<CheckedImport> {
  if (typeof row.email !== 'string' || typeof row.name !== 'string') {
    throw new AppError('VALIDATION_FAILED', 'email and name must both be present as text');
  }
  const email = checkEmail(row.email);
  const name = checkName(row.name);
  if (row.password !== undefined && row.passwordHash !== undefined)
    throw invalid('passwordHash', 'cannot come with password on the same line: give one or the other');
  let secret: CheckedImport['secret'];
  if (row.password !== undefined) {
    // Present, it must be text and pass the password rules: an empty or mistyped value is
    // refused, not taken as "none".
    if (typeof row.password !== 'string') throw invalid('password', 'must be text when present');
    secret = { password: await checkPassword(row.password) };
  } else if (row.passwordHash !== undefined) {
    if (typeof row.passwordHash !== 'string') throw invalid('passwordHash', 'must be text when present');
    const parsed = parseImportedHash(row.passwordHash);
    if (!parsed.ok) throw invalid('passwordHash', parsed.reason);
    secret = { hash: row.passwordHash };
  }
  if (row.emailVerified !== undefined && typeof row.emailVerified !== 'boolean')
    throw invalid('emailVerified', 'must be true or false');
  return {
    line: row.line,
    email,
    emailKey: emailKey(email),
    name,
    secret,
    emailVerified: row.emailVerified === true,
    createdAt: row.createdAt === undefined ? undefined : checkCreatedAt(row.createdAt, now),
  };
}

/** The refusal of a row that broke a rule; anything else (a database failure) is thrown on. */
export function refusalOf(line: number, error: unknown): ImportRefusal {
  if (error instanceof AppError && error.code === 'VALIDATION_FAILED') return { line, reason: error.message };
  throw error;
}

/**
 * The lines' accounts with their passwords ready (UsersService.prepareImport), in order, at most
 * `limit` at a time: plain passwords take a hash slot each, so HASH_CONCURRENCY (and a couple
 * more, to keep the slots busy while others wait) is as many as can run.
 */
export async function prepareImports(
  users: Pick<UsersService, 'prepareImport'>,
  rows: readonly CheckedImport[],
  limit: number,
  onEach: () => void = () => {},
): Promise<ImportAccount[]> {
  const out: ImportAccount[] = new Array(rows.length);
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const i = next++;
      out[i] = await users.prepareImport(rows[i]!);
      onEach();
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), rows.length) }, worker));
  return out;
}
