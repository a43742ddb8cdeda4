// Sessions (CONTRACT "Beyond the spec"): the cookie set at sign-in, the same token as a Bearer
// header, hashing at rest, sign-out, expiry, cross-site protection and revocation.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig, type Profile } from '../../src/config.ts';
import {
  asUser,
  leaksSecret,
  profileApps,
  register,
  sessionToken,
  startApp,
  type TestApp,
} from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

const DEFAULT_SESSION = loadConfig({}).session;
const PRODUCT = { name: 'x', price: 1 };
const HOST = 'usher.example:3000';

function setCookies(res: LightMyRequestResponse): string[] {
  return ([] as string[]).concat(res.headers['set-cookie'] ?? []);
}

/** The one session Set-Cookie header of a response (asserts there is exactly one). */
function sessionCookie(res: LightMyRequestResponse): string {
  const cookies = setCookies(res).filter((c) => c.startsWith('usher_session='));
  assert.equal(cookies.length, 1, `one session Set-Cookie expected, got ${JSON.stringify(setCookies(res))}`);
  return cookies[0]!;
}

function tokenOf(res: LightMyRequestResponse): string {
  const token = sessionToken(sessionCookie(res));
  assert.ok(token, 'the cookie carries a token');
  return token;
}

/** The cookie's attributes, lower-cased names, in order (the name=value pair left out). */
function attributes(cookie: string): string[] {
  return cookie
    .split(';')
    .slice(1)
    .map((part) => part.trim());
}

async function signIn(t: TestApp, user: { email: string; password: string }, headers = {}) {
  const res = await t.post('/api/signin', { email: user.email, password: user.password }, headers);
  assert.equal(res.statusCode, 200, res.body);
  return tokenOf(res);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** POST /api/products with the given headers (a cookie, a Bearer token, Origin, …). */
function createProduct(t: TestApp, headers: Record<string, string>, payload = JSON.stringify(PRODUCT)) {
  return t.inject({
    method: 'POST',
    url: '/api/products',
    headers: { 'content-type': 'application/json', ...headers },
    payload,
  });
}

const withCookie = (token: string, extra: Record<string, string> = {}) => ({
  cookie: `usher_session=${token}`,
  ...extra,
});
const withBearer = (token: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  ...extra,
});

function assertUnauthenticated(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 401, `${what}: ${res.body}`);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], what);
  assert.equal(body.error, 'UNAUTHENTICATED', what);
  assert.equal(typeof body.message, 'string', what);
}

function assertForbidden(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 403, `${what}: ${res.body}`);
  assert.equal(res.json().error, 'FORBIDDEN', what);
  assert.equal(typeof res.json().message, 'string', what);
}

async function productCount(t: TestApp): Promise<number> {
  const res = await t.get('/api/products');
  assert.equal(res.statusCode, 200);
  return Number(res.headers['x-total-count']);
}

