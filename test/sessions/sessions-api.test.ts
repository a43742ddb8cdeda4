// The signed-in user and their sessions (CONTRACT "The signed-in user and their sessions", and
// "Account security" for POST /api/sessions): GET /api/session, GET /api/sessions,
// DELETE /api/sessions/{id}, DELETE /api/sessions and token sign-in without a cookie.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import type { Clock } from '../../src/sessions/service.ts';
import {
  leaksSecret,
  profileApps,
  register,
  sessionToken,
  signIn,
  startApp,
  type TestApp,
} from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';

const DEFAULT_SESSION = loadConfig({}).session;
const MINUTE = 60_000;
const USER_KEYS: Record<Profile, string[]> = {
  a: ['email', 'id', 'name'],
  b: ['createdAt', 'email', 'emailVerified', 'id', 'name'],
};
const LISTED_KEYS = ['createdAt', 'current', 'expiresAt', 'id', 'lastSeenAt', 'userAgent'];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const bearer = (token: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  ...extra,
});

function setCookies(res: LightMyRequestResponse): string[] {
  return ([] as string[]).concat(res.headers['set-cookie'] ?? []);
}

const getSession = (t: TestApp, headers: Record<string, string>) =>
  t.inject({ method: 'GET', url: '/api/session', headers });
const listSessions = (t: TestApp, token: string) =>
  t.inject({ method: 'GET', url: '/api/sessions', headers: bearer(token) });
const endSession = (t: TestApp, token: string, id: string, extra: Record<string, string> = {}) =>
  t.inject({ method: 'DELETE', url: `/api/sessions/${id}`, headers: bearer(token, extra) });
const endOthers = (t: TestApp, token: string) =>
  t.inject({ method: 'DELETE', url: '/api/sessions', headers: bearer(token) });

/** Signs in with a User-Agent (undefined: none at all) and returns the session token. */
async function signInAs(
  t: TestApp,
  user: { email: string; password: string },
  userAgent: string | undefined,
) {
  const res = await t.inject({
    method: 'POST',
    url: '/api/signin',
    // light-my-request sends its own User-Agent unless the header is given as undefined.
    headers: { 'content-type': 'application/json', 'user-agent': userAgent } as Record<string, string>,
    payload: JSON.stringify({ email: user.email, password: user.password }),
  });
  assert.equal(res.statusCode, 200, res.body);
  const token = sessionToken(res.headers['set-cookie']);
  assert.ok(token);
  return token;
}

/** POST /api/sessions with the right credentials: 201, and its body. */
async function tokenSignIn(
  t: TestApp,
  user: { email: string; password: string },
  headers: Record<string, string> = {},
): Promise<{
  res: LightMyRequestResponse;
  token: string;
  session: { id: string; createdAt: string; expiresAt: string };
  user: Record<string, unknown>;
}> {
  const res = await t.post('/api/sessions', { email: user.email, password: user.password }, headers);
  assert.equal(res.statusCode, 201, res.body);
  return { res, ...res.json() };
}

/** The session's public id, as GET /api/session shows it. */
async function idOf(t: TestApp, token: string): Promise<string> {
  const res = await getSession(t, bearer(token));
  assert.equal(res.statusCode, 200, res.body);
  return res.json().session.id;
}

async function isLive(t: TestApp, token: string): Promise<boolean> {
  const res = await getSession(t, bearer(token));
  assert.ok(res.statusCode === 200 || res.statusCode === 401, res.body);
  return res.statusCode === 200;
}

function assertUnauthenticated(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 401, `${what}: ${res.body}`);
  assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
  assert.equal(res.json().error, 'UNAUTHENTICATED', what);
}

/** An app whose session and throttle clock the test moves. */
async function clockedApp(store: Store, session: Partial<Config['session']> = {}) {
  const clock = { now: Date.now() };
  const now: Clock = () => clock.now;
  const t = await startApp(store, 'b', { session: { ...DEFAULT_SESSION, ...session } }, { clock: now });
  return { t, clock };
}

