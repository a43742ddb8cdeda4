// X-Total-Count of products and of a product's reviews comes from counts that triggers keep in
// the same transaction as each insert and delete (migration 0010), and pages of products in id
// order are found through per-range counts. These tests check both against plain COUNT and
// LIMIT/OFFSET: rows that existed before the migration, creations and deletions through the API,
// cascades from a deleted product or user, bulk inserts and deletes in plain SQL, ids across
// ranges with gaps.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Insertable, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from '../../src/db/database.ts';
import type { UsersTable } from '../../src/db/schema.ts';
import { schemaMigrations } from '../../src/features.ts';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function insertProducts(database: Database, ownerId: bigint, ids: number[]): Promise<void> {
  const now = new Date().toISOString();
  for (let i = 0; i < ids.length; i += 500) {
    await database.db
      .insertInto('products')
      .values(
        ids.slice(i, i + 500).map((id) => ({
          id: BigInt(id),
          name: `Seeded ${id}`,
          description: '',
          price: id,
          owner_id: ownerId,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
  }
}

async function insertReviews(database: Database, productId: bigint, authorId: bigint, n: number) {
  const now = new Date().toISOString();
  await database.db
    .insertInto('reviews')
    .values(
      range(1, n).map((i) => ({
        product_id: productId,
        author_id: authorId,
        rating: 1 + (i % 5),
        text: '',
        written_at: now,
        updated_at: now,
      })),
    )
    .execute();
}

describeEachStore('catalog counts kept by triggers', (store) => {
  let database: Database;
  let t: TestApp;
  let owner: bigint;
  before(async () => {
    database = openTestDatabase(store);
    const migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => schemaMigrations()(database.dialect) },
    });
    // Products and reviews stored before the counts existed: the migration must count them.
    await migrator.migrateTo('2026-11-23-0009-totp');
    const now = new Date().toISOString();
    const row = await database.db
      .insertInto('users')
      // The users table as it was before migration 0013 moved the hash to password_credentials.
      .values({
        email: 'seeder@example.com',
        email_key: 'seeder@example.com',
        name: 'Seeder',
        password_hash: 'not-a-usable-hash',
        created_at: now,
        updated_at: now,
      } as Insertable<UsersTable>)
      .returning('id')
      .executeTakeFirstOrThrow();
    owner = row.id;
    await insertProducts(database, owner, range(1, 1500));
    await insertReviews(database, 1n, owner, 40);
    await migrator.migrateToLatest();
    // Bulk inserts reaching into later ranges, with whole ranges empty, and a bulk delete.
    await insertProducts(database, owner, [
      ...range(1501, 2600),
      ...range(9000, 9050),
      ...range(65_530, 65_545), // across the boundary of two wide ranges
      ...range(200_000, 200_010),
    ]);
    await database.db
      .deleteFrom('products')
      .where(sql<number>`id % 7`, '=', 0)
      .where('id', '<', 2100n)
      .execute();
    if (database.dialect === 'postgres') {
      // Explicit ids do not move the identity sequence; creations must continue after them.
      await sql`select setval(pg_get_serial_sequence('products', 'id'), (select max(id) from products))`.execute(
        database.db,
      );
    }
    t = await startApp(store, 'b');
  });
  after(async () => {
    await t?.close();
    await database?.close();
  });

  async function productTotal() {
    const row = await database.db
      .selectFrom('products')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
  async function reviewTotal(productId: bigint | number) {
    const row = await database.db
      .selectFrom('reviews')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('product_id', '=', BigInt(productId))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
  const header = async (url: string) => (await t.get(url)).headers['x-total-count'];

  async function assertEveryPage(size: number) {
    const n = await productTotal();
    for (const descending of [false, true]) {
      for (let page = 1; page <= Math.ceil(n / size) + 1; page++) {
        const res = await t.get(`/api/products?size=${size}&page=${page}${descending ? '&sort=-id' : ''}`);
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['x-total-count'], String(n));
        const rows = await database.db
          .selectFrom('products')
          .select('id')
          .orderBy('id', descending ? 'desc' : 'asc')
          .limit(size)
          .offset((page - 1) * size)
          .execute();
        assert.deepEqual(
          res.json().map((p: { id: number }) => p.id),
          rows.map((r) => Number(r.id)),
          `size ${size}, page ${page}${descending ? ', descending' : ''}`,
        );
      }
    }
  }

  test('ISSUE 25: rows from before the migration and bulk writes are counted: X-Total-Count is COUNT(*)', async () => {
    assert.equal(await header('/api/products?size=1'), String(await productTotal()));
    assert.equal(await header('/api/products/1/reviews?size=1'), '40');
  });

  test('ISSUE 25: every page of products in id order, either way, is the page LIMIT/OFFSET gives', async () => {
    await assertEveryPage(100);
    await assertEveryPage(7);
  });

  test('ISSUE 25: X-Total-Count follows creations and deletions through the API, cascades included', async () => {
    const alice = await register(t);
    const bob = await register(t);
    const asAlice = asUser(t, await signIn(t, alice));
    const asBob = asUser(t, await signIn(t, bob));
    const before = await productTotal();

    const made = [];
    for (const name of ['One', 'Two', 'Three']) {
      made.push((await asAlice.post('/api/products', { name, price: 1 })).json());
    }
    assert.equal(await header('/api/products?size=1'), String(before + 3));
    const reviewsUrl = `/api/products/${made[0].id}/reviews?size=1`;
    assert.equal(await header(reviewsUrl), '0');
    const mine = (await asBob.post(`/api/products/${made[0].id}/reviews`, { rating: 4 })).json();
    await asBob.post(`/api/products/${made[0].id}/reviews`, { rating: 2 });
    await asAlice.post(`/api/products/${made[0].id}/reviews`, { rating: 5 });
    assert.equal(await header(reviewsUrl), '3');
    assert.equal((await asBob.delete(`/api/products/${made[0].id}/reviews/${mine.id}`)).statusCode, 204);
    assert.equal(await header(reviewsUrl), '2');

    // Deleting a product deletes its reviews; its count goes with it.
    assert.equal((await asAlice.delete(`/api/products/${made[0].id}`)).statusCode, 204);
    assert.equal(await header('/api/products?size=1'), String(before + 2));
    const leftover = await database.db
      .selectFrom('review_counts')
      .select('reviews')
      .where('product_id', '=', BigInt(made[0].id))
      .execute();
    assert.deepEqual(leftover, []);

    // Deleting a user (here in plain SQL, as an operator might) deletes their products and their
    // reviews of others' products: both counts follow.
    const bobs = (await asBob.post('/api/products', { name: 'Bob’s', price: 2 })).json();
    await asBob.post(`/api/products/${made[1].id}/reviews`, { rating: 3 });
    await asAlice.post(`/api/products/${made[1].id}/reviews`, { rating: 3 });
    assert.equal(await header(`/api/products/${made[1].id}/reviews?size=1`), '2');
    assert.equal(await header('/api/products?size=1'), String(before + 3));
    await database.db.deleteFrom('users').where('id', '=', bob.id).execute();
    assert.equal(await header('/api/products?size=1'), String(before + 2));
    assert.equal(await header(`/api/products/${made[1].id}/reviews?size=1`), '1');
    assert.equal((await t.get(`/api/products/${bobs.id}`)).statusCode, 404);
    assert.equal(await productTotal(), before + 2);
    await assertEveryPage(100);
  });

  test('ISSUE 25: bulk review inserts and deletes in plain SQL keep the count exact', async () => {
    const product = (
      await database.db
        .insertInto('products')
        .values({
          name: 'Bulk',
          description: '',
          price: 1,
          owner_id: owner,
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
    await insertReviews(database, product, owner, 300);
    await database.db
      .deleteFrom('reviews')
      .where('product_id', '=', product)
      .where('rating', '=', 1)
      .execute();
    assert.equal(await reviewTotal(product), 240);
    assert.equal(await header(`/api/products/${product}/reviews?size=1`), '240');
    assert.equal(await header('/api/products?size=1'), String(await productTotal()));
  });
});