describeEachStore('Sessions', (store) => {
  const { a, b } = profileApps(store);
  const apps: Array<{ name: Profile; app: () => TestApp }> = [
    { name: 'a', app: () => a },
    { name: 'b', app: () => b },
  ];

  for (const p of apps) {
    test(`CONTRACT (${p.name}): a successful sign-in sets an opaque HttpOnly SameSite=Lax Path=/ session cookie`, async () => {
      const t = p.app();
      const u = await register(t);
      const res = await t.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 200);
      const cookie = sessionCookie(res);
      assert.match(cookie, /^usher_session=[A-Za-z0-9_-]+; /);
      const attrs = attributes(cookie);
      assert.deepEqual(
        attrs.map((x) => x.split('=')[0]!.toLowerCase()).sort(),
        ['httponly', 'max-age', 'path', 'samesite'],
        cookie,
      );
      assert.ok(attrs.includes('Path=/'), cookie);
      assert.ok(attrs.includes('HttpOnly'), cookie);
      assert.ok(attrs.includes('SameSite=Lax'), cookie);
      assert.ok(
        attrs.includes(`Max-Age=${Math.floor(DEFAULT_SESSION.absoluteTtlMs / 1000)}`),
        `Max-Age is the absolute lifetime: ${cookie}`,
      );
      assert.ok(!/;\s*secure/i.test(cookie), `no Secure over plain http: ${cookie}`);
      assert.equal(leaksSecret(cookie, [u.password]), false);
    });

    test(`CONTRACT (${p.name}): the sign-in response body is unchanged by the session`, async () => {
      const t = p.app();
      const u = await register(t);
      const res = await t.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 200);
      const body = res.json();
      if (p.name === 'a') {
        assert.deepEqual(body, { id: Number(u.id), email: u.email, name: u.name });
      } else {
        assert.deepEqual(Object.keys(body), ['user']);
        assert.deepEqual(Object.keys(body.user).sort(), [
          'createdAt',
          'email',
          'emailVerified',
          'id',
          'name',
        ]);
      }
      assert.ok(!res.body.includes(tokenOf(res)), 'the token is not in the body');
      assert.equal(leaksSecret(res.body, [u.password]), false);
    });

    test(`CONTRACT (${p.name}): a failed sign-in sets no cookie`, async () => {
      const t = p.app();
      const u = await register(t);
      for (const body of [
        { email: u.email, password: 'wrong-password' },
        { email: `ghost.${u.email}`, password: u.password },
        {},
      ]) {
        const res = await t.post('/api/signin', body);
        assert.equal(res.statusCode, 401, JSON.stringify(body));
        assert.deepEqual(setCookies(res), [], JSON.stringify(body));
      }
      const malformed = await t.post('/api/signin', '[]');
      assert.equal(malformed.statusCode, 400);
      assert.deepEqual(setCookies(malformed), []);
    });

    test(`CONTRACT (${p.name}): the same token works as the cookie and as Authorization: Bearer`, async () => {
      const t = p.app();
      const u = await register(t);
      const token = await signIn(t, u);
      const byCookie = await createProduct(t, withCookie(token));
      assert.equal(byCookie.statusCode, 201, byCookie.body);
      assert.equal(byCookie.json().ownerId, Number(u.id));
      const byBearer = await createProduct(t, withBearer(token));
      assert.equal(byBearer.statusCode, 201, byBearer.body);
      assert.equal(byBearer.json().ownerId, Number(u.id));
    });

    test(`CONTRACT (${p.name}): POST /api/signout answers 204, clears the cookie and ends the session`, async () => {
      const t = p.app();
      const u = await register(t);
      const token = await signIn(t, u);
      const res = await t.inject({ method: 'POST', url: '/api/signout', headers: withBearer(token) });
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');
      const cookie = sessionCookie(res);
      assert.match(cookie, /^usher_session=;/);
      assert.ok(attributes(cookie).includes('Max-Age=0'), cookie);
      assert.ok(attributes(cookie).includes('Path=/'), cookie);
      assertUnauthenticated(await createProduct(t, withBearer(token)), 'bearer after sign-out');
      assertUnauthenticated(await createProduct(t, withCookie(token)), 'cookie after sign-out');
    });
  }

  test('CONTRACT: X-Forwarded-Proto does not make the cookie Secure without a trusted proxy', async () => {
    const u = await register(b);
    const res = await b.post(
      '/api/signin',
      { email: u.email, password: u.password },
      { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' },
    );
    assert.equal(res.statusCode, 200);
    assert.ok(!/;\s*secure/i.test(sessionCookie(res)), sessionCookie(res));
  });

  test("CONTRACT: with session.cookieSecure 'always' the session cookie is Secure (and so is its clearing)", async () => {
    const secure = await startApp(store, 'b', { session: { ...DEFAULT_SESSION, cookieSecure: 'always' } });
    try {
      const u = await register(secure);
      const res = await secure.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 200);
      const cookie = sessionCookie(res);
      assert.ok(attributes(cookie).includes('Secure'), cookie);
      assert.ok(attributes(cookie).includes('HttpOnly'), cookie);
      assert.ok(attributes(cookie).includes('SameSite=Lax'), cookie);
      const out = await secure.inject({
        method: 'POST',
        url: '/api/signout',
        headers: withBearer(tokenOf(res)),
      });
      assert.equal(out.statusCode, 204);
      assert.ok(attributes(sessionCookie(out)).includes('Secure'), sessionCookie(out));
    } finally {
      await secure.close();
    }
  });

  test('CONTRACT: a successful sign-in answers Cache-Control: no-store', async () => {
    const u = await register(a);
    for (const t of [a, b]) {
      const res = await t.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
    }
  });

  test('CONTRACT: tokens have at least 128 bits and every sign-in gives a different one', async () => {
    const u = await register(b);
    const tokens = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const token = await signIn(b, u);
      assert.match(token, /^[A-Za-z0-9_-]{22,}$/, 'base64url, at least 22 characters (128 bits)');
      tokens.add(token);
    }
    assert.equal(tokens.size, 5);
    for (const token of tokens) {
      assert.equal((await createProduct(b, withBearer(token))).statusCode, 201, 'every session is live');
    }
  });

  test('CONTRACT: an authenticated write without a session is 401 UNAUTHENTICATED', async () => {
    assertUnauthenticated(await createProduct(b, {}), 'no credentials');
    assertUnauthenticated(await createProduct(a, {}), 'no credentials (a)');
  });

  test('CONTRACT: a garbage or unknown token is 401 UNAUTHENTICATED', async () => {
    const unknown = randomBytes(32).toString('base64url');
    const cases: Array<[string, Record<string, string>]> = [
      ['an unknown Bearer token', withBearer(unknown)],
      ['an unknown cookie', withCookie(unknown)],
      ['a Bearer token with bad characters', { authorization: `Bearer ${'!'.repeat(43)}` }],
      ['a Bearer header with spaces', { authorization: 'Bearer not a token' }],
      ['an empty Bearer header', { authorization: 'Bearer ' }],
      [
        'a Basic header',
        { authorization: `Basic ${Buffer.from('a@b.example:password').toString('base64')}` },
      ],
      ['an empty cookie', { cookie: 'usher_session=' }],
      ['a garbage cookie', { cookie: 'usher_session=%00%zz;;' }],
      ['a cookie of another name', { cookie: `other_session=${unknown}` }],
    ];
    for (const [what, headers] of cases) assertUnauthenticated(await createProduct(b, headers), what);
  });

  test('CONTRACT: only a SHA-256 of the token is stored, never the token itself', async () => {
    const u = await register(b);
    const token = await signIn(b, u);
    const database = openTestDatabase(store);
    try {
      const rows = await database.db.selectFrom('sessions').selectAll().where('user_id', '=', u.id).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.token_hash, sha256(token));
      const everything = JSON.stringify(
        await database.db.selectFrom('sessions').selectAll().execute(),
        (_k, v) => (typeof v === 'bigint' ? String(v) : v),
      );
      assert.ok(!everything.includes(token), 'the raw token is in no session row');
      assert.ok(
        !everything.includes(Buffer.from(token, 'base64url').toString('hex')),
        'nor its bytes in hex',
      );
    } finally {
      await database.close();
    }
  });

  test('CONTRACT: sign-out works with the cookie, and ends only that session', async () => {
    const u = await register(b);
    const first = await signIn(b, u);
    const second = await signIn(b, u);
    const res = await b.inject({ method: 'POST', url: '/api/signout', headers: withCookie(first) });
    assert.equal(res.statusCode, 204);
    assert.ok(attributes(sessionCookie(res)).includes('Max-Age=0'), sessionCookie(res));
    assertUnauthenticated(await createProduct(b, withCookie(first)), 'the signed-out cookie');
    assert.equal((await createProduct(b, withBearer(second))).statusCode, 201, 'the other session stays');
  });

  test('CONTRACT: signing out with no session, or an unknown one, is still 204 and clears the cookie', async () => {
    for (const headers of [{}, withBearer(randomBytes(32).toString('base64url')), withCookie('garbage')]) {
      const res = await b.inject({ method: 'POST', url: '/api/signout', headers });
      assert.equal(res.statusCode, 204, JSON.stringify(headers));
      assert.ok(attributes(sessionCookie(res)).includes('Max-Age=0'), sessionCookie(res));
    }
  });

  // Both lifetimes are tested on a clock the test moves (passed to the app), so nothing sleeps
  // and a loaded machine cannot stretch a gap.
  const MINUTE = 60_000;

  test('CONTRACT: a session ends at its absolute lifetime even while it is used', async () => {
    let now = Date.now();
    const short = await startApp(
      store,
      'b',
      { session: { absoluteTtlMs: 10 * MINUTE, idleTtlMs: 24 * 60 * MINUTE, cookieSecure: 'auto' } },
      { clock: () => now },
    );
    try {
      const u = await register(short);
      const res = await short.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 200);
      assert.ok(attributes(sessionCookie(res)).includes('Max-Age=600'), sessionCookie(res));
      const token = tokenOf(res);
      // Used every minute while the lifetime lasts ...
      for (let minute = 1; minute <= 9; minute++) {
        now += MINUTE;
        assert.equal((await createProduct(short, withBearer(token))).statusCode, 201, `minute ${minute}`);
      }
      // ... and refused once it is over, however recently it was used.
      now += MINUTE;
      assertUnauthenticated(await createProduct(short, withBearer(token)), 'at the absolute lifetime');
      assertUnauthenticated(await createProduct(short, withCookie(token)), 'as a cookie too');
    } finally {
      await short.close();
    }
  });

  test('CONTRACT: a session unused for longer than the idle lifetime ends; one in use stays', async () => {
    let now = Date.now();
    const idle = await startApp(
      store,
      'b',
      { session: { absoluteTtlMs: 24 * 60 * MINUTE, idleTtlMs: 10 * MINUTE, cookieSecure: 'auto' } },
      { clock: () => now },
    );
    try {
      const u = await register(idle);
      const unused = await signIn(idle, u);
      const used = await signIn(idle, u);
      // The used one: a request every 3 minutes, for 15 minutes, past the idle lifetime.
      for (let minute = 3; minute <= 15; minute += 3) {
        now += 3 * MINUTE;
        assert.equal((await createProduct(idle, withBearer(used))).statusCode, 201, `minute ${minute}`);
      }
      assertUnauthenticated(await createProduct(idle, withBearer(unused)), 'after the idle lifetime');
      assert.equal((await createProduct(idle, withBearer(used))).statusCode, 201, 'the used one still works');
      // And the used one too, once it rests longer than the idle lifetime.
      now += 10 * MINUTE;
      assertUnauthenticated(await createProduct(idle, withBearer(used)), 'after resting');
    } finally {
      await idle.close();
    }
  });

  test('CONTRACT: a cookie-authenticated write from another origin is 403 FORBIDDEN', async () => {
    const u = await register(b);
    const token = await signIn(b, u);
    const before = await productCount(b);
    const cases: Array<[string, Record<string, string>]> = [
      ['Origin of another site', { host: HOST, origin: 'https://evil.example' }],
      ['Origin of another port of the same host', { host: HOST, origin: 'http://usher.example:4000' }],
      ['Origin null', { host: HOST, origin: 'null' }],
      ['Sec-Fetch-Site: cross-site', { host: HOST, 'sec-fetch-site': 'cross-site' }],
      [
        'Sec-Fetch-Site: cross-site with a same Origin',
        { host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'cross-site' },
      ],
    ];
    for (const [what, headers] of cases)
      assertForbidden(await createProduct(b, withCookie(token, headers)), what);
    assert.equal(await productCount(b), before, 'nothing was created');
    // The refusal does not end the session.
    assert.equal((await createProduct(b, withCookie(token, { host: HOST }))).statusCode, 201);
  });

  test('CONTRACT: a cookie-authenticated write from our own origin works', async () => {
    const u = await register(b);
    const token = await signIn(b, u);
    for (const headers of [
      { host: HOST, origin: `http://${HOST}` },
      { host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' },
      { host: HOST, 'sec-fetch-site': 'same-origin' },
      { host: HOST, 'sec-fetch-site': 'none' },
      { host: HOST },
    ] as Array<Record<string, string>>) {
      const res = await createProduct(b, withCookie(token, headers));
      assert.equal(res.statusCode, 201, `${JSON.stringify(headers)}: ${res.body}`);
    }
  });

  test('CONTRACT: a Bearer-authenticated write from another origin works (bearer tokens are not ambient)', async () => {
    const u = await register(b);
    const token = await signIn(b, u);
    for (const headers of [
      { host: HOST, origin: 'https://evil.example' },
      { host: HOST, 'sec-fetch-site': 'cross-site' },
    ] as Array<Record<string, string>>) {
      const res = await createProduct(b, withBearer(token, headers));
      assert.equal(res.statusCode, 201, `${JSON.stringify(headers)}: ${res.body}`);
    }
  });

  test('CONTRACT: a write body a form could send (text/plain, urlencoded, multipart) is 415', async () => {
    const u = await register(b);
    const token = await signIn(b, u);
    const before = await productCount(b);
    for (const [type, payload] of [
      ['text/plain', JSON.stringify(PRODUCT)],
      ['text/plain; charset=utf-8', JSON.stringify(PRODUCT)],
      ['application/x-www-form-urlencoded', 'name=x&price=1'],
      [
        'multipart/form-data; boundary=xyz',
        '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--xyz--\r\n',
      ],
    ] as const) {
      const res = await createProduct(b, withCookie(token, { host: HOST, 'content-type': type }), payload);
      assert.equal(res.statusCode, 415, `${type}: ${res.body}`);
      assert.equal(res.json().error, 'UNSUPPORTED_MEDIA_TYPE', type);
    }
    assert.equal(await productCount(b), before, 'nothing was created');
  });

  for (const p of apps) {
    test(`CONTRACT (${p.name}): changing the password ends the user's other sessions, not the one that changed it`, async () => {
      const t = p.app();
      const u = await register(t);
      const changer = await signIn(t, u);
      const other = await signIn(t, u);
      const newPassword = `${u.password}-new`;
      const res = await asUser(t, changer).put(`/api/users/${u.id}`, {
        email: u.email,
        name: u.name,
        password: newPassword,
        currentPassword: u.password,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(leaksSecret(res.body, [u.password, newPassword]), false);
      assertUnauthenticated(await createProduct(t, withBearer(other)), 'the other session');
      assertUnauthenticated(await createProduct(t, withCookie(other)), 'the other session as a cookie');
      assert.equal((await createProduct(t, withBearer(changer))).statusCode, 201, 'the changing session');
      const fresh = await signIn(t, { email: u.email, password: newPassword });
      assert.equal((await createProduct(t, withBearer(fresh))).statusCode, 201, 'a new sign-in works');
    });
  }

  test('CONTRACT: changing only the name (or email) ends no session', async () => {
    const u = await register(b);
    const changer = await signIn(b, u);
    const other = await signIn(b, u);
    const res = await asUser(b, changer).put(`/api/users/${u.id}`, {
      email: u.email.toUpperCase(),
      name: `${u.name} renamed`,
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await createProduct(b, withBearer(other))).statusCode, 201, 'the other session');
    assert.equal((await createProduct(b, withBearer(changer))).statusCode, 201, 'the changing session');
  });

  test('CONTRACT: deleting the user ends all their sessions', async () => {
    const u = await register(b);
    const deleter = await signIn(b, u);
    const other = await signIn(b, u);
    const bystander = await register(b);
    const bystanderToken = await signIn(b, bystander);
    const res = await b.inject({ method: 'DELETE', url: `/api/users/${u.id}`, headers: withCookie(deleter) });
    assert.equal(res.statusCode, 204, res.body);
    assert.ok(attributes(sessionCookie(res)).includes('Max-Age=0'), 'the cookie is cleared');
    for (const token of [deleter, other]) {
      assertUnauthenticated(await createProduct(b, withBearer(token)), 'bearer of the deleted user');
      assertUnauthenticated(await createProduct(b, withCookie(token)), 'cookie of the deleted user');
    }
    assert.equal(
      (await createProduct(b, withBearer(bystanderToken))).statusCode,
      201,
      "others' sessions stay",
    );
    const database = openTestDatabase(store);
    try {
      const rows = await database.db
        .selectFrom('sessions')
        .select('token_hash')
        .where('user_id', '=', u.id)
        .execute();
      assert.deepEqual(rows, [], 'no session row is left');
    } finally {
      await database.close();
    }
  });
});
