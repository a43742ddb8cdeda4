import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asUser, CHEAP_HASH, NO_THROTTLE, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
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

/** Each label combination a counter can take, and the value of every `name{…}` sample. */
function series(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const end = line.lastIndexOf(' ');
    out.set(line.slice(name.length, end), Number(line.slice(end + 1)));
  }
  return out;
}

const PUBLIC_URL = 'https://id.example.test:8443';

describeEachStore('GET /metrics: every series from the start, and the account counters', (store) => {
  let t: TestApp;
  let smtp: TestSmtp;
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(store, 'b', { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) });
  });
  after(async () => {
    await t.close();
    await smtp.close();
  });

  test('ISSUE 32: each outcome label is exported at 0 before its first event', async () => {
    // A fresh app, so that no event of another test has happened in it.
    const fresh = await startApp(store, 'b');
    try {
      const text = (await fresh.get('/metrics')).body;
      const outcomes = [
        'success',
        'failure',
        'throttled',
        'unverified',
        'disabled',
        'invalid',
        'unavailable',
      ];
      for (const outcome of outcomes) {
        assert.equal(sample(text, 'usher_signin_attempts_total', { outcome }), 0, outcome);
        for (const method of ['password', 'passkey', 'oauth', 'email_link', 'email_code'])
          assert.equal(sample(text, 'usher_signins_total', { method, outcome }), 0, `${method} ${outcome}`);
      }
      for (const factor of ['totp', 'recovery_code'])
        assert.equal(sample(text, 'usher_signin_second_factors_total', { factor }), 0, factor);
      for (const name of ['usher_mail_deliveries_total', 'usher_webhook_deliveries_total'])
        assert.deepEqual(
          [...series(text, name).entries()].sort(),
          [
            ['{outcome="failed"}', 0],
            ['{outcome="retry"}', 0],
            ['{outcome="sent"}', 0],
          ],
          name,
        );
      for (const via of ['registration', 'oauth', 'email_link', 'email_code', 'invitation'])
        assert.equal(sample(text, 'usher_registrations_total', { via }), 0, via);
      for (const stage of ['requested', 'completed', 'refused'])
        assert.equal(sample(text, 'usher_password_resets_total', { stage }), 0, stage);
      for (const change of ['added', 'removed'])
        assert.equal(sample(text, 'usher_passkey_changes_total', { change }), 0, change);
      for (const lane of ['signin', 'account']) {
        assert.equal(sample(text, 'usher_password_hash_queue_depth', { lane }), 0, lane);
        assert.equal(sample(text, 'usher_password_hash_queue_wait_seconds_count', { lane }), 0, lane);
      }
      assert.equal(sample(text, 'usher_workers'), 1);
    } finally {
      await fresh.close();
    }
  });

  test('ISSUE 32: registrations, password resets (asked, refused, completed) and passkeys added and removed are counted', async () => {
    const before = (await t.get('/metrics')).body;
    const count = (text: string, name: string, labels: Record<string, string>) =>
      sample(text, name, labels) ?? NaN;
    const user = await register(t);
    // A reset: asked, a link that is not one, then the mailed link.
    const asked = await t.post('/api/password/forgot', { email: user.email });
    assert.equal(asked.statusCode, 202, asked.body);
    assert.equal(
      (await t.post('/api/password/reset', { token: 'x'.repeat(43), password: 'another passphrase 1' }))
        .statusCode,
      400,
    );
    const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
    const done = await t.post('/api/password/reset', {
      token: linkToken(mail!, '/reset-password'),
      password: 'another passphrase 1',
    });
    assert.equal(done.statusCode, 204, done.body);
    // A passkey added, then removed.
    const me = asUser(t, await signIn(t, { email: user.email, password: 'another passphrase 1' }));
    const options = await me.post('/api/passkeys/register/options', {});
    assert.equal(options.statusCode, 200, options.body);
    const made = await me.post('/api/passkeys/register', {
      credential: new SoftAuthenticator(PUBLIC_URL).create(options.json()),
    });
    assert.equal(made.statusCode, 201, made.body);
    assert.equal((await me.delete(`/api/passkeys/${made.json().id}`)).statusCode, 204);

    const after = (await t.get('/metrics')).body;
    const moved = (name: string, labels: Record<string, string>) =>
      count(after, name, labels) - count(before, name, labels);
    assert.equal(moved('usher_registrations_total', { via: 'registration' }), 1);
    assert.equal(moved('usher_password_resets_total', { stage: 'requested' }), 1);
    assert.equal(moved('usher_password_resets_total', { stage: 'refused' }), 1);
    assert.equal(moved('usher_password_resets_total', { stage: 'completed' }), 1);
    assert.equal(moved('usher_passkey_changes_total', { change: 'added' }), 1);
    assert.equal(moved('usher_passkey_changes_total', { change: 'removed' }), 1);
  });
});

describeEachStore('GET /metrics: the hash queue', (store) => {
  let t: TestApp;
  before(async () => {
    // One slot, and hashes slow enough for sign-ins to queue behind each other.
    t = await startApp(store, 'b', {
      passwordHash: { ...CHEAP_HASH, memoryKiB: 16384, passes: 2, concurrency: 1 },
      throttle: { ...NO_THROTTLE },
    });
  });
  after(() => t.close());

  test('ISSUE 32: concurrent sign-ins wait in the sign-in lane: its depth rises while they wait, and each wait is observed', async () => {
    const user = await register(t);
    const before = (await t.get('/metrics')).body;
    const waits = (text: string) =>
      sample(text, 'usher_password_hash_queue_wait_seconds_count', { lane: 'signin' }) ?? 0;
    const waited = (text: string) =>
      sample(text, 'usher_password_hash_queue_wait_seconds_sum', { lane: 'signin' }) ?? 0;
    const SIGNINS = 12;
    let finished = 0;
    const signins = Array.from({ length: SIGNINS }, () =>
      t.post('/api/signin', { email: user.email, password: user.password }).then((res) => {
        finished++;
        return res;
      }),
    );
    // Scraped while they run: at some scrape, sign-ins wait for the one slot.
    let deepest = 0;
    while (finished < SIGNINS) {
      // inject answers without leaving the microtask queue: let the hashes' callbacks in.
      await new Promise((resolve) => setImmediate(resolve));
      const text = (await t.get('/metrics')).body;
      deepest = Math.max(deepest, sample(text, 'usher_password_hash_queue_depth', { lane: 'signin' }) ?? 0);
    }
    for (const res of await Promise.all(signins)) assert.equal(res.statusCode, 200, res.body);
    const after = (await t.get('/metrics')).body;
    assert.ok(deepest > 0, 'the queue depth was above 0 while sign-ins waited');
    assert.equal(sample(after, 'usher_password_hash_queue_depth', { lane: 'signin' }), 0, 'and 0 once done');
    assert.equal(waits(after) - waits(before), SIGNINS, 'one wait per sign-in hash');
    assert.ok(waited(after) > waited(before), 'sign-ins behind the one slot waited');
  });
});
