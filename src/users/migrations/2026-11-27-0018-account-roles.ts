// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/**
 * Administration (issue 29): each account's role in Usher (`user`, `support`, `admin`), the
 * application's own roles (a JSON array of strings, carried in tokens), whether and why an admin
 * disabled it, and when it last signed in (for support staff; written with each new session).
 */
export function addAccountRoles(dialect: Dialect): Migration {
  const time = dialect === 'postgres' ? 'timestamptz' : 'text';
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('users')
        .addColumn('role', 'text', (col) =>
          col.notNull().defaultTo('user').check(sql`role in ('user', 'support', 'admin')`),
        )
        .execute();
      await db.schema
        .alterTable('users')
        .addColumn('roles', 'text', (col) => col.notNull().defaultTo('[]'))
        .execute();
      await db.schema.alterTable('users').addColumn('disabled_at', time).execute();
      await db.schema.alterTable('users').addColumn('disabled_reason', 'text').execute();
      await db.schema.alterTable('users').addColumn('last_signin_at', time).execute();
      // The few staff accounts, found without reading every user (the last admin's check).
      await sql`create index users_staff on users (role, id) where role <> 'user'`.execute(db);
      await sql`create index users_disabled on users (id) where disabled_at is not null`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('users_disabled').execute();
      await db.schema.dropIndex('users_staff').execute();
      for (const column of ['last_signin_at', 'disabled_reason', 'disabled_at', 'roles', 'role'])
        await db.schema.alterTable('users').dropColumn(column).execute();
    },
  };
}
