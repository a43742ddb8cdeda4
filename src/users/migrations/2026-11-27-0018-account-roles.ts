// Frozen once landed: every value this migration uses is written here, nothing comes from app code.
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';

type Dialect = 'sqlite' | 'postgres';

/** The name as admin search compares it (users/user.ts's nameKey, as it was when this landed). */
const nameKey = (name: string) => name.normalize('NFKC').toLowerCase();
const BATCH = 1000;

/**
 * Administration (issue 29): each account's role in Usher (`user`, `support`, `admin`), the
 * application's own roles (a JSON array of strings, carried in tokens), whether and why an admin
 * disabled it, when it last signed in (for support staff; written with each new session), and
 * its name folded for search in any letter case (`name_key`: neither store's SQL lower() folds
 * letters beyond ASCII under the column's collation, so it is folded by the application, like
 * `email_key`).
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
      await db.schema
        .alterTable('users')
        .addColumn('name_key', 'text', (col) => col.notNull().defaultTo(''))
        .execute();
      // Existing names folded in batches, in id order.
      const users = db as unknown as Kysely<{ users: { id: bigint; name: string; name_key: string } }>;
      for (let after = 0n; ; ) {
        const rows = await users
          .selectFrom('users')
          .select(['id', 'name'])
          .where('id', '>', after)
          .orderBy('id')
          .limit(BATCH)
          .execute();
        if (rows.length === 0) break;
        if (dialect === 'postgres') {
          const values = sql.join(rows.map((r) => sql`(${r.id}::bigint, ${nameKey(r.name)})`));
          await sql`update users set name_key = v.k from (values ${values}) as v(id, k) where users.id = v.id`.execute(
            db,
          );
        } else {
          for (const row of rows)
            await users
              .updateTable('users')
              .set({ name_key: nameKey(row.name) })
              .where('id', '=', row.id)
              .execute();
        }
        after = BigInt(rows.at(-1)!.id);
      }
      // The few staff accounts, found without reading every user (the last admin's check).
      await sql`create index users_staff on users (role, id) where role <> 'user'`.execute(db);
      await sql`create index users_disabled on users (id) where disabled_at is not null`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('users_disabled').execute();
      await db.schema.dropIndex('users_staff').execute();
      for (const column of ['name_key', 'last_signin_at', 'disabled_reason', 'disabled_at', 'roles', 'role'])
        await db.schema.alterTable('users').dropColumn(column).execute();
    },
  };
}
