import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PRODUCT_KEYS = ['createdAt', 'description', 'id', 'name', 'ownerId', 'price', 'updatedAt'];

describeEachStore('/api/products', (store) => {
  let t: TestApp;
  let alice: ReturnType<typeof asUser>;
  let bob: ReturnType<typeof asUser>;
  let aliceId: bigint;
  before(async () => {
    t = await startApp(store, 'b');
    const a = await register(t);
    const b = await register(t);
    aliceId = a.id;
    alice = asUser(t, await signIn(t, a));
    bob = asUser(t, await signIn(t, b));
  });
  after(() => t.close());

  test('CONTRACT: the full life of a product: create 201 + Location, read, list, replace, delete 204, then 404', async () => {
    const created = await alice.post('/api/products', {
      name: '  Lamp  ',
      description: 'Bright',
      price: 1999,
    });
    assert.equal(created.statusCode, 201, created.body);
    const product = created.json();
    assert.deepEqual(Object.keys(product).sort(), PRODUCT_KEYS);
    assert.equal(created.headers.location, `/api/products/${product.id}`);
    assert.equal(product.name, 'Lamp');
    assert.equal(product.price, 1999);
    assert.equal(product.ownerId, Number(aliceId), 'the owner is the signed-in creator');

    const read = await t.get(`/api/products/${product.id}`);
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), product);
    assert.ok(
      (await t.get('/api/products?size=100')).json().some((p: { id: number }) => p.id === product.id),
    );

    const replaced = await alice.put(`/api/products/${product.id}`, { name: 'Desk lamp', price: 2499 });
    assert.equal(replaced.statusCode, 200, replaced.body);
    const updated = replaced.json();
    assert.equal(updated.name, 'Desk lamp');
    assert.equal(updated.description, '', 'PUT replaces: an omitted description is reset to ""');
    assert.equal(updated.createdAt, product.createdAt, 'timestamps are the server’s');
    assert.equal(updated.ownerId, product.ownerId);
    assert.ok(Date.parse(updated.updatedAt) >= Date.parse(product.updatedAt));

    const deleted = await alice.delete(`/api/products/${product.id}`);
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, '');
    const gone = await t.get(`/api/products/${product.id}`);
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().error, 'NOT_FOUND');
  });

  test('CONTRACT: anonymous writes are 401 UNAUTHENTICATED, even with an invalid body', async () => {
    const id = (await alice.post('/api/products', { name: 'Mine', price: 1 })).json().id;
    for (const res of [
      await t.post('/api/products', { name: 'x', price: 1 }),
      await t.post('/api/products', { nonsense: true }),
      await t.inject({ method: 'PUT', url: `/api/products/${id}`, payload: { name: 'x', price: 1 } }),
      await t.inject({ method: 'DELETE', url: `/api/products/${id}` }),
    ]) {
      assert.equal(res.statusCode, 401);
      assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
      assert.equal(res.json().error, 'UNAUTHENTICATED');
    }
  });

  test("CONTRACT: another user's product cannot be changed or deleted (403 FORBIDDEN) and stays as it was", async () => {
    const product = (await alice.post('/api/products', { name: 'Alice’s', price: 5 })).json();
    const put = await bob.put(`/api/products/${product.id}`, { name: 'Bob’s now', price: 0 });
    assert.equal(put.statusCode, 403);
    assert.equal(put.json().error, 'FORBIDDEN');
    assert.equal((await bob.delete(`/api/products/${product.id}`)).statusCode, 403);
    assert.deepEqual((await t.get(`/api/products/${product.id}`)).json(), product);
  });

  test('CONTRACT: an unknown or malformed product id is 404 NOT_FOUND', async () => {
    for (const id of ['987654321', 'abc', '0', '-1', '1.5', '99999999999999999999']) {
      assert.equal((await t.get(`/api/products/${id}`)).statusCode, 404, id);
      assert.equal((await alice.put(`/api/products/${id}`, { name: 'x', price: 1 })).statusCode, 404, id);
      assert.equal((await alice.delete(`/api/products/${id}`)).statusCode, 404, id);
      assert.equal((await t.get(`/api/products/${id}/reviews`)).statusCode, 404, id);
    }
  });

  const invalid: Array<[string, unknown, string]> = [
    ['a missing name', { price: 1 }, 'name'],
    ['an empty name', { name: '  ', price: 1 }, 'name'],
    ['a name over 200 characters', { name: 'n'.repeat(201), price: 1 }, 'name'],
    [
      'a description over 5000 characters',
      { name: 'x', price: 1, description: 'd'.repeat(5001) },
      'description',
    ],
    ['a missing price', { name: 'x' }, 'price'],
    ['a negative price', { name: 'x', price: -1 }, 'price'],
    ['a fractional price', { name: 'x', price: 1.5 }, 'price'],
    ['a price given as a string (no coercion)', { name: 'x', price: '10' }, 'price'],
    ['an unknown field', { name: 'x', price: 1, ownerId: 1 }, 'ownerId'],
    ['a server timestamp', { name: 'x', price: 1, createdAt: '2000-01-01T00:00:00Z' }, 'createdAt'],
  ];
  for (const [what, body, field] of invalid) {
    test(`CONTRACT: ${what} is 400 VALIDATION_FAILED naming ${field}, on create and on replace`, async () => {
      const id = (await alice.post('/api/products', { name: 'Target', price: 1 })).json().id;
      for (const res of [
        await alice.post('/api/products', body),
        await alice.put(`/api/products/${id}`, body),
      ]) {
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error, 'VALIDATION_FAILED');
        assert.match(res.json().message, new RegExp(`^${field}\\b`));
      }
    });
  }

  test('CONTRACT: limits are inclusive: a 200-character name, 5000-character description and price 0', async () => {
    const res = await alice.post('/api/products', {
      name: 'n'.repeat(200),
      description: 'd'.repeat(5000),
      price: 0,
    });
    assert.equal(res.statusCode, 201, res.body);
  });

  test('CONTRACT: deleting a product deletes its reviews', async () => {
    const product = (await alice.post('/api/products', { name: 'Reviewed', price: 1 })).json();
    const review = (await bob.post(`/api/products/${product.id}/reviews`, { rating: 4, text: 'ok' })).json();
    assert.equal((await alice.delete(`/api/products/${product.id}`)).statusCode, 204);
    assert.equal((await t.get(`/api/products/${product.id}/reviews/${review.id}`)).statusCode, 404);
    assert.equal((await t.get(`/api/products/${product.id}/reviews`)).statusCode, 404);
  });

  test('CONTRACT: products sort by id, name, price and createdAt, either way, ties broken by id', async () => {
    const fresh = await startApp(store, 'a');
    try {
      // A clean slate is not available on a shared database, so compare against the full list.
      for (const [name, price] of [
        ['b', 3],
        ['a', 3],
        ['c', 1],
        ['B', 2],
      ] as const) {
        await alice.post('/api/products', { name, price });
      }
      const all: Array<{ id: number; name: string; price: number; createdAt: string }> = (
        await t.get('/api/products?size=100')
      ).json();
      assert.deepEqual(
        all.map((p) => p.id),
        [...all].sort((x, y) => x.id - y.id).map((p) => p.id),
        'without sort, id order',
      );
      const cmp = (key: 'name' | 'price', desc: boolean) => (x: (typeof all)[0], y: (typeof all)[0]) => {
        const primary = x[key] < y[key] ? -1 : x[key] > y[key] ? 1 : 0;
        return (desc ? -1 : 1) * (primary || x.id - y.id);
      };
      for (const [query, key, desc] of [
        ['sort=price', 'price', false],
        ['sort=-price', 'price', true],
        ['sort=price,desc', 'price', true],
        ['sort=price,asc', 'price', false],
        ['sort=name', 'name', false],
        ['sort=-name', 'name', true],
      ] as const) {
        const got = (await t.get(`/api/products?size=100&${query}`)).json().map((p: { id: number }) => p.id);
        assert.deepEqual(
          got,
          [...all].sort(cmp(key, desc)).map((p) => p.id),
          query,
        );
      }
      const byCreated = (await fresh.get('/api/products?size=100&sort=createdAt')).json();
      assert.equal(byCreated.length, all.length);
    } finally {
      await fresh.close();
    }
  });
});
