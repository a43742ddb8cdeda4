import { createHash } from 'node:crypto';
import { domainToASCII } from 'node:url';
import type { AccountRole } from '../db/schema.ts';

export type { AccountRole } from '../db/schema.ts';
/** A user as the rest of the code sees it: no password hash ever leaves the repository by this type. */
export interface User {
  readonly id: bigint;
  readonly email: string;
  readonly name: string;
  readonly createdAt: Date;
  /** The email was shown to reach its owner (a link from a mail to it was followed). */
  readonly emailVerified: boolean;
  /** What the account may administer: `user` (nothing), `support` or `admin`. */
  readonly role: AccountRole;
  /** An admin disabled the account: no way of signing in admits it. */
  readonly disabled: boolean;
  /** The account's language: a canonical BCP 47 tag (`en`, `de-AT`), what its mail is written in. */
  readonly locale: string;
}

export const ACCOUNT_ROLES: readonly AccountRole[] = ['user', 'support', 'admin'];

/** Whether `role` may do what `needed` may (admin ⊃ support ⊃ user). */
export function roleAtLeast(role: AccountRole, needed: AccountRole): boolean {
  return ACCOUNT_ROLES.indexOf(role) >= ACCOUNT_ROLES.indexOf(needed);
}

/** Printable ASCII and nothing else: the case where the key is the address lower-cased. */
const ASCII = /^[\x21-\x7e]*$/;

/**
 * The one identity of an email (decision 352): two emails are the same account when their keys
 * are equal, wherever an email is compared (registration, sign-in, provider linking, imports,
 * invitations, throttles). Trimmed, compatibility-normalised (NFKC), lower-cased and normalised
 * again, so that look-alikes a mailer would not tell apart from their ASCII letters (U+212A
 * KELVIN SIGN, fullwidth forms, ligatures) are one key; a domain with letters beyond ASCII in its
 * IDNA ASCII form, so `exämple.com` and `xn--exmple-cua.com` are one. An ASCII domain is kept as
 * it is lower-cased: IDNA processing would also decode `%41` into `a`, which a mailer does not.
 */
export function emailKey(email: string): string {
  const trimmed = email.trim();
  if (ASCII.test(trimmed)) return trimmed.toLowerCase();
  const folded = trimmed.normalize('NFKC').toLowerCase().normalize('NFKC');
  const at = folded.lastIndexOf('@');
  if (at < 0) return folded;
  const domain = folded.slice(at + 1);
  if (ASCII.test(domain) || domain.includes('%')) return folded;
  // An empty answer is a domain IDNA refuses: it stays as folded, still one key for its forms.
  const ascii = domainToASCII(domain);
  return ascii === '' ? folded : `${folded.slice(0, at)}@${ascii}`;
}

/**
 * An email as Usher stores a new or changed one: trimmed and compatibility-normalised (NFKC), so
 * that mail goes to the address that is compared (decision 353): a reset asked for `kane@` is
 * mailed to `Kane@`, never to `\u212Aane@`. Letter case is kept, as the contract shows an email.
 */
export function emailForm(email: string): string {
  return email.trim().normalize('NFKC');
}

/**
 * What saving `submitted` (checkEmail's form) as an account's email writes, against the address
 * and the key stored (decision 356). The stored address resubmitted, in any form NFKC makes one,
 * is no change: an account migration 0028 kept apart holds an old key, and its own address under
 * today's key is another account's, so comparing keys would make every save of its profile a
 * change of address (409 EMAIL_TAKEN). `emailKey` is set only when the key really changes.
 */
export function savedEmail(
  stored: { email: string; emailKey: string },
  submitted: string,
): { email: string; emailKey: string | undefined } {
  if (submitted === emailForm(stored.email)) return { email: stored.email, emailKey: undefined };
  const key = emailKey(submitted);
  return { email: submitted, emailKey: key === stored.emailKey ? undefined : key };
}

/** A name as admin search compares it: compatibility-normalised and lower-cased, any script. */
export function nameKey(name: string): string {
  return name.normalize('NFKC').toLowerCase();
}

/**
 * The account as the sign-in throttle and its known devices store it: a fixed-size digest of the
 * email key, whatever length of email a client sent and whether or not an account has it.
 */
export function accountDigest(accountKey: string): string {
  return createHash('sha256').update(accountKey).digest('hex');
}

export const USER_SORT_KEYS = ['id', 'name', 'email', 'createdAt'] as const;
export type UserSortKey = (typeof USER_SORT_KEYS)[number];
/** Orders whose pages are found through user_counts at any depth; the others stop at MAX_PAGE_DEPTH. */
export const USER_DEEP_SORTS: readonly UserSortKey[] = ['id'];

/** The stored `roles` column: written only as a JSON array of strings (admin/). */
export function parseRoles(stored: string): string[] {
  const parsed: unknown = JSON.parse(stored);
  return Array.isArray(parsed) ? parsed.filter((r): r is string => typeof r === 'string') : [];
}
