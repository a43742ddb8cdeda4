// Who may call the admin API (CONTRACT "Administration", issue 29), on both stores and in both
// profiles (the admin API is identical in both): no session is 401, a `user` is 403 on every
// route, `support` reads, ends sessions and sends mails and is 403 elsewhere, `admin` may do
// everything; a cookie write from another site is refused. And bad input on every route: bad and
// unknown ids are 404 NOT_FOUND, bad bodies 400 VALIDATION_FAILED, bad queries 400 INVALID_QUERY,
// a body that is not JSON 415, never a 500, always `{error, message}`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { NO_THROTTLE, newUser, register, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { adminView, as, assertError, call, type Method, staff } from './support.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];
const NO_SUCH_ID = '9223372036854775807';
const BAD_IDS = ['abc', '0', '-1', '1.5', '01', '1e3', '9223372036854775808', '99999999999999999999', '%20'];

interface Route {
  name: string;
  method: Method;
  /** The path, for a user id (undefined for the routes without one). */
  path: (id: string) => string;
  /** What an allowed call sends (undefined: no body). */
  body?: () => unknown;
  /** Whether `support` may call it. */
  support: boolean;
  /** The status of an allowed call. */
  ok: number;
  hasId: boolean;
}

const ROUTES: readonly Route[] = [
  { name: 'search', method: 'GET', path: () => '/api/admin/users', support: true, ok: 200, hasId: false },
  {
    name: 'view',
    method: 'GET',
    path: (id) => `/api/admin/users/${id}`,
    support: true,
    ok: 200,
    hasId: true,
  },
  {
    name: 'update',
    method: 'PATCH',
    path: (id) => `/api/admin/users/${id}`,
    body: () => ({ name: 'Renamed by staff' }),
    support: false,
    ok: 200,
    hasId: true,
  },
  {
    name: 'disable',
    method: 'POST',
    path: (id) => `/api/admin/users/${id}/disable`,
    body: () => ({ reason: 'test' }),
    support: false,
    ok: 200,
    hasId: true,
  },
  {
    name: 'enable',
    method: 'POST',
    path: (id) => `/api/admin/users/${id}/enable`,
    body: () => ({}),
    support: false,
    ok: 200,
    hasId: true,
  },
  {
    name: 'delete',
    method: 'DELETE',
    path: (id) => `/api/admin/users/${id}`,
    support: false,
    ok: 204,
    hasId: true,
  },
  {
    name: 'end sessions',
    method: 'DELETE',
    path: (id) => `/api/admin/users/${id}/sessions`,
    support: true,
    ok: 204,
    hasId: true,
  },
  {
    name: 'remove second factors',
    method: 'DELETE',
    path: (id) => `/api/admin/users/${id}/mfa`,
    support: false,
    ok: 204,
    hasId: true,
  },
  {
    name: 'password reset mail',
    method: 'POST',
    path: (id) => `/api/admin/users/${id}/password-reset`,
    body: () => ({}),
    support: true,
    ok: 202,
    hasId: true,
  },
  {
    name: 'verification mail',
    method: 'POST',
    path: (id) => `/api/admin/users/${id}/verification`,
    body: () => ({}),
    support: true,
    ok: 202,
    hasId: true,
  },
  {
    name: 'invite',
    method: 'POST',
    path: () => '/api/admin/users',
    body: () => {
      const { email, name } = newUser();
      return { email, name };
    },
    support: false,
    ok: 201,
    hasId: false,
  },
];

/** Routes whose body is JSON (the others take none). */
const WITH_BODY = ROUTES.filter((r) => r.body !== undefined);

