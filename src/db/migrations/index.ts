import type { Migration } from 'kysely/migration';
import { createUsers } from './2026-11-22-0001-create-users.ts';
import { createSessionsProductsReviews } from './2026-11-22-0002-sessions-products-reviews.ts';
import { createSigninFailures } from './2026-11-22-0003-signin-failures.ts';
import { createUserCounts } from './2026-11-22-0004-user-counts.ts';
import { createSigninAttempts } from './2026-11-23-0005-signin-attempts.ts';
import { createAccountLifecycle } from './2026-11-23-0006-account-lifecycle.ts';
import { createPasskeys } from './2026-11-23-0008-passkeys.ts';
import { createTotp } from './2026-11-23-0009-totp.ts';
import { createCatalogLimits } from './2026-11-24-0010-catalog-limits.ts';
import { createSigninDevices } from './2026-11-24-0011-signin-devices.ts';
import { createRegistrationLimits } from './2026-11-24-0012-registration-limits.ts';
import { createPasswordCredentials } from './2026-11-25-0013-password-credentials.ts';

/**
 * Every migration, keyed by a date-prefixed name that sorts in the order they must run. Each gets
 * the dialect so that differences (identity keys, timestamp types) are explicit, not guessed.
 */
export function createMigrations(dialect: 'sqlite' | 'postgres'): Record<string, Migration> {
  return {
    '2026-11-22-0001-create-users': createUsers(dialect),
    '2026-11-22-0002-sessions-products-reviews': createSessionsProductsReviews(dialect),
    '2026-11-22-0003-signin-failures': createSigninFailures(dialect),
    '2026-11-22-0004-user-counts': createUserCounts(dialect),
    '2026-11-23-0005-signin-attempts': createSigninAttempts(dialect),
    '2026-11-23-0006-account-lifecycle': createAccountLifecycle(dialect),
    '2026-11-23-0008-passkeys': createPasskeys(dialect),
    '2026-11-23-0009-totp': createTotp(dialect),
    '2026-11-24-0010-catalog-limits': createCatalogLimits(dialect),
    '2026-11-24-0011-signin-devices': createSigninDevices(dialect),
    '2026-11-24-0012-registration-limits': createRegistrationLimits(dialect),
    '2026-11-25-0013-password-credentials': createPasswordCredentials(dialect),
  };
}
