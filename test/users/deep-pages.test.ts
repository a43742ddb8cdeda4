// Pages of GET /api/users in id order are found through per-range counts kept by triggers
// (src/db/migrations/...-0004-user-counts.ts), not by skipping rows. These tests compare every
// page with what plain LIMIT/OFFSET returns, over ids that span several ranges with gaps, rows
// that existed before the migration, bulk and single inserts, and bulk and API deletes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from '../../src/db/database.ts';
import { schemaMigrations } from '../../src/features.ts';
import { asUser, profileApps, register, signIn } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** `beforeCredentials`: the users table as it was before migration 0013 (a password_hash column). */
async function insertUsers(database: Database, ids: number[], beforeCredentials = false): Promise<void> {
  const now = new Date().toISOString();
  for (let i = 0; i < ids.length; i += 500) {
    await database.db
      .insertInto('users')
      .values(
        ids.slice(i, i + 500).map((id) => ({
          id: BigInt(id),
          email: `seeded${id}@example.com`,
          email_key: `seeded${id}@example.com`,
          name: `Seeded ${id}`,
          ...(beforeCredentials ? { password_hash: 'not-a-usable-hash' } : {}),
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
  }
}

describeEachStore('GET /api/users in id order, across ranges of ids', (store) => {
  let database: Database;
  before(async () => {
    database = openTestDatabase(store);
    const migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => schemaMigrations()(database.dialect) },
    });
    // Users stored before the counts existed: the migration must count them.
    await migrator.migrateTo('2026-11-22-0003-signin-failures');
    await insertUsers(database, range(1, 1500), true);
    await migrator.migrateToLatest();
    // Bulk inserts reaching into later ranges, with whole ranges empty, and one single insert.
    await insertUsers(database, [
      ...range(1501, 2600),
      ...range(4000, 4100),
      ...range(9000, 9050),
      ...range(65_530, 65_545), // across the boundary of two wide ranges
      ...range(200_000, 200_010),
    ]);
    await insertUsers(database, [3000]);
    await database.db
      .deleteFrom('users')
      .where(sql<number>`id % 7`, '=', 0)
      .where('id', '<', 2100n)
      .execute();
    if (database.dialect === 'postgres') {
      // Explicit ids do not move the identity sequence; registrations must continue after them.
      await sql`select setval(pg_get_serial_sequence('users', 'id'), (select max(id) from users))`.execute(
        database.db,
      );
    }
  });
  after(() => database.close());
  const { b } = profileApps(store);

  async function expected(size: number, page: number, descending: boolean) {
    const rows = await database.db
      .selectFrom('users')
      .select('id')
      .orderBy('id', descending ? 'desc' : 'asc')
      .limit(size)
      .offset((page - 1) * size)
      .execute();
    return rows.map((r) => Number(r.id));
  }
  async function total() {
    const row = await database.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
  async function assertEveryPage(size: number) {
    const n = await total();
    for (const descending of [false, true]) {
      for (let page = 1; page <= Math.ceil(n / size) + 1; page++) {
        const res = await b.get(`/api/users?size=${size}&page=${page}${descending ? '&sort=-id' : ''}`);
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['x-total-count'], String(n));
        assert.deepEqual(
          res.json().map((u: { id: number }) => u.id),
          await expected(size, page, descending),
          `size ${size}, page ${page}${descending ? ', descending' : ''}`,
        );
      }
    }
  }

  test('every page of 100, ascending and descending, is the page LIMIT/OFFSET gives', async () => {
    await assertEveryPage(100);
  });

  test('pages of 20 and 7 are exact too, including those that straddle two ranges', async () => {
    await assertEveryPage(20);
    await assertEveryPage(7);
  });

  test('X-Total-Count and the pages follow registrations and account deletions', async () => {
    const before = await total();
    const user = await register(b);
    const other = await register(b);
    assert.equal((await b.get('/api/users?size=1')).headers['x-total-count'], String(before + 2));
    const token = await signIn(b, user);
    assert.equal((await asUser(b, token).delete(`/api/users/${user.id}`)).statusCode, 204);
    assert.equal((await b.get('/api/users?size=1')).headers['x-total-count'], String(before + 1));
    const last = (await b.get('/api/users?size=1&sort=-id')).json();
    assert.equal(BigInt(last[0].id), other.id);
    await assertEveryPage(100);
  });

  test('a page past the end is empty and still carries the total', async () => {
    const res = await b.get('/api/users?size=100&page=999999');
    assert.deepEqual(res.json(), []);
    assert.equal(res.headers['x-total-count'], String(await total()));
  });
});
