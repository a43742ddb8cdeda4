// Admin search stops counting where its pages stop (1,000 rows: decision 221): a query that
// matches more says X-Total-Count 1000 with X-Total-Count-Capped, its Link stops at the last page
// that can be read, and a deeper page is 400 INVALID_QUERY. A query that matches fewer is exact.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import { startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { as, staff } from './support.ts';

const MANY = 1005;

describeEachStore('admin search: the count stops at 1,000', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
    // Accounts without passwords, through the CLI import's batch path.
    const config = testConfig(store, 'b');
    const database = openDatabase(config.databaseUrl, config.database);
    try {
      const rows = Array.from({ length: MANY }, (_, i) => ({
        email: `capped${i}@many.example`,
        name: `Capped ${i}`,
      }));
      const outcomes = await compose(config, database).users.users.importWithoutPasswords(rows);
      assert.ok(outcomes.every((o) => o === 'imported'));
    } finally {
      await database.close();
    }
  });
  after(() => t.close());

  test('more matches than 1,000: X-Total-Count 1000, capped, Link to the last readable page, deeper is 400', async () => {
    const admin = as(t, (await staff(t, store, 'admin')).token);
    const first = await admin.get('/api/admin/users?q=many.example&size=30');
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['x-total-count'], '1000');
    assert.equal(first.headers['x-total-count-capped'], 'true');
    assert.equal(first.json().length, 30);
    const last = /<([^>]+)>; rel="last"/.exec(String(first.headers.link))?.[1];
    assert.match(String(last), /page=33\b/, 'the last page whose rows all lie within 1,000');
    const lastPage = await admin.get('/api/admin/users?q=many.example&size=30&page=33');
    assert.equal(lastPage.statusCode, 200);
    assert.equal(lastPage.json().length, 30);
    const deeper = await admin.get('/api/admin/users?q=many.example&size=30&page=34');
    assert.equal(deeper.statusCode, 400);
    assert.equal(deeper.json().error, 'INVALID_QUERY');
  });

  test('fewer matches than 1,000: the exact count, nothing capped', async () => {
    const admin = as(t, (await staff(t, store, 'admin')).token);
    const some = await admin.get('/api/admin/users?q=capped10&size=5');
    // capped10 and capped100..capped109 and capped1000..capped1004
    assert.equal(some.headers['x-total-count'], '16');
    assert.equal(some.headers['x-total-count-capped'], undefined);
    assert.equal(some.json().length, 5);
  });
});