describeEachStore('The signed-in user and their sessions', (store) => {
  const { a, b } = profileApps(store);
  const apps: Array<{ name: Profile; app: () => TestApp }> = [
    { name: 'a', app: () => a },
    { name: 'b', app: () => b },
  ];

  describe('GET /api/session', () => {
    for (const p of apps) {
      test(`CONTRACT (${p.name}): answers the user in the profile's shape and the session making the request`, async () => {
        const t = p.app();
        const u = await register(t);
        const token = await signIn(t, u);
        const res = await getSession(t, bearer(token));
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['cache-control'], 'no-store');
        const body = res.json();
        assert.deepEqual(Object.keys(body).sort(), ['session', 'user']);
        assert.deepEqual(Object.keys(body.user).sort(), USER_KEYS[p.name]);
        assert.equal(body.user.id, Number(u.id));
        assert.equal(body.user.email, u.email);
        assert.equal(body.user.name, u.name);
        assert.deepEqual(Object.keys(body.session).sort(), ['createdAt', 'expiresAt', 'id']);
        assert.match(body.session.createdAt, ISO);
        assert.match(body.session.expiresAt, ISO);
        assert.equal(
          Date.parse(body.session.expiresAt) - Date.parse(body.session.createdAt),
          DEFAULT_SESSION.absoluteTtlMs,
          'it expires one absolute lifetime after it started',
        );
        assert.equal(leaksSecret(res.body, [u.password]), false);
      });
    }

    test('CONTRACT: the session id is a public id, neither the token nor its hash, and one per session', async () => {
      const u = await register(b);
      const first = await signIn(b, u);
      const second = await signIn(b, u);
      const id = await idOf(b, first);
      assert.match(id, /^[0-9a-f]{32}$/);
      assert.notEqual(id, first);
      assert.notEqual(id, sha256(first));
      assert.ok(!sha256(first).includes(id) && !first.includes(id));
      assert.notEqual(await idOf(b, second), id, 'each session has its own id');
      assert.equal(await idOf(b, first), id, 'and keeps it');
    });

    test('CONTRACT: it shows the user as they are now, after a change through PUT', async () => {
      const u = await register(b);
      const token = await signIn(b, u);
      const put = await b.inject({
        method: 'PUT',
        url: `/api/users/${u.id}`,
        headers: bearer(token),
        payload: { email: u.email, name: 'Renamed Since' },
      });
      assert.equal(put.statusCode, 200, put.body);
      const res = await getSession(b, bearer(token));
      assert.equal(res.json().user.name, 'Renamed Since');
      assert.deepEqual(res.json().user, (await b.get(`/api/users/${u.id}`)).json());
    });

    test('CONTRACT: the cookie works as well as a Bearer token', async () => {
      const u = await register(b);
      const token = await signIn(b, u);
      const res = await getSession(b, { cookie: `usher_session=${token}` });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().session.id, await idOf(b, token));
    });

    test('CONTRACT: without a valid session it is 401 UNAUTHENTICATED, also no-store', async () => {
      for (const headers of [
        {},
        bearer(randomBytes(32).toString('base64url')),
        { cookie: `usher_session=${randomBytes(32).toString('base64url')}` },
      ] as Array<Record<string, string>>) {
        const res = await getSession(b, headers);
        assertUnauthenticated(res, JSON.stringify(headers));
        assert.equal(res.headers['cache-control'], 'no-store');
      }
    });

    test('ISSUE 13: reading the session writes last_seen_at at most once a minute, not on every request', async () => {
      const { t, clock } = await clockedApp(store);
      const database = openTestDatabase(store);
      const lastSeen = async (userId: bigint) => {
        const row = await database.db
          .selectFrom('sessions')
          .select('last_seen_at')
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        return row.last_seen_at.getTime();
      };
      try {
        const u = await register(t);
        const started = clock.now;
        const token = await signIn(t, u);
        assert.equal(await lastSeen(u.id), started);
        for (let i = 1; i <= 5; i++) {
          clock.now += 10_000;
          assert.equal((await getSession(t, bearer(token))).statusCode, 200);
        }
        assert.equal(await lastSeen(u.id), started, 'five reads in 50 s wrote nothing');
        clock.now += 10_000;
        assert.equal((await getSession(t, bearer(token))).statusCode, 200);
        assert.equal(await lastSeen(u.id), clock.now, 'the first read a minute on is written');
        const written = clock.now;
        clock.now += 1_000;
        assert.equal((await getSession(t, bearer(token))).statusCode, 200);
        assert.equal(await lastSeen(u.id), written, 'and then not again for a minute');
      } finally {
        await database.close();
        await t.close();
      }
    });
  });

  describe('GET /api/sessions', () => {
    test('ISSUE 15: at most the 100 newest sessions are listed, as the document says (maxItems)', async () => {
      const { t, clock } = await clockedApp(store);
      try {
        const u = await register(t);
        const tokens: string[] = [];
        for (let i = 0; i < 101; i++) {
          tokens.push((await tokenSignIn(t, u)).token);
          clock.now += 1_000;
        }
        const listed = (await listSessions(t, tokens[100]!)).json() as Array<{ id: string }>;
        assert.equal(listed.length, 100);
        const oldest = await idOf(t, tokens[0]!);
        assert.ok(!listed.some((s) => s.id === oldest), 'the oldest is the one left out');
        assert.equal(listed[0]!.id, await idOf(t, tokens[100]!), 'newest first');
      } finally {
        await t.close();
      }
    });

    test('CONTRACT: the live sessions, newest first, each with its times and User-Agent, the caller marked current', async () => {
      const { t, clock } = await clockedApp(store);
      try {
        const u = await register(t);
        const other = await register(t);
        await signIn(t, other); // someone else's session, never listed
        const firstAt = clock.now;
        const first = await signInAs(t, u, 'Agent/1 (first)');
        clock.now += 1_000;
        const second = await signInAs(t, u, undefined);
        clock.now += 1_000;
        const third = await signInAs(t, u, `Agent/3 ${'x'.repeat(400)}`);
        const res = await listSessions(t, second);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['cache-control'], 'no-store');
        const list = res.json() as Array<Record<string, unknown>>;
        assert.equal(list.length, 3, res.body);
        for (const s of list) assert.deepEqual(Object.keys(s).sort(), LISTED_KEYS);
        assert.deepEqual(
          list.map((s) => s.id),
          [await idOf(t, third), await idOf(t, second), await idOf(t, first)],
          'newest first',
        );
        assert.deepEqual(
          list.map((s) => s.current),
          [false, true, false],
          'only the caller is current',
        );
        assert.deepEqual(
          list.map((s) => s.userAgent),
          [`Agent/3 ${'x'.repeat(248)}`, null, 'Agent/1 (first)'],
          'the User-Agent it signed in with (up to 256 characters), or null',
        );
        const oldest = list[2]!;
        assert.equal(oldest.createdAt, new Date(firstAt).toISOString());
        assert.equal(oldest.lastSeenAt, new Date(firstAt).toISOString());
        assert.equal(oldest.expiresAt, new Date(firstAt + DEFAULT_SESSION.absoluteTtlMs).toISOString());
        // Another caller sees their own session marked current.
        const fromThird = (await listSessions(t, third)).json() as Array<{ current: boolean }>;
        assert.deepEqual(
          fromThird.map((s) => s.current),
          [true, false, false],
        );
        assert.ok(!res.body.includes(first) && !res.body.includes(sha256(first)), 'no token, no hash');
      } finally {
        await t.close();
      }
    });

    test('CONTRACT: sessions past their idle or absolute lifetime are not listed', async () => {
      const { t, clock } = await clockedApp(store, { absoluteTtlMs: 30 * MINUTE, idleTtlMs: 10 * MINUTE });
      try {
        const u = await register(t);
        const start = clock.now;
        const early = await signIn(t, u); // used every 3 minutes, until its absolute lifetime ends it
        const idle = await signIn(t, u); // never used again
        assert.equal((await listSessions(t, early)).json().length, 2, 'both listed at first');
        for (let minute = 3; minute <= 27; minute += 3) {
          clock.now = start + minute * MINUTE;
          assert.equal((await listSessions(t, early)).statusCode, 200, `minute ${minute}`);
        }
        const late = await signIn(t, u);
        const at27 = ((await listSessions(t, early)).json() as Array<{ id: string }>).map((s) => s.id);
        assert.deepEqual(at27, [await idOf(t, late), await idOf(t, early)], 'the idle one is gone');
        clock.now = start + 31 * MINUTE;
        const at31 = ((await listSessions(t, late)).json() as Array<{ id: string }>).map((s) => s.id);
        assert.deepEqual(at31, [await idOf(t, late)], 'and the one past its absolute lifetime');
        assert.equal(await isLive(t, idle), false);
        assert.equal(await isLive(t, early), false);
      } finally {
        await t.close();
      }
    });

    test('CONTRACT: without a session it is 401 UNAUTHENTICATED', async () => {
      assertUnauthenticated(await b.inject({ method: 'GET', url: '/api/sessions' }), 'anonymous');
    });
  });

  describe('DELETE /api/sessions/{id}', () => {
    test('CONTRACT: ends another of my sessions at once; mine goes on, no cookie is touched', async () => {
      const u = await register(b);
      const mine = await signIn(b, u);
      const other = await signIn(b, u);
      const otherId = await idOf(b, other);
      const res = await endSession(b, mine, otherId);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(setCookies(res), [], 'another session ended: the caller keeps their cookie');
      assert.equal(await isLive(b, other), false, 'the ended session is refused');
      assert.equal(await isLive(b, mine), true, 'the caller goes on');
      const ids = ((await listSessions(b, mine)).json() as Array<{ id: string }>).map((s) => s.id);
      assert.ok(!ids.includes(otherId), 'and it is no longer listed');
      // Ending it again: it is unknown now.
      assert.equal((await endSession(b, mine, otherId)).statusCode, 404);
    });

    test("CONTRACT: another user's session id is 404 NOT_FOUND, exactly like an unknown or malformed id, and that session goes on", async () => {
      const me = await register(b);
      const them = await register(b);
      const mine = await signIn(b, me);
      const theirs = await signIn(b, them);
      const theirId = await idOf(b, theirs);
      const answers: string[] = [];
      for (const id of [
        theirId,
        randomBytes(16).toString('hex'),
        'abc',
        theirId.toUpperCase(),
        `${theirId}0`,
        sha256(theirs),
        theirs,
      ]) {
        const res = await endSession(b, mine, id);
        assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
        assert.equal(res.json().error, 'NOT_FOUND');
        assert.equal(typeof res.json().message, 'string');
        assert.deepEqual(setCookies(res), []);
        answers.push(res.body);
      }
      assert.equal(
        new Set(answers).size,
        1,
        `one answer for all of them: ${[...new Set(answers)].join(' | ')}`,
      );
      assert.equal(await isLive(b, theirs), true, "the other user's session still works");
      assert.equal(await isLive(b, mine), true);
    });

    test('CONTRACT: ending the current session this way clears the cookie, and the token is refused after', async () => {
      const u = await register(b);
      const token = await signIn(b, u);
      const other = await signIn(b, u);
      const res = await b.inject({
        method: 'DELETE',
        url: `/api/sessions/${await idOf(b, token)}`,
        headers: { cookie: `usher_session=${token}` },
      });
      assert.equal(res.statusCode, 204, res.body);
      const cookies = setCookies(res);
      assert.equal(cookies.length, 1, JSON.stringify(cookies));
      assert.match(cookies[0]!, /^usher_session=;/);
      assert.match(cookies[0]!, /Max-Age=0/);
      assert.equal(await isLive(b, token), false);
      assert.equal(await isLive(b, other), true, 'only that one ended');
    });

    test('CONTRACT: a session ended on one instance is refused on another instance on the same database at once', async () => {
      const second = await startApp(store, 'b');
      try {
        const u = await register(b);
        const keeper = await signIn(b, u);
        const token = await signIn(second, u);
        assert.equal(await isLive(second, token), true, 'started on the second, live there');
        assert.equal(await isLive(b, token), true, 'and on the first');
        assert.equal((await endSession(b, keeper, await idOf(b, token))).statusCode, 204);
        assert.equal(await isLive(second, token), false, 'the second instance refuses it at once');
        assertUnauthenticated(
          await second.inject({ method: 'GET', url: '/api/sessions', headers: bearer(token) }),
          'on the second instance',
        );
      } finally {
        await second.close();
      }
    });

    test('CONTRACT: without a session it is 401; with a cookie from another site, 403 and nothing ends', async () => {
      const u = await register(b);
      const token = await signIn(b, u);
      const id = await idOf(b, token);
      assertUnauthenticated(await b.inject({ method: 'DELETE', url: `/api/sessions/${id}` }), 'anonymous');
      const crossSite = await b.inject({
        method: 'DELETE',
        url: `/api/sessions/${id}`,
        headers: { cookie: `usher_session=${token}`, origin: 'https://evil.example' },
      });
      assert.equal(crossSite.statusCode, 403, crossSite.body);
      assert.equal(crossSite.json().error, 'FORBIDDEN');
      assert.equal(await isLive(b, token), true);
    });
  });

  describe('DELETE /api/sessions', () => {
    test("CONTRACT: ends every session of mine but the caller's; other users' stay", async () => {
      const u = await register(b);
      const bystander = await register(b);
      const first = await signIn(b, u);
      const caller = await signIn(b, u);
      const { token: third } = await tokenSignIn(b, u);
      const theirs = await signIn(b, bystander);
      const res = await endOthers(b, caller);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assert.deepEqual(setCookies(res), [], 'the caller keeps their cookie');
      assert.equal(await isLive(b, caller), true, 'the caller goes on');
      assert.equal(await isLive(b, first), false);
      assert.equal(await isLive(b, third), false);
      assert.equal(await isLive(b, theirs), true, "another user's session stays");
      const list = (await listSessions(b, caller)).json() as Array<{ current: boolean }>;
      assert.deepEqual(
        list.map((s) => s.current),
        [true],
      );
      assert.equal((await endOthers(b, caller)).statusCode, 204, 'again: nothing left to end, still 204');
    });

    test('CONTRACT: without a session it is 401', async () => {
      assertUnauthenticated(await b.inject({ method: 'DELETE', url: '/api/sessions' }), 'anonymous');
    });
  });

  describe('POST /api/sessions (token sign-in)', () => {
    for (const p of apps) {
      test(`CONTRACT (${p.name}): 201 with the token, the session and the user in the profile's shape; no cookie`, async () => {
        const t = p.app();
        const u = await register(t);
        const { res, token, session, user } = await tokenSignIn(t, u);
        assert.equal(res.headers['cache-control'], 'no-store');
        assert.deepEqual(setCookies(res), [], 'no cookie is set');
        assert.deepEqual(Object.keys(res.json()).sort(), ['session', 'token', 'user']);
        assert.match(token, /^[A-Za-z0-9_-]{43}$/, '256 bits, base64url');
        assert.deepEqual(Object.keys(session).sort(), ['createdAt', 'expiresAt', 'id']);
        assert.deepEqual(Object.keys(user).sort(), USER_KEYS[p.name]);
        assert.equal(user.id, Number(u.id));
        assert.equal(leaksSecret(res.body, [u.password]), false);
        // The token works as a Bearer token, for that very session.
        const current = await getSession(t, bearer(token));
        assert.equal(current.statusCode, 200, current.body);
        assert.deepEqual(current.json().session, session);
        assert.deepEqual(current.json().user, user);
      });

      test(`CONTRACT (${p.name}): failures are {"error":"SIGNIN_FAILED","message"} with the sign-in statuses, never a cookie`, async () => {
        const t = p.app();
        const u = await register(t);
        const cases: Array<[string, string | object, number, Record<string, string>?]> = [
          ['a wrong password', { email: u.email, password: `${u.password}x` }, 401],
          ['an unknown email', { email: `nobody.${u.email}`, password: u.password }, 401],
          ['no fields', {}, 401],
          ['a body that is not an object', '[]', 400],
          ['a password that is not a string', { email: u.email, password: 12345678 }, 400],
          ['a code that is not a string', { email: u.email, password: u.password, code: 123456 }, 400],
          ['malformed JSON', '{"email":', 400],
          ['not JSON', 'email=x', 415, { 'content-type': 'text/plain' }],
        ];
        const messages = new Map<number, string>();
        for (const [what, body, status, headers] of cases) {
          const res = await t.post('/api/sessions', body, headers);
          assert.equal(res.statusCode, status, `${what}: ${res.body}`);
          assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
          assert.equal(res.json().error, 'SIGNIN_FAILED', what);
          assert.equal(typeof res.json().message, 'string', what);
          assert.deepEqual(setCookies(res), [], what);
          if (status === 401) {
            const seen = messages.get(401);
            if (seen) assert.equal(res.json().message, seen, 'one message whether or not the email exists');
            messages.set(401, res.json().message);
          }
        }
      });
    }

    test('CONTRACT: fields it does not use are ignored, a string code included (for now)', async () => {
      const u = await register(b);
      const res = await b.post('/api/sessions', {
        email: ` ${u.email.toUpperCase()} `,
        password: u.password,
        code: '123456',
        remember: true,
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().user.id, Number(u.id));
    });

    test('CONTRACT: the User-Agent it signed in with is shown in the session list', async () => {
      const u = await register(b);
      const { token } = await tokenSignIn(b, u, { 'user-agent': 'UsherMobile/2.1' });
      const list = (await listSessions(b, token)).json() as Array<{ current: boolean; userAgent: string }>;
      assert.deepEqual(
        list.map((s) => [s.current, s.userAgent]),
        [[true, 'UsherMobile/2.1']],
      );
    });

    test('CONTRACT: every attempt is audited like /api/signin: one signin line and metric with its outcome', async () => {
      const u = await register(b);
      const before = b.logs.length;
      await tokenSignIn(b, u);
      assert.equal(
        (await b.post('/api/sessions', { email: u.email, password: 'wrong-password-1' })).statusCode,
        401,
      );
      assert.equal((await b.post('/api/sessions', '[]')).statusCode, 400);
      const audit = b.logs
        .slice(before)
        .join('')
        .split('\n')
        .filter((line) => line.includes('"event":"signin"'))
        .map((line) => JSON.parse(line));
      assert.deepEqual(
        audit.map((line) => [line.outcome, line.status, line.userId]),
        [
          ['success', 201, String(u.id)],
          ['failure', 401, String(u.id)],
          ['invalid', 400, undefined],
        ],
      );
      assert.match((await b.get('/metrics')).body, /usher_signin_attempts_total\{outcome="success"\} [1-9]/);
    });
  });

  describe('POST /api/sessions and /api/signin share the sign-in throttle', () => {
    const throttle = {
      windowMs: 60_000,
      perAccountAddress: 3,
      perAccount: 50,
      perAddress: 50,
      concurrentPerAccount: 1000,
      concurrentPerAddress: 1000,
      deviceTtlMs: 180 * 24 * 3600 * 1000,
    };
    let a2: TestApp;
    let b2: TestApp;
    before(async () => {
      a2 = await startApp(store, 'a', { throttle });
      b2 = await startApp(store, 'b', { throttle });
    });
    after(async () => {
      await a2.close();
      await b2.close();
    });
    const from = (t: TestApp, url: string, address: string, body: object) =>
      t.inject({ method: 'POST', url, remoteAddress: address, payload: body });

    test('CONTRACT: failures on either route count together for one account and address, and both then answer 429', async () => {
      const u = await register(b2);
      const wrong = { email: u.email, password: 'wrong-password-1' };
      const right = { email: u.email, password: u.password };
      assert.equal((await from(b2, '/api/signin', '10.9.0.1', wrong)).statusCode, 401);
      assert.equal((await from(b2, '/api/sessions', '10.9.0.1', wrong)).statusCode, 401);
      assert.equal((await from(b2, '/api/signin', '10.9.0.1', wrong)).statusCode, 401);
      for (const url of ['/api/sessions', '/api/signin']) {
        const res = await from(b2, url, '10.9.0.1', right);
        assert.equal(res.statusCode, 429, `${url}: ${res.body}`);
        assert.equal(res.json().error, 'SIGNIN_FAILED');
        assert.equal(typeof res.json().message, 'string');
        assert.ok(
          Number(res.headers['retry-after']) >= 1,
          `${url}: Retry-After ${res.headers['retry-after']}`,
        );
        assert.deepEqual(setCookies(res), []);
      }
      // Another address is not held by that pair's count.
      assert.equal((await from(b2, '/api/sessions', '10.9.0.2', right)).statusCode, 201);
    });

    test("CONTRACT (a): POST /api/sessions's 429 carries a message even in profile A, /api/signin's does not", async () => {
      const u = await register(a2);
      for (let i = 0; i < throttle.perAccountAddress; i++)
        await from(a2, '/api/sessions', '10.9.1.1', { email: u.email, password: 'wrong-password-1' });
      const token = await from(a2, '/api/sessions', '10.9.1.1', { email: u.email, password: u.password });
      assert.equal(token.statusCode, 429);
      assert.deepEqual(Object.keys(token.json()).sort(), ['error', 'message']);
      const signin = await from(a2, '/api/signin', '10.9.1.1', { email: u.email, password: u.password });
      assert.equal(signin.statusCode, 429);
      assert.deepEqual(signin.json(), { error: 'SIGNIN_FAILED' });
    });

    test('CONTRACT: a success on POST /api/sessions resets the count, as on /api/signin', async () => {
      const u = await register(b2);
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < throttle.perAccountAddress - 1; i++)
          await from(b2, '/api/signin', '10.9.2.1', { email: u.email, password: 'wrong-password-1' });
        const res = await from(b2, '/api/sessions', '10.9.2.1', { email: u.email, password: u.password });
        assert.equal(res.statusCode, 201, `round ${round}: ${res.body}`);
      }
    });
  });
});
