import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { leaksSecret, profileApps, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

describeEachStore('GET /api/users', (store) => {
  const { a, b } = profileApps(store);
  const passwords: string[] = [];
  before(async () => {
    for (let i = 0; i < 3; i++) passwords.push((await register(b)).password);
  });

  test('SPEC 4.1 (B): a JSON array of user objects, in id order, none with a password', async () => {
    const res = await b.get('/api/users');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const users = res.json();
    assert.ok(Array.isArray(users));
    assert.equal(users.length, 3);
    for (const user of users)
      assert.deepEqual(Object.keys(user).sort(), ['createdAt', 'email', 'emailVerified', 'id', 'name']);
    assert.deepEqual(
      users.map((u: { id: number }) => u.id),
      [...users.map((u: { id: number }) => u.id)].sort((x: number, y: number) => x - y),
    );
    assert.equal(leaksSecret(res.body, passwords), false);
  });

  test('CONTRACT: profile A does not serve the user list (404 NOT_FOUND)', async () => {
    const res = await a.get('/api/users');
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error, 'NOT_FOUND');
  });

  test('CONTRACT: page and size select a slice; a page past the end is an empty array', async () => {
    const all = (await b.get('/api/users')).json();
    assert.deepEqual((await b.get('/api/users?page=2&size=2')).json(), all.slice(2, 4));
    assert.deepEqual((await b.get('/api/users?page=1&size=1')).json(), all.slice(0, 1));
    assert.deepEqual((await b.get('/api/users?page=99&size=100')).json(), []);
  });

  test('CONTRACT: the list pages like every list: X-Total-Count and a Link header', async () => {
    const res = await b.get('/api/users?page=1&size=2');
    assert.equal(res.headers['x-total-count'], '3');
    assert.equal(
      res.headers.link,
      '</api/users?page=1&size=2>; rel="first", </api/users?page=2&size=2>; rel="next", </api/users?page=2&size=2>; rel="last"',
    );
  });

  test('CONTRACT: users sort by id, name, email and createdAt; descending with -field', async () => {
    const all = (await b.get('/api/users')).json();
    const ids = (users: Array<{ id: number }>) => users.map((u) => u.id);
    assert.deepEqual(ids((await b.get('/api/users?sort=-id')).json()), ids(all).reverse());
    for (const key of ['name', 'email', 'createdAt']) {
      assert.equal((await b.get(`/api/users?sort=${key}`)).statusCode, 200, key);
      assert.equal((await b.get(`/api/users?sort=${key},desc`)).statusCode, 200, key);
    }
  });

  test('CONTRACT: a bad page, size or sort is 400 INVALID_QUERY (code only on this documented endpoint)', async () => {
    for (const q of [
      'page=0',
      'page=-1',
      'page=abc',
      'page=1.5',
      'size=0',
      'size=101',
      'size=x',
      'page=',
      'sort=password',
    ]) {
      const res = await b.get(`/api/users?${q}`);
      assert.equal(res.statusCode, 400, q);
      assert.deepEqual(res.json(), { error: 'INVALID_QUERY' }, q);
    }
  });
});
