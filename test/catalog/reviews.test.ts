import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const REVIEW_KEYS = ['authorId', 'id', 'productId', 'rating', 'text', 'time'];

/** Parses a Link header into { rel: url }. */
function links(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(',')) {
    const m = /<([^>]+)>;\s*rel="([a-z]+)"/.exec(part.trim());
    if (m) out[m[2]!] = m[1]!;
  }
  return out;
}

describeEachStore('/api/products/{id}/reviews', (store) => {
  let t: TestApp;
  let alice: ReturnType<typeof asUser>;
  let bob: ReturnType<typeof asUser>;
  let bobId: bigint;
  let productId: number;
  let reviews: Array<{ id: number; rating: number; time: string }> = [];

  before(async () => {
    t = await startApp(store, 'b');
    const a = await register(t);
    const b = await register(t);
    bobId = b.id;
    alice = asUser(t, await signIn(t, a));
    bob = asUser(t, await signIn(t, b));
    productId = (await alice.post('/api/products', { name: 'Widget', price: 100 })).json().id;
    for (let i = 0; i < 25; i++) {
      const res = await bob.post(`/api/products/${productId}/reviews`, {
        rating: (i % 5) + 1,
        text: `review ${i}`,
      });
      assert.equal(res.statusCode, 201, res.body);
      reviews.push(res.json());
    }
    reviews = reviews.sort((x, y) => x.id - y.id);
  });
  after(() => t.close());

  test('SPEC 4.2: page=2&size=10&sort=time on 25 reviews gives the 11th to 20th by time, with paging headers', async () => {
    const res = await t.get(`/api/products/${productId}/reviews?page=2&size=10&sort=time`);
    assert.equal(res.statusCode, 200);
    const page = res.json();
    assert.ok(Array.isArray(page), 'a list body is a plain JSON array');
    const byTime = [...reviews].sort((x, y) => Date.parse(x.time) - Date.parse(y.time) || x.id - y.id);
    assert.deepEqual(
      page.map((r: { id: number }) => r.id),
      byTime.slice(10, 20).map((r) => r.id),
    );
    assert.equal(res.headers['x-total-count'], '25');
    const l = links(res.headers.link as string);
    const base = `/api/products/${productId}/reviews`;
    assert.deepEqual(l, {
      first: `${base}?page=1&size=10&sort=time`,
      prev: `${base}?page=1&size=10&sort=time`,
      next: `${base}?page=3&size=10&sort=time`,
      last: `${base}?page=3&size=10&sort=time`,
    });
  });

  test('CONTRACT: the last page holds the remainder and has no next link', async () => {
    const res = await t.get(`/api/products/${productId}/reviews?page=3&size=10&sort=time`);
    assert.equal(res.json().length, 5);
    const l = links(res.headers.link as string);
    assert.equal(l.next, undefined);
    assert.ok(l.prev?.includes('page=2'));
    assert.ok(l.last?.includes('page=3'));
  });

  test('CONTRACT: a page past the end is an empty array, with the total still given', async () => {
    const res = await t.get(`/api/products/${productId}/reviews?page=4&size=10`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), []);
    assert.equal(res.headers['x-total-count'], '25');
    assert.equal(links(res.headers.link as string).next, undefined);
  });

  test('CONTRACT: defaults are page 1, size 20, in id order; the first page has no prev link', async () => {
    const res = await t.get(`/api/products/${productId}/reviews`);
    assert.deepEqual(
      res.json().map((r: { id: number }) => r.id),
      reviews.slice(0, 20).map((r) => r.id),
    );
    const l = links(res.headers.link as string);
    assert.equal(l.prev, undefined);
    assert.ok(l.next?.includes('page=2&size=20'));
  });

  test('CONTRACT: the Link header keeps the other query parameters', async () => {
    const res = await t.get(`/api/products/${productId}/reviews?sort=-rating&page=2&size=5&lang=en`);
    const l = links(res.headers.link as string);
    assert.equal(l.next, `/api/products/${productId}/reviews?sort=-rating&page=3&size=5&lang=en`);
  });

  test('CONTRACT: -field and field,desc sort descending, field,asc ascending; the id breaks ties', async () => {
    const expected = (desc: boolean) =>
      [...reviews].sort((x, y) => (desc ? -1 : 1) * (x.rating - y.rating || x.id - y.id)).map((r) => r.id);
    for (const [sort, desc] of [
      ['rating', false],
      ['rating,asc', false],
      ['-rating', true],
      ['rating,desc', true],
    ] as const) {
      const res = await t.get(`/api/products/${productId}/reviews?size=100&sort=${sort}`);
      assert.deepEqual(
        res.json().map((r: { id: number }) => r.id),
        expected(desc),
        sort,
      );
    }
    const newest = (await t.get(`/api/products/${productId}/reviews?size=1&sort=-time`)).json()[0];
    assert.equal(newest.id, reviews.at(-1)!.id);
  });

  test('CONTRACT: every bad page, size or sort value is 400 INVALID_QUERY', async () => {
    for (const q of [
      'page=0',
      'page=-1',
      'page=abc',
      'page=1.5',
      'page=',
      'page=1e2',
      'size=0',
      'size=101',
      'size=-5',
      'size=ten',
      'sort=price',
      'sort=-name',
      'sort=time,up',
      'sort=time,desc,asc',
      'sort=-time,desc',
      'sort=',
      'sort=text',
      'page=1&page=2',
    ]) {
      const res = await t.get(`/api/products/${productId}/reviews?${q}`);
      assert.equal(res.statusCode, 400, q);
      assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], q);
      assert.equal(res.json().error, 'INVALID_QUERY', q);
    }
    assert.match((await t.get(`/api/products/${productId}/reviews?size=500`)).json().message, /^size: /);
  });

  test('CONTRACT: the full life of a review: create 201 + Location, read, replace, delete 204', async () => {
    const created = await alice.post(`/api/products/${productId}/reviews`, { rating: 5 });
    assert.equal(created.statusCode, 201, created.body);
    const review = created.json();
    assert.deepEqual(Object.keys(review).sort(), REVIEW_KEYS);
    assert.equal(created.headers.location, `/api/products/${productId}/reviews/${review.id}`);
    assert.equal(review.text, '', 'text defaults to ""');
    assert.equal(review.productId, productId);
    assert.ok(!Number.isNaN(Date.parse(review.time)));

    assert.deepEqual((await t.get(`/api/products/${productId}/reviews/${review.id}`)).json(), review);
    const replaced = await alice.put(`/api/products/${productId}/reviews/${review.id}`, {
      rating: 2,
      text: 'meh',
    });
    assert.equal(replaced.statusCode, 200);
    assert.equal(replaced.json().rating, 2);
    assert.equal(replaced.json().time, review.time, 'when it was written does not change');
    assert.equal((await alice.delete(`/api/products/${productId}/reviews/${review.id}`)).statusCode, 204);
    assert.equal((await t.get(`/api/products/${productId}/reviews/${review.id}`)).statusCode, 404);
  });

  test("CONTRACT: only a review's author may change or delete it (403), anonymous 401", async () => {
    const review = reviews[0]!;
    const url = `/api/products/${productId}/reviews/${review.id}`;
    assert.equal((await alice.put(url, { rating: 1 })).statusCode, 403);
    assert.equal((await alice.delete(url)).statusCode, 403);
    assert.equal((await t.inject({ method: 'DELETE', url })).statusCode, 401);
    assert.equal((await t.get(url)).json().authorId, Number(bobId));
  });

  test('CONTRACT: a review is only found under its own product (404 NOT_FOUND elsewhere)', async () => {
    const other = (await alice.post('/api/products', { name: 'Other', price: 1 })).json();
    const res = await t.get(`/api/products/${other.id}/reviews/${reviews[0]!.id}`);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error, 'NOT_FOUND');
    assert.equal(
      (await bob.put(`/api/products/${other.id}/reviews/${reviews[0]!.id}`, { rating: 1 })).statusCode,
      404,
    );
    assert.equal((await bob.post('/api/products/987654321/reviews', { rating: 1 })).statusCode, 404);
  });

  test('CONTRACT: rating must be a whole number from 1 to 5, text at most 5000 characters, no unknown fields', async () => {
    for (const [body, field] of [
      [{ rating: 0 }, 'rating'],
      [{ rating: 6 }, 'rating'],
      [{ rating: 4.5 }, 'rating'],
      [{ rating: '5' }, 'rating'],
      [{}, 'rating'],
      [{ rating: 3, text: 't'.repeat(5001) }, 'text'],
      [{ rating: 3, authorId: 1 }, 'authorId'],
      [{ rating: 3, time: '2000-01-01T00:00:00Z' }, 'time'],
    ] as const) {
      const res = await bob.post(`/api/products/${productId}/reviews`, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error, 'VALIDATION_FAILED');
      assert.match(res.json().message, new RegExp(`^${field}\\b`));
    }
  });
});
