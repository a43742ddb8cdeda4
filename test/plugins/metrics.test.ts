import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.split(' ').at(-1));
  }
  return undefined;
}

describeEachStore('GET /metrics', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
  });
  after(() => t.close());

  test('ISSUE 7: Prometheus text with requests by route and status, latency, sign-in outcomes, hash time and pool usage', async () => {
    const u = await register(t);
    await t.get(`/api/users/${u.id}`);
    await t.get('/api/users/987654321');
    await t.post('/api/signin', { email: u.email, password: u.password });
    await t.post('/api/signin', { email: u.email, password: 'wrong-password-1' });
    await t.post('/api/signin', '[]');
    const res = await t.get('/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/);
    const text = res.body;
    assert.equal(sample(text, 'usher_http_requests_total', { route: '/api/users/:id', status: '200' }), 1);
    assert.equal(sample(text, 'usher_http_requests_total', { route: '/api/users/:id', status: '404' }), 1);
    assert.equal(
      sample(text, 'usher_http_requests_total', { route: '/api/users', method: 'POST', status: '201' }),
      1,
    );
    assert.ok(
      (sample(text, 'usher_http_request_duration_seconds_count', { route: '/api/users/:id' }) ?? 0) >= 2,
    );
    assert.equal(sample(text, 'usher_signin_attempts_total', { outcome: 'success' }), 1);
    assert.equal(sample(text, 'usher_signin_attempts_total', { outcome: 'failure' }), 1);
    assert.equal(sample(text, 'usher_signin_attempts_total', { outcome: 'invalid' }), 1);
    assert.ok(
      (sample(text, 'usher_password_hash_seconds_count') ?? 0) >= 3,
      'registration and two verifications',
    );
    assert.ok(sample(text, 'usher_db_pool_connections', { state: 'total' }) !== undefined);
    assert.ok(sample(text, 'usher_process_resident_memory_bytes') !== undefined);
  });

  test('ISSUE 7: unknown URLs are counted under one label, so clients cannot blow up cardinality', async () => {
    for (let i = 0; i < 5; i++) await t.get(`/random/${i}/${Math.random()}`);
    const text = (await t.get('/metrics')).body;
    assert.ok(!text.includes('/random/'));
    assert.ok((sample(text, 'usher_http_requests_total', { route: 'unmatched', status: '404' }) ?? 0) >= 5);
  });

  test('ISSUE 7: /healthz is 200 {"status":"ok"} and /readyz 200 while the database answers', async () => {
    assert.deepEqual((await t.get('/healthz')).json(), { status: 'ok' });
    const ready = await t.get('/readyz');
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ok' });
  });
});
