import { createHash } from 'node:crypto';
/** A user as the rest of the code sees it: no password hash ever leaves the repository by this type. */
export interface User {
  readonly id: bigint;
  readonly email: string;
  readonly name: string;
  readonly createdAt: Date;
  /** The email was shown to reach its owner (a link from a mail to it was followed). */
  readonly emailVerified: boolean;
}

/** Trimmed and lower-cased: two emails are the same account when their keys are equal. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase();
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
