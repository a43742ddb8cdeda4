import { createHash } from 'node:crypto';
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

/** Trimmed and lower-cased: two emails are the same account when their keys are equal. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase();
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