describeEachStore('admin API: roles and bad input', (store: Store) => {
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    for (const profile of PROFILES)
      apps[profile] = await startApp(store, profile, { throttle: { ...NO_THROTTLE } });
  });
  after(async () => {
    for (const profile of PROFILES) await apps[profile]?.close();
  });

  /** A route called on a fresh target (an unverified, signed-in account) by `token`. */
  async function callOnFreshTarget(t: TestApp, route: Route, token: string | undefined) {
    const target = await register(t, newUser());
    const res = await call(t, route.method, route.path(String(target.id)), { token, body: route.body?.() });
    return { target, res };
  }

  /** The target was left as it was: there, active, role user, its name and session unchanged. */
  async function assertUntouched(
    t: TestApp,
    adminToken: string,
    target: { id: bigint; name: string; email: string },
    what: string,
  ) {
    const view = await adminView(t, adminToken, target.id);
    assert.equal(view.status, 'active', what);
    assert.equal(view.role, 'user', what);
    assert.equal(view.name, target.name, what);
    assert.equal(view.email, target.email, what);
  }

  for (const profile of PROFILES) {
    describe(`profile ${profile}`, () => {
      test(`[${profile}] no session: every admin route answers 401 UNAUTHENTICATED, and a garbage Bearer token too`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        for (const route of ROUTES) {
          for (const token of [undefined, 'x'.repeat(43)]) {
            const { target, res } = await callOnFreshTarget(t, route, token);
            assertError(res, 401, 'UNAUTHENTICATED', `${route.name} (${token ? 'garbage token' : 'none'})`);
            if (route.hasId) await assertUntouched(t, admin.token, target, route.name);
          }
        }
      });

      test(`[${profile}] a user-role session: every admin route answers 403 FORBIDDEN and changes nothing`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        const user = await staff(t, store, 'user');
        for (const route of ROUTES) {
          const { target, res } = await callOnFreshTarget(t, route, user.token);
          assertError(res, 403, 'FORBIDDEN', route.name);
          if (route.hasId) await assertUntouched(t, admin.token, target, route.name);
        }
        // Not even on their own account, and not to promote themselves.
        const own = await as(t, user.token).patch(`/api/admin/users/${user.id}`, { role: 'admin' });
        assertError(own, 403, 'FORBIDDEN', 'a user promoting themselves');
        assert.equal((await adminView(t, admin.token, user.id)).role, 'user');
        assertError(await as(t, user.token).get(`/api/admin/users/${user.id}`), 403, 'FORBIDDEN', 'own view');
        // The role is checked before the body is read: a bad body is still 403.
        assertError(
          await call(t, 'PATCH', `/api/admin/users/${user.id}`, { token: user.token, body: '{"name": 5' }),
          403,
          'FORBIDDEN',
          'a user with a broken body',
        );
      });

      test(`[${profile}] support: search, view, end sessions and both mails are allowed; every other route is 403 FORBIDDEN`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        const support = await staff(t, store, 'support');
        for (const route of ROUTES) {
          const { target, res } = await callOnFreshTarget(t, route, support.token);
          if (route.support) {
            assert.equal(res.statusCode, route.ok, `${route.name}: ${res.body}`);
          } else {
            assertError(res, 403, 'FORBIDDEN', route.name);
            if (route.hasId) await assertUntouched(t, admin.token, target, route.name);
          }
        }
        // Support cannot make themselves admin either.
        assertError(
          await as(t, support.token).patch(`/api/admin/users/${support.id}`, { role: 'admin' }),
          403,
          'FORBIDDEN',
          'support promoting themselves',
        );
        assert.equal((await adminView(t, admin.token, support.id)).role, 'support');
      });

      test(`[${profile}] support ending a user's sessions: the user's token stops working at once`, async () => {
        const t = apps[profile];
        const support = await staff(t, store, 'support');
        const user = await staff(t, store, 'user');
        assert.equal((await as(t, user.token).get('/api/session')).statusCode, 200);
        const res = await as(t, support.token).delete(`/api/admin/users/${user.id}/sessions`);
        assert.equal(res.statusCode, 204, res.body);
        assertError(await as(t, user.token).get('/api/session'), 401, 'UNAUTHENTICATED', 'the ended session');
        assert.equal((await as(t, support.token).get('/api/session')).statusCode, 200, 'support still in');
      });

      test(`[${profile}] admin: every admin route is allowed, with the answer it documents`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        for (const route of ROUTES) {
          const { target, res } = await callOnFreshTarget(t, route, admin.token);
          assert.equal(res.statusCode, route.ok, `${route.name}: ${res.body}`);
          if (route.ok === 204) assert.equal(res.body, '', route.name);
          else assert.equal(res.headers['cache-control'], 'no-store', route.name);
          if (route.name === 'update') assert.equal(res.json().name, 'Renamed by staff');
          if (route.name === 'disable') assert.equal(res.json().status, 'disabled');
          if (route.name === 'delete')
            assertError(
              await as(t, admin.token).get(`/api/admin/users/${target.id}`),
              404,
              'NOT_FOUND',
              'deleted',
            );
        }
      });

      test(`[${profile}] roles are read at each request: a demoted admin is refused from their next request on`, async () => {
        const t = apps[profile];
        const first = await staff(t, store, 'admin');
        const second = await staff(t, store, 'admin');
        assert.equal((await as(t, second.token).get('/api/admin/users')).statusCode, 200);
        const demoted = await as(t, first.token).patch(`/api/admin/users/${second.id}`, { role: 'support' });
        assert.equal(demoted.statusCode, 200, demoted.body);
        assert.equal(demoted.json().role, 'support');
        assert.equal((await as(t, second.token).get('/api/admin/users')).statusCode, 200, 'support reads');
        assertError(
          await as(t, second.token).patch(`/api/admin/users/${first.id}`, { role: 'user' }),
          403,
          'FORBIDDEN',
          'a demoted admin changing a role',
        );
        assert.equal(
          (await as(t, first.token).patch(`/api/admin/users/${second.id}`, { role: 'user' })).statusCode,
          200,
        );
        assertError(await as(t, second.token).get('/api/admin/users'), 403, 'FORBIDDEN', 'demoted to user');
      });

      test(`[${profile}] a cookie-authenticated write (or read) from another site is 403 FORBIDDEN and changes nothing; from Usher's own origin it works`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        const signin = await t.post('/api/signin', { email: admin.email, password: admin.password });
        const cookie = `usher_session=${sessionToken(signin.headers['set-cookie'])}`;
        const target = await register(t, newUser());
        const disable = (headers: Record<string, string>) =>
          call(t, 'POST', `/api/admin/users/${target.id}/disable`, {
            body: {},
            headers: { cookie, host: 'usher.example', ...headers },
          });
        for (const [what, headers] of [
          ['Origin of another site', { origin: 'https://evil.example' }],
          ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
          ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
          ['Origin: null', { origin: 'null' }],
        ] as const) {
          assertError(await disable(headers), 403, 'FORBIDDEN', what);
          await assertUntouched(t, admin.token, target, what);
        }
        const deleteCrossSite = await call(t, 'DELETE', `/api/admin/users/${target.id}`, {
          headers: { cookie, host: 'usher.example', origin: 'https://evil.example' },
        });
        assertError(deleteCrossSite, 403, 'FORBIDDEN', 'a cross-site delete');
        await assertUntouched(t, admin.token, target, 'after a cross-site delete');
        // On the staff routes even a read is refused cross-site (each read is audited); from
        // Usher's own origin reads and writes work.
        const crossSite: Record<string, string>[] = [
          { 'sec-fetch-site': 'cross-site' },
          { origin: 'https://evil.example' },
        ];
        for (const headers of crossSite) {
          const read = await call(t, 'GET', `/api/admin/users/${target.id}`, {
            headers: { cookie, host: 'usher.example', ...headers },
          });
          assertError(read, 403, 'FORBIDDEN', `a cross-site read ${JSON.stringify(headers)}`);
        }
        const read = await call(t, 'GET', `/api/admin/users/${target.id}`, {
          headers: { cookie, host: 'usher.example', 'sec-fetch-site': 'same-origin' },
        });
        assert.equal(read.statusCode, 200, read.body);
        const own = await disable({ origin: 'http://usher.example', 'sec-fetch-site': 'same-origin' });
        assert.equal(own.statusCode, 200, own.body);
        assert.equal(own.json().status, 'disabled');
      });
    });
  }

  describe('bad input (as an admin)', () => {
    for (const profile of PROFILES) {
      test(`[${profile}] a bad id (abc, 0, -1, 1.5, 01, 1e3, too large, %20) on every route with one is 404 NOT_FOUND`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        for (const route of ROUTES.filter((r) => r.hasId)) {
          for (const id of BAD_IDS) {
            const res = await call(t, route.method, route.path(id), {
              token: admin.token,
              body: route.body?.(),
            });
            assertError(res, 404, 'NOT_FOUND', `${route.name} ${id}`);
          }
        }
      });

      test(`[${profile}] an unknown id on every route with one is 404 NOT_FOUND`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        const gone = await register(t, newUser());
        assert.equal((await as(t, admin.token).delete(`/api/admin/users/${gone.id}`)).statusCode, 204);
        for (const route of ROUTES.filter((r) => r.hasId)) {
          for (const id of [NO_SUCH_ID, String(gone.id)]) {
            const res = await call(t, route.method, route.path(id), {
              token: admin.token,
              body: route.body?.(),
            });
            assertError(res, 404, 'NOT_FOUND', `${route.name} ${id}`);
          }
        }
      });
    }

    test('unknown body fields are 400 VALIDATION_FAILED on every route with a body, and nothing changes', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      for (const route of WITH_BODY) {
        const target = await register(t, newUser());
        const body = { ...(route.body?.() as object), nickname: 'x' };
        const res = await call(t, route.method, route.path(String(target.id)), { token: admin.token, body });
        assertError(res, 400, 'VALIDATION_FAILED', route.name);
        assert.match(res.json().message, /nickname/, route.name);
        await assertUntouched(t, admin.token, target, route.name);
      }
      // A field of another route is unknown here too: a role cannot ride on a disable.
      const target = await register(t, newUser());
      const res = await as(t, admin.token).post(`/api/admin/users/${target.id}/disable`, { role: 'admin' });
      assertError(res, 400, 'VALIDATION_FAILED', 'role on disable');
      await assertUntouched(t, admin.token, target, 'role on disable');
    });

    test('wrong types and values that break the rules are 400 VALIDATION_FAILED, and nothing changes', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const target = await register(t, newUser());
      const patches: unknown[] = [
        { name: 5 },
        { name: null },
        { name: '' },
        { name: '   ' },
        { name: 'n'.repeat(101) },
        { email: true },
        { email: 'not-an-address' },
        { email: `${'e'.repeat(250)}@example.com` },
        { emailVerified: 'yes' },
        { emailVerified: 1 },
        { role: 'root' },
        { role: 'Admin' },
        { role: ['admin'] },
        { roles: 'editor' },
        { roles: [1] },
        { roles: [null] },
        { roles: ['Editor'] },
        { roles: ['has space'] },
        { roles: [''] },
        { roles: ['r'.repeat(65)] },
        { roles: Array.from({ length: 21 }, (_, i) => `role-${i}`) },
        [],
        'name',
        42,
        null,
      ];
      for (const body of patches) {
        const res = await call(t, 'PATCH', `/api/admin/users/${target.id}`, {
          token: admin.token,
          body: JSON.stringify(body),
        });
        assertError(res, 400, 'VALIDATION_FAILED', `PATCH ${JSON.stringify(body)}`);
      }
      await assertUntouched(t, admin.token, target, 'after the bad patches');
      assert.deepEqual((await adminView(t, admin.token, target.id)).roles, []);
      for (const body of [{ reason: 5 }, { reason: 'r'.repeat(501) }, { reason: 'a\u0000b' }, [], 'x']) {
        const res = await call(t, 'POST', `/api/admin/users/${target.id}/disable`, {
          token: admin.token,
          body: JSON.stringify(body),
        });
        assertError(res, 400, 'VALIDATION_FAILED', `disable ${JSON.stringify(body)}`);
      }
      await assertUntouched(t, admin.token, target, 'after the bad disables');
      for (const url of ['enable', 'password-reset', 'verification']) {
        for (const body of [[], 'x', 5]) {
          const res = await call(t, 'POST', `/api/admin/users/${target.id}/${url}`, {
            token: admin.token,
            body: JSON.stringify(body),
          });
          assertError(res, 400, 'VALIDATION_FAILED', `${url} ${JSON.stringify(body)}`);
        }
      }
      const fresh = newUser();
      const invites: unknown[] = [
        {},
        { email: fresh.email },
        { name: fresh.name },
        { email: 5, name: fresh.name },
        { email: fresh.email, name: null },
        { email: 'nope', name: fresh.name },
        { email: fresh.email, name: '' },
        { email: fresh.email, name: fresh.name, roles: 'editor' },
        { email: fresh.email, name: fresh.name, roles: ['BAD'] },
        { email: fresh.email, name: fresh.name, roles: Array.from({ length: 21 }, (_, i) => `r${i}`) },
        [],
        'x',
      ];
      for (const body of invites) {
        const res = await call(t, 'POST', '/api/admin/users', {
          token: admin.token,
          body: JSON.stringify(body),
        });
        assertError(res, 400, 'VALIDATION_FAILED', `invite ${JSON.stringify(body)}`);
      }
      const search = await as(t, admin.token).get(`/api/admin/users?q=${encodeURIComponent(fresh.email)}`);
      assert.deepEqual(search.json(), [], 'no invitation was made');
    });

    test('a body that is not JSON is 415; broken JSON is 400 VALIDATION_FAILED', async () => {
      const t = apps.a;
      const admin = await staff(t, store, 'admin');
      const target = await register(t, newUser());
      for (const route of WITH_BODY) {
        for (const contentType of [
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
        ]) {
          const res = await t.inject({
            method: route.method,
            url: route.path(String(target.id)),
            headers: { authorization: `Bearer ${admin.token}`, 'content-type': contentType },
            payload: 'name=x',
          });
          assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', `${route.name} ${contentType}`);
        }
        const broken = await call(t, route.method, route.path(String(target.id)), {
          token: admin.token,
          body: '{"name": "x"',
        });
        assertError(broken, 400, 'VALIDATION_FAILED', `${route.name} broken JSON`);
      }
      await assertUntouched(t, admin.token, target, 'after the unreadable bodies');
    });

    test('bad query values on the search are 400 INVALID_QUERY', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      for (const query of [
        'status=x',
        'status=ACTIVE',
        'status=',
        'verified=yes',
        'verified=1',
        'verified=TRUE',
        'role=x',
        'role=root',
        'role=Admin',
        'size=0',
        'size=101',
        'size=-1',
        'size=abc',
        'page=0',
        'page=-1',
        'page=1.5',
        'sort=bogus',
        'sort=password',
        'sort=-bogus',
        'sort=name,up',
        `q=${'q'.repeat(255)}`,
        'q=a&q=b',
        'status=active&status=disabled',
        'q=a%00b',
      ]) {
        const res = await as(t, admin.token).get(`/api/admin/users?${query}`);
        assertError(res, 400, 'INVALID_QUERY', query);
      }
      for (const query of [
        'status=active',
        'verified=false',
        'role=admin',
        'size=100',
        'sort=-lastSignInAt',
        'sort=email,desc',
      ]) {
        assert.equal((await as(t, admin.token).get(`/api/admin/users?${query}`)).statusCode, 200, query);
      }
    });
  });
});
