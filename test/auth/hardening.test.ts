import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { housekeeping } from '../../src/features.ts';
import { asUser, newUser, register, signIn, startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const WRONG = 'definitely-wrong-1';

describeEachStore('Sign-in throttling', (store) => {
  // Small limits keep the test fast; the mechanism is the one the defaults (10/100/100 in 15 min) use.
  const throttle = {
    windowMs: 60_000,
    perAccountAddress: 3,
    perAccount: 5,
    perAddress: 8,
    concurrentPerAccount: 1000,
    concurrentPerAddress: 1000,
    deviceTtlMs: 180 * 24 * 3600 * 1000,
  };
  let a: TestApp;
  let b: TestApp;
  before(async () => {
    a = await startApp(store, 'a', { throttle });
    b = await startApp(store, 'b', { throttle });
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  const from = (t: TestApp, address: string, body: unknown) =>
    t.inject({ method: 'POST', url: '/api/signin', remoteAddress: address, payload: body as object });

  test('CONTRACT: after N failures for one account from one address, that pair gets 429 with Retry-After, the right password included', async () => {
    const u = await register(b);
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      assert.equal((await from(b, '10.0.0.1', { email: u.email, password: WRONG })).statusCode, 401);
    }
    const blocked = await from(b, '10.0.0.1', { email: u.email, password: u.password });
    assert.equal(blocked.statusCode, 429);
    assert.deepEqual(Object.keys(blocked.json()).sort(), ['error', 'message']);
    assert.equal(blocked.json().error, 'SIGNIN_FAILED');
    const retryAfter = Number(blocked.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${blocked.headers['retry-after']}`);
    assert.equal(blocked.headers['set-cookie'], undefined, 'no session while throttled');
    // The same account from another address is not blocked by that pair's count.
    assert.equal((await from(b, '10.0.0.2', { email: u.email, password: u.password })).statusCode, 200);
  });

  test('ISSUE 11: once the limit is reached, refused sign-ins write nothing: the next attempt stored takes the very next id', async () => {
    const { openTestDatabase } = await import('../helpers/db.ts');
    const database = openTestDatabase(store);
    const lastId = async () =>
      BigInt(
        (
          await database.db
            .selectFrom('signin_attempts')
            .select('id')
            .orderBy('id', 'desc')
            .executeTakeFirst()
        )?.id ?? 0n,
      );
    try {
      const u = await register(b);
      for (let i = 0; i < throttle.perAccountAddress; i++)
        assert.equal((await from(b, '10.0.7.1', { email: u.email, password: WRONG })).statusCode, 401);
      const counted = await lastId();
      for (let i = 0; i < 5; i++)
        assert.equal((await from(b, '10.0.7.1', { email: u.email, password: WRONG })).statusCode, 429);
      assert.equal(await lastId(), counted, 'no refused attempt is stored');
      // Ids are never reused (an identity on PostgreSQL, AUTOINCREMENT on SQLite): a refusal that
      // inserted its row and deleted it again would show as a gap here.
      assert.equal((await from(b, '10.0.7.2', { email: u.email, password: WRONG })).statusCode, 401);
      assert.equal(await lastId(), counted + 1n);
    } finally {
      await database.close();
    }
  });

  test("CONTRACT: the 429 body is in the profile's shape (A: exactly {error})", async () => {
    const u = await register(a);
    for (let i = 0; i < throttle.perAccountAddress; i++)
      await from(a, '10.0.1.1', { email: u.email, password: WRONG });
    const blocked = await from(a, '10.0.1.1', { email: u.email, password: u.password });
    assert.equal(blocked.statusCode, 429);
    assert.deepEqual(blocked.json(), { error: 'SIGNIN_FAILED' });
    assert.ok(blocked.headers['retry-after']);
  });

  test('CONTRACT: a success resets the count for that account and address', async () => {
    const u = await register(b);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < throttle.perAccountAddress - 1; i++) {
        assert.equal((await from(b, '10.0.2.1', { email: u.email, password: WRONG })).statusCode, 401);
      }
      assert.equal(
        (await from(b, '10.0.2.1', { email: u.email, password: u.password })).statusCode,
        200,
        `round ${round}`,
      );
    }
  });

  test('CONTRACT: failures for one account from many addresses block that account everywhere', async () => {
    const u = await register(b);
    for (let i = 0; i < throttle.perAccount; i++)
      await from(b, `10.1.0.${i}`, { email: u.email, password: WRONG });
    const res = await from(b, '10.1.9.9', { email: u.email, password: u.password });
    assert.equal(res.statusCode, 429);
  });

  test('CONTRACT: failures from one address across accounts block that address', async () => {
    for (let i = 0; i < throttle.perAddress; i++) {
      await from(b, '10.2.0.1', { email: `nobody${i}.${Date.now()}@example.com`, password: WRONG });
    }
    const u = await register(b);
    assert.equal((await from(b, '10.2.0.1', { email: u.email, password: u.password })).statusCode, 429);
    assert.equal((await from(b, '10.2.0.2', { email: u.email, password: u.password })).statusCode, 200);
  });

  test('CONTRACT: a throttled answer is the same whether or not the account exists', async () => {
    const u = await register(b);
    const ghost = `ghost.${u.email}`;
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      await from(b, '10.3.0.1', { email: u.email, password: WRONG });
      await from(b, '10.3.0.1', { email: ghost, password: WRONG });
    }
    const real = await from(b, '10.3.0.1', { email: u.email, password: WRONG });
    const fake = await from(b, '10.3.0.1', { email: ghost, password: WRONG });
    assert.equal(real.statusCode, 429);
    assert.equal(fake.statusCode, real.statusCode);
    assert.equal(fake.body, real.body);
  });

  test('CONTRACT: the counts live in the shared store, so two instances count together', async () => {
    const other = await startApp(store, 'b', { throttle });
    try {
      const u = await register(b);
      await from(b, '10.4.0.1', { email: u.email, password: WRONG });
      await from(other, '10.4.0.1', { email: u.email, password: WRONG });
      await from(b, '10.4.0.1', { email: u.email, password: WRONG });
      assert.equal((await from(other, '10.4.0.1', { email: u.email, password: u.password })).statusCode, 429);
    } finally {
      await other.close();
    }
  });

  test('CONTRACT: the window passes and sign-in works again', async () => {
    // The app's clock is the test's: the window passes without waiting for it.
    let now = Date.now();
    const short = await startApp(
      store,
      'b',
      { throttle: { ...throttle, windowMs: 1000 } },
      { clock: () => now },
    );
    try {
      const u = await register(short);
      for (let i = 0; i < throttle.perAccountAddress; i++)
        await from(short, '10.5.0.1', { email: u.email, password: WRONG });
      assert.equal((await from(short, '10.5.0.1', { email: u.email, password: u.password })).statusCode, 429);
      now += 1100;
      assert.equal((await from(short, '10.5.0.1', { email: u.email, password: u.password })).statusCode, 200);
    } finally {
      await short.close();
    }
  });

  test('CONTRACT: the client address is the socket’s; X-Forwarded-For is ignored without a trusted proxy', async () => {
    const u = await register(b);
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      await b.inject({
        method: 'POST',
        url: '/api/signin',
        remoteAddress: '10.6.0.1',
        headers: { 'x-forwarded-for': `192.0.2.${i}` },
        payload: { email: u.email, password: WRONG },
      });
    }
    assert.equal((await from(b, '10.6.0.1', { email: u.email, password: u.password })).statusCode, 429);
  });

  test('CONTRACT: with TRUST_PROXY, the forwarded address counts', async () => {
    const proxied = await startApp(store, 'b', { throttle, trustProxy: ['10.7.0.1'] });
    try {
      const u = await register(proxied);
      const via = (client: string, password: string) =>
        proxied.inject({
          method: 'POST',
          url: '/api/signin',
          remoteAddress: '10.7.0.1',
          headers: { 'x-forwarded-for': client },
          payload: { email: u.email, password },
        });
      for (let i = 0; i < throttle.perAccountAddress; i++) await via('198.51.100.1', WRONG);
      assert.equal((await via('198.51.100.1', u.password)).statusCode, 429);
      assert.equal(
        (await via('198.51.100.2', u.password)).statusCode,
        200,
        'another client behind the proxy is not blocked',
      );
    } finally {
      await proxied.close();
    }
  });
});

describeEachStore('Password policy, headers and races', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
  });
  after(() => t.close());

  test('ISSUE 5: common passwords are refused case-insensitively and after NFKC, with a message saying why', async () => {
    for (const password of [
      'password',
      'PASSWORD',
      'Qwertyuiop',
      'iloveyou',
      '１２３４５６７８',
      'P@ssw0rd',
    ]) {
      const res = await t.post('/api/users', newUser({ password }));
      assert.equal(res.statusCode, 400, password);
      assert.equal(res.json().error, 'VALIDATION_FAILED');
      assert.match(res.json().message, /^password: .*common/);
    }
    assert.equal(
      (await t.post('/api/users', newUser({ password: 'correct horse battery staple' }))).statusCode,
      201,
    );
  });

  test('ISSUE 5: a password change to a common password is refused too', async () => {
    const u = await register(t);
    const me = asUser(t, await signIn(t, u));
    const res = await me.put(`/api/users/${u.id}`, {
      email: u.email,
      name: u.name,
      password: 'letmein1',
      currentPassword: u.password,
    });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().message, /^password: /);
  });

  test('ISSUE 5: security headers on every response: nosniff, CSP, no version banner', async () => {
    for (const res of [
      await t.get('/api/users/1'),
      await t.get('/nope'),
      await t.post('/api/signin', { email: 'x@example.com', password: 'whatever-1' }),
      await t.get('/api/products'),
      await t.post('/api/users', '{bad'),
    ]) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
      assert.equal(res.headers['x-powered-by'], undefined);
      assert.equal(res.headers.server, undefined);
      assert.equal(res.headers['strict-transport-security'], undefined, 'no HSTS over plain http');
    }
  });

  test('ISSUE 5: HSTS only over https (here: https terminated at a trusted proxy), and the cookie is Secure there', async () => {
    const proxied = await startApp(store, 'b', { trustProxy: ['127.0.0.1'] });
    try {
      const u = await register(proxied);
      const res = await proxied.inject({
        method: 'POST',
        url: '/api/signin',
        headers: { 'x-forwarded-proto': 'https', 'content-type': 'application/json' },
        payload: { email: u.email, password: u.password },
      });
      assert.equal(res.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains');
      assert.match(String(res.headers['set-cookie']), /; Secure/);
      const plain = await proxied.get('/api/products');
      assert.equal(plain.headers['strict-transport-security'], undefined);
    } finally {
      await proxied.close();
    }
  });

  test('ISSUE 5: Cache-Control no-store on everything about accounts and sessions', async () => {
    const u = await register(t);
    for (const res of [
      await t.get(`/api/users/${u.id}`),
      await t.get('/api/users'),
      await t.post('/api/users', newUser()),
      await t.post('/api/signin', { email: u.email, password: u.password }),
      await t.post('/api/signin', { email: u.email, password: WRONG }),
      await t.inject({ method: 'POST', url: '/api/signout' }),
    ]) {
      assert.equal(res.headers['cache-control'], 'no-store', res.raw.req.url);
    }
  });

  test('ISSUE 5: CORS is off by default: no Access-Control headers, preflight not served', async () => {
    const res = await t.inject({
      method: 'GET',
      url: '/api/products',
      headers: { origin: 'https://app.example.com' },
    });
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const preflight = await t.inject({
      method: 'OPTIONS',
      url: '/api/products',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });

  test('ISSUE 5: CORS_ORIGINS allows listed origins, with credentials, and no others', async () => {
    const cors = await startApp(store, 'b', { corsOrigins: ['https://app.example.com'] });
    try {
      const listed = await cors.inject({
        method: 'OPTIONS',
        url: '/api/products',
        headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
      });
      assert.equal(listed.headers['access-control-allow-origin'], 'https://app.example.com');
      assert.equal(listed.headers['access-control-allow-credentials'], 'true');
      const other = await cors.inject({
        method: 'GET',
        url: '/api/products',
        headers: { origin: 'https://evil.example.com' },
      });
      assert.equal(other.headers['access-control-allow-origin'], undefined);
      // A listed origin may write with the session cookie (the CSRF check accepts it).
      const u = await register(cors);
      const token = await signIn(cors, u);
      const write = await cors.inject({
        method: 'POST',
        url: '/api/products',
        headers: {
          origin: 'https://app.example.com',
          cookie: `usher_session=${token}`,
          'content-type': 'application/json',
        },
        payload: { name: 'x', price: 1 },
      });
      assert.equal(write.statusCode, 201);
    } finally {
      await cors.close();
    }
  });

  test('ISSUE 5: forty simultaneous registrations of one email give exactly one 201 and 39 409s', async () => {
    const body = newUser();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t.post('/api/users', { ...body, email: i % 2 ? body.email.toUpperCase() : body.email }),
      ),
    );
    const statuses = results.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [201, ...Array(39).fill(409)]);
  });

  test('ISSUE 5: simultaneous email changes to one address leave exactly one owner', async () => {
    const target = newUser().email;
    const users = await Promise.all(Array.from({ length: 6 }, () => register(t)));
    const results = await Promise.all(
      users.map(async (u) =>
        asUser(t, await signIn(t, u)).put(`/api/users/${u.id}`, {
          email: target,
          name: u.name,
          currentPassword: u.password,
        }),
      ),
    );
    const statuses = results.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, 409, 409, 409, 409, 409]);
  });

  test('CONTRACT: a request body over 1 MiB is 413 PAYLOAD_TOO_LARGE (sign-in: SIGNIN_FAILED)', async () => {
    const big = JSON.stringify({ ...newUser(), name: 'x'.repeat(1024 * 1024) });
    const reg = await t.post('/api/users', big);
    assert.equal(reg.statusCode, 413);
    assert.equal(reg.json().error, 'PAYLOAD_TOO_LARGE');
    const signin = await t.post(
      '/api/signin',
      JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(1024 * 1024) }),
    );
    assert.equal(signin.statusCode, 413);
    assert.equal(signin.json().error, 'SIGNIN_FAILED');
  });
});

test('config: throttle, proxy and CORS settings are validated', async () => {
  const { ConfigError } = await import('../../src/config.ts');
  assert.throws(() => loadConfig({ TRUST_PROXY: 'not an ip' }), ConfigError);
  assert.throws(() => loadConfig({ CORS_ORIGINS: 'app.example.com' }), ConfigError);
  assert.throws(() => loadConfig({ SIGNIN_MAX_FAILURES_PER_ACCOUNT: '0' }), ConfigError);
  const c = loadConfig({
    TRUST_PROXY: '10.0.0.1, 192.168.0.0/16',
    CORS_ORIGINS: 'https://a.example,http://localhost:5173',
  });
  assert.deepEqual(c.trustProxy, ['10.0.0.1', '192.168.0.0/16']);
  assert.deepEqual(c.corsOrigins, ['https://a.example', 'http://localhost:5173']);
  assert.deepEqual(testConfig({ kind: 'sqlite', url: 'sqlite::memory:' }, 'a').throttle, {
    windowMs: 900_000,
    perAccountAddress: 10,
    perAccount: 100,
    perAddress: 100,
    concurrentPerAccount: 4,
    concurrentPerAddress: 8,
    deviceTtlMs: 180 * 24 * 3600 * 1000,
  });
  assert.throws(() => loadConfig({ SIGNIN_MAX_CONCURRENT_PER_ACCOUNT: '0' }), ConfigError);
  assert.throws(() => loadConfig({ HASH_QUEUE_LIMIT: 'many' }), ConfigError);
  assert.equal(loadConfig({ HASH_QUEUE_LIMIT: '7' }).passwordHash.queueLimit, 7);
});

describeEachStore('Background housekeeping', (store) => {
  test('ISSUE 5: expired sign-in failures and sessions are purged by housekeeping, not by requests', async () => {
    const { compose } = await import('../../src/features.ts');
    const { openTestDatabase } = await import('../helpers/db.ts');
    const t = await startApp(store, 'b'); // migrates the fresh database
    const database = openTestDatabase(store);
    try {
      const config = testConfig(store, 'b', {
        throttle: { ...loadConfig({}).throttle, windowMs: 1000 },
        session: { absoluteTtlMs: 1000, idleTtlMs: 1000, cookieSecure: 'auto' },
      });
      // The services' clock is the test's: the window and the sessions expire without waiting.
      let now = Date.now();
      const services = compose(config, database, { now: () => now });
      const u = await register(t);
      const failed = async () => {
        const verdict = await services.throttle.throttle.begin('someone@example.com', '10.9.9.9');
        assert.ok(verdict.allowed);
        await verdict.attempt.failed();
      };
      await failed();
      await failed();
      await services.sessions.sessions.start(u.id);
      now += 1100;
      await housekeeping(services);
      const failures = await database.db.selectFrom('signin_attempts').select('account_digest').execute();
      assert.equal(failures.length, 0, 'failures older than the window are gone');
      const sessions = await database.db.selectFrom('sessions').select('user_id').execute();
      assert.equal(sessions.length, 0, 'expired sessions are gone');
    } finally {
      await database.close();
      await t.close();
    }
  });
});
