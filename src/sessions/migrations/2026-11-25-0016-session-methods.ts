// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * How each session was signed in to (issue 28): RFC 8176 method references, space-separated
 * (`pwd otp mfa`), so that an app signing in through Usher's OpenID Connect provider is told the
 * truth in `amr`. Null for sessions from before this column, which claim nothing.
 */
export function addSessionMethods(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('sessions').addColumn('amr', 'text').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('sessions').dropColumn('amr').execute();
    },
  };
}
