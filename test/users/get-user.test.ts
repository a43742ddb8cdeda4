import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaksSecret, profileApps, register, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, freshDatabaseUrl, type Store } from '../helpers/stores.ts';

describeEachStore('GET /api/users/{id}', (store) => {
  const { a, b } = profileApps(store);

  test('SPEC 4.1 (A): a known id returns exactly id, email and name', async () => {
    const u = await register(a);
    const res = await a.get(`/api/users/${u.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(res.json(), { id: Number(u.id), email: u.email, name: u.name });
    assert.equal(leaksSecret(res.body, [u.password]), false);
  });

  test('SPEC 4.1 rule 4 (B): the user object has id, email, name, createdAt and no password', async () => {
    const u = await register(b);
    const res = await b.get(`/api/users/${u.id}`);
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'email', 'emailVerified', 'id', 'name']);
    assert.equal(body.id, Number(u.id));
    assert.equal(body.email, u.email);
    assert.ok(!Number.isNaN(Date.parse(body.createdAt)));
    assert.equal(leaksSecret(res.body, [u.password]), false);
  });

  for (const t of [
    { profile: 'a', app: () => a },
    { profile: 'b', app: () => b },
  ]) {
    test(`SPEC 7 (${t.profile}): an unknown id is 404 with exactly {"error":"USER_NOT_FOUND"}`, async () => {
      const res = await t.app().get('/api/users/987654321');
      assert.equal(res.statusCode, 404);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.deepEqual(res.json(), { error: 'USER_NOT_FOUND' });
    });

    test(`CONTRACT (${t.profile}): an id that is not 1..2^63-1 in decimal is 404 USER_NOT_FOUND, never 400 or 500`, async () => {
      for (const id of [
        'abc',
        '-1',
        '0',
        '1.5',
        '1e3',
        '0x10',
        '01',
        '9223372036854775808',
        '18446744073709551616',
        '9223372036854775807',
      ]) {
        const res = await t.app().get(`/api/users/${id}`);
        assert.equal(res.statusCode, 404, `id ${id}`);
        assert.deepEqual(res.json(), { error: 'USER_NOT_FOUND' }, `id ${id}`);
      }
    });

    test(`SPEC 4.1 rule 3 (${t.profile}): GET answers JSON whatever the Accept header says`, async () => {
      const u = await register(t.app());
      for (const accept of ['text/html,application/xhtml+xml;q=0.9,*/*;q=0.8', 'text/plain', 'image/png']) {
        const res = await t.app().inject({ method: 'GET', url: `/api/users/${u.id}`, headers: { accept } });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(res.json().email, u.email);
      }
    });
  }

  // On a database of its own: a row at 2^63-1 leaves SQLite's AUTOINCREMENT nowhere to go (every
  // later registration fails, even after the row is deleted), and it would turn the id 2^63-1
  // that the other tests expect to be unknown into a known one.
  test('CONTRACT: ids at or above 2^53 are written as exact JSON integers in both profiles', async () => {
    const own = await freshDatabaseUrl(store.kind);
    const ownStore: Store = { kind: store.kind, url: own.url };
    const apps: TestApp[] = [];
    try {
      apps.push(await startApp(ownStore, 'a'), await startApp(ownStore, 'b'));
      const database = openTestDatabase(ownStore);
      const big = 2n ** 53n + 1n; // 9007199254740993: a double would round it to ...992
      const max = 2n ** 63n - 1n;
      try {
        for (const id of [big, max]) {
          await database.db
            .insertInto('users')
            .values({
              id,
              email: `big${id}@example.com`,
              email_key: `big${id}@example.com`,
              name: 'Big',
              created_at: new Date().toISOString(),
              updated_at: new Date().toISOString(),
            })
            .execute();
        }
      } finally {
        await database.close();
      }
      for (const t of apps) {
        for (const id of [big, max]) {
          const res = await t.get(`/api/users/${id}`);
          assert.equal(res.statusCode, 200);
          assert.match(res.body, new RegExp(`^\\{"id":${id},`), res.body);
        }
      }
    } finally {
      for (const t of apps) await t.close();
      await own.drop();
    }
  });
});
