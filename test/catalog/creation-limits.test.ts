// Issue 25: one free account created 500-1,200 products a second with no quota. Each user may now
// create so many products (and reviews) a minute, PRODUCTS_MAX_PER_MINUTE at once and then one
// every 60 s / that number (429 TOO_MANY_REQUESTS with Retry-After), and own so many at once,
// PRODUCTS_MAX_PER_USER (409 QUOTA_EXCEEDED). Both are counted in the shared database, in the
// transaction of the insert: simultaneous creations, and creations through several instances,
// get no more than one after the other would.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Config, Profile } from '../../src/config.ts';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const limits = (products: [perUser: number, perMinute: number], reviews: [number, number] = [1000, 1000]) =>
  ({
    catalog: {
      products: { perUser: products[0], perMinute: products[1] },
      reviews: { perUser: reviews[0], perMinute: reviews[1] },
    },
  }) satisfies Partial<Config>;

describeEachStore('per-user creation limits', (store) => {
  let offset = 0;
  const clock = () => Date.now() + offset;
  const started: TestApp[] = [];
  const start = async (overrides: Partial<Config>, profile: Profile = 'b') => {
    const t = await startApp(store, profile, overrides, { clock });
    started.push(t);
    return t;
  };
  before(() => {
    offset = 0;
  });
  after(async () => {
    for (const t of started) await t.close();
  });

  async function newWriter(t: TestApp) {
    const user = await register(t);
    return { id: user.id, as: asUser(t, await signIn(t, user)) };
  }
  const product = (i: number) => ({ name: `Product ${i}`, price: i });

  for (const profile of ['b', 'a'] as const) {
    test(`ISSUE 25: PRODUCTS_MAX_PER_MINUTE products at once, then 429 with Retry-After until the next is due (profile ${profile})`, async () => {
      const t = await start(limits([1000, 3]), profile);
      const writer = await newWriter(t);
      for (let i = 0; i < 3; i++) {
        assert.equal((await writer.as.post('/api/products', product(i))).statusCode, 201);
      }
      for (let i = 0; i < 2; i++) {
        // A refusal changes nothing: asking again does not push the next creation back.
        const refused = await writer.as.post('/api/products', product(9));
        assert.equal(refused.statusCode, 429);
        assert.deepEqual(Object.keys(refused.json()).sort(), ['error', 'message']);
        assert.equal(refused.json().error, 'TOO_MANY_REQUESTS');
        assert.equal(refused.headers['retry-after'], '20', 'one every 60 s / 3');
      }
      offset += 19_000;
      assert.equal((await writer.as.post('/api/products', product(9))).statusCode, 429);
      assert.equal((await writer.as.post('/api/products', product(9))).headers['retry-after'], '1');
      offset += 1_000;
      assert.equal((await writer.as.post('/api/products', product(4))).statusCode, 201);
      assert.equal((await writer.as.post('/api/products', product(5))).statusCode, 429);
      // Another user has an allowance of their own.
      const other = await newWriter(t);
      assert.equal((await other.as.post('/api/products', product(1))).statusCode, 201);
    });
  }

  test('ISSUE 25: a burst of simultaneous creations gets exactly the allowance, the rest 429', async () => {
    const t = await start(limits([1000, 5]));
    const writer = await newWriter(t);
    const before = Number((await t.get('/api/products?size=1')).headers['x-total-count']);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => writer.as.post('/api/products', product(i))),
    );
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [...Array(5).fill(201), ...Array(15).fill(429)]);
    assert.equal(Number((await t.get('/api/products?size=1')).headers['x-total-count']), before + 5);
  });

  test('ISSUE 25: two instances on one database count one allowance together', async () => {
    const one = await start(limits([1000, 3]));
    const two = await start(limits([1000, 3]));
    const user = await register(one);
    const token = await signIn(one, user);
    const [viaOne, viaTwo] = [asUser(one, token), asUser(two, token)];
    assert.equal((await viaOne.post('/api/products', product(1))).statusCode, 201);
    assert.equal((await viaTwo.post('/api/products', product(2))).statusCode, 201);
    assert.equal((await viaOne.post('/api/products', product(3))).statusCode, 201);
    assert.equal((await viaTwo.post('/api/products', product(4))).statusCode, 429);
    assert.equal((await viaOne.post('/api/products', product(4))).statusCode, 429);
  });

  test('ISSUE 25: PRODUCTS_MAX_PER_USER products owned at once, then 409 QUOTA_EXCEEDED until one is deleted; a refusal costs no allowance', async () => {
    const t = await start(limits([2, 4]));
    const writer = await newWriter(t);
    const made = [];
    for (let i = 0; i < 2; i++) made.push((await writer.as.post('/api/products', product(i))).json());
    for (let i = 0; i < 3; i++) {
      const refused = await writer.as.post('/api/products', product(9));
      assert.equal(refused.statusCode, 409);
      assert.equal(refused.json().error, 'QUOTA_EXCEEDED');
      assert.match(refused.json().message, /^You have 2 products, the most one account may have/);
      assert.equal(refused.headers['retry-after'], undefined);
    }
    assert.equal((await writer.as.delete(`/api/products/${made[0].id}`)).statusCode, 204);
    // The three refusals were rolled back with their transaction: this is the third of four a minute.
    assert.equal((await writer.as.post('/api/products', product(3))).statusCode, 201);
    assert.equal((await writer.as.post('/api/products', product(4))).statusCode, 409);
  });

  test('ISSUE 25: simultaneous creations never own more than the quota', async () => {
    const t = await start(limits([3, 1000]));
    const writer = await newWriter(t);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => writer.as.post('/api/products', product(i))),
    );
    assert.deepEqual(answers.map((r) => r.statusCode).sort(), [...Array(3).fill(201), ...Array(9).fill(409)]);
  });

  test('ISSUE 25: reviews have an allowance and a quota of their own (REVIEWS_MAX_PER_MINUTE, REVIEWS_MAX_PER_USER)', async () => {
    const t = await start(limits([1000, 1000], [3, 2]));
    const owner = await newWriter(t);
    const reviewer = await newWriter(t);
    const target = (await owner.as.post('/api/products', product(1))).json();
    const url = `/api/products/${target.id}/reviews`;
    assert.equal((await reviewer.as.post(url, { rating: 5 })).statusCode, 201);
    assert.equal((await reviewer.as.post(url, { rating: 4 })).statusCode, 201);
    const fast = await reviewer.as.post(url, { rating: 3 });
    assert.equal(fast.statusCode, 429);
    assert.equal(fast.json().error, 'TOO_MANY_REQUESTS');
    assert.equal(fast.headers['retry-after'], '30');
    offset += 30_000;
    assert.equal((await reviewer.as.post(url, { rating: 3 })).statusCode, 201);
    offset += 60_000;
    const full = await reviewer.as.post(url, { rating: 2 });
    assert.equal(full.statusCode, 409);
    assert.equal(full.json().error, 'QUOTA_EXCEEDED');
    assert.match(full.json().message, /^You have 3 reviews/);
    // Products are counted apart: the reviewer may still create them.
    assert.equal((await reviewer.as.post('/api/products', product(2))).statusCode, 201);
    // A product deleted with its reviews gives its reviewers their quota back.
    assert.equal((await owner.as.delete(`/api/products/${target.id}`)).statusCode, 204);
    const again = (await owner.as.post('/api/products', product(3))).json();
    assert.equal(
      (await reviewer.as.post(`/api/products/${again.id}/reviews`, { rating: 1 })).statusCode,
      201,
    );
  });

  test('ISSUE 25: the OpenAPI document lists 409 QUOTA_EXCEEDED and 429 with Retry-After on both creation routes', async () => {
    const t = await start({});
    const doc = (await t.get('/openapi.json')).json();
    for (const path of ['/api/products', '/api/products/{id}/reviews']) {
      const responses = doc.paths[path].post.responses;
      assert.match(responses['409'].description, /QUOTA_EXCEEDED/, path);
      assert.match(responses['429'].description, /TOO_MANY_REQUESTS/, path);
      assert.ok(responses['429'].headers['Retry-After'], path);
    }
  });
});
