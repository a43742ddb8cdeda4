// Migration 0013 (issue 26, point 2): a database made before it, with a user and their password
// hash in users.password_hash, is migrated by starting the app; the hash is then in
// password_credentials, users.password_hash is gone, and the user signs in with their password.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from '../../src/db/database.ts';
import { createMigrations } from '../../src/db/migrations/index.ts';
import { PasswordHasher } from '../../src/passwords/hasher.ts';
import { CHEAP_HASH, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, freshDatabaseUrl } from '../helpers/stores.ts';

const BEFORE = '2026-11-24-0012-registration-limits';
const EMAIL = 'Early@Example.com';
const PASSWORD = 'an early passphrase';
const UPDATED_AT = '2026-11-24T10:00:00.000Z';

describeEachStore('migration 0013: password hashes move to password_credentials', (store) => {
  let database: Database;
  let t: TestApp | undefined;
  let hash: string;
  let id: bigint;
  before(async () => {
    database = openTestDatabase(store);
    const migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => createMigrations(database.dialect) },
    });
    const { error } = await migrator.migrateTo(BEFORE);
    if (error) throw error;
    hash = await new PasswordHasher(CHEAP_HASH).hash(PASSWORD);
    // The users table as it was then, written as SQL: the app's types no longer have the column.
    const { rows } = await sql<{ id: bigint | number }>`insert into users
      (email, email_key, name, password_hash, created_at, updated_at)
      values (${EMAIL}, ${EMAIL.toLowerCase()}, 'Early', ${hash}, ${UPDATED_AT}, ${UPDATED_AT})
      returning id`.execute(database.db);
    id = BigInt(rows[0]!.id);
    // The app migrates at start, as a server upgraded in place does.
    t = await startApp(store, 'b');
  });
  after(async () => {
    await t?.close();
    await database.close();
  });

  test('the hash is in password_credentials, with the time of the user row as changed_at', async () => {
    const row = await database.db
      .selectFrom('password_credentials')
      .select(['hash', 'changed_at'])
      .where('user_id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.hash, hash);
    assert.equal(Number(row.changed_at), Date.parse(UPDATED_AT));
  });

  test('users.password_hash is gone', async () => {
    await assert.rejects(sql`select password_hash from users`.execute(database.db));
  });

  test('the user signs in with their password, and only with it', async () => {
    const right = await t!.post('/api/signin', { email: EMAIL, password: PASSWORD });
    assert.equal(right.statusCode, 200, right.body);
    assert.equal(BigInt(right.json().user.id), id);
    const wrong = await t!.post('/api/signin', { email: EMAIL, password: 'not the passphrase' });
    assert.equal(wrong.statusCode, 401);
  });
});

// SQLite runs a migration without a transaction around it: a process killed half-way through 0013
// leaves some of its steps done and the migration unrecorded. The next start must finish it.
describeEachStore('migration 0013 after a kill half-way (SQLite)', (store) => {
  for (const [stage, done] of [
    ['the table made and the hash copied', ['create', 'copy']],
    ['the hash copied and the column dropped', ['create', 'copy', 'drop']],
  ] as const) {
    test(`a start finds ${stage} and finishes: the user signs in`, async (t) => {
      if (store.kind !== 'sqlite') return t.skip('PostgreSQL runs each migration in a transaction');
      // A database of its own: the suite's is migrated by the other stage.
      const fresh = await freshDatabaseUrl('sqlite');
      const own = { kind: store.kind, url: fresh.url };
      const database = openTestDatabase(own);
      const steps: readonly string[] = done;
      let app: TestApp | undefined;
      try {
        const migrator = new Migrator({
          db: database.db,
          provider: { getMigrations: async () => createMigrations(database.dialect) },
        });
        const { error } = await migrator.migrateTo(BEFORE);
        if (error) throw error;
        const hash = await new PasswordHasher(CHEAP_HASH).hash(PASSWORD);
        await sql`insert into users (email, email_key, name, password_hash, created_at, updated_at)
          values (${EMAIL}, ${EMAIL.toLowerCase()}, 'Early', ${hash}, ${UPDATED_AT}, ${UPDATED_AT})`.execute(
          database.db,
        );
        if (steps.includes('create'))
          await sql`create table password_credentials (user_id integer primary key references users (id)
            on delete cascade, hash text not null, changed_at bigint not null)`.execute(database.db);
        if (steps.includes('copy'))
          await sql`insert into password_credentials select id, password_hash, 0 from users`.execute(
            database.db,
          );
        if (steps.includes('drop'))
          await sql`alter table users drop column password_hash`.execute(database.db);
        app = await startApp(own, 'b');
        const res = await app.post('/api/signin', { email: EMAIL, password: PASSWORD });
        assert.equal(res.statusCode, 200, res.body);
      } finally {
        await app?.close();
        await database.close();
        await fresh.drop();
      }
    });
  }
});
