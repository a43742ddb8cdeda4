// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * The audit log (issue 30) records every account event in audit_events (issue 29's table): the
 * admin API filters it by type, newest first, so an index leads with the type.
 */
export function createAuditTypeIndex(_dialect: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('audit_events_type').on('audit_events').columns(['type', 'id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('audit_events_type').execute();
    },
  };
}
