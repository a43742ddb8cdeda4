import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { leaksSecret, register, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

describeEachStore('GET /api/users', (store) => {
  let a: TestApp;
  let b: TestApp;
  const passwords: string[] = [];
  before(async () => {
    a = await startApp(store, 'a');
    b = await startApp(store, 'b');
    for (let i = 0; i < 3; i++) passwords.push((await register(b)).password);
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  test('SPEC 4.1 (B): a JSON array of user objects, in id order, none with a password', async () => {
    const res = await b.get('/api/users');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const users = res.json();
    assert.ok(Array.isArray(users));
    assert.equal(users.length, 3);
    for (const user of users)
      assert.deepEqual(Object.keys(user).sort(), ['createdAt', 'email', 'id', 'name']);
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

  test('CONTRACT: a bad page or size is 400 INVALID_QUERY', async () => {
    for (const q of ['page=0', 'page=-1', 'page=abc', 'page=1.5', 'size=0', 'size=101', 'size=x', 'page=']) {
      const res = await b.get(`/api/users?${q}`);
      assert.equal(res.statusCode, 400, q);
      assert.equal(res.json().error, 'INVALID_QUERY', q);
    }
  });
});
