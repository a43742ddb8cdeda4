// reply.setCookie (sessions/plugin.ts): the cookies an answer sets are written as they are set, with
// no onSend hook on every route; what @fastify/cookie's hook did is kept: a cookie set twice is
// sent once with its last value, Set-Cookie lines set by other means stay, an error answer still
// carries the cookies set before the error, and the answers that set none (the lookups) carry none.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { feature } from '../../src/feature.ts';
import { FEATURES } from '../../src/features.ts';
import { AppError } from '../../src/shared/errors.ts';
import { register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const cookieRoutes = feature({
  name: 'cookie-routes',
  build: () => ({}),
  routes: (app) =>
    app.register(async (scope) => {
      scope.get('/test/cookies/twice', async (_request, reply) => {
        reply.setCookie('first', 'one', { path: '/', httpOnly: true });
        reply.setCookie('second', 'two', { path: '/api', sameSite: 'strict', maxAge: 60 });
        reply.setCookie('first', 'three', { path: '/', httpOnly: true });
        return { ok: true };
      });
      scope.get('/test/cookies/other-path', async (_request, reply) => {
        reply.setCookie('first', 'one', { path: '/' });
        reply.setCookie('first', 'two', { path: '/api' });
        return { ok: true };
      });
      scope.get('/test/cookies/with-header', async (_request, reply) => {
        reply.header('set-cookie', 'plain=1; Path=/');
        reply.setCookie('first', 'one');
        return { ok: true };
      });
      scope.get('/test/cookies/then-error', async (_request, reply) => {
        reply.setCookie('first', 'one', { path: '/' });
        throw new AppError('FORBIDDEN', 'Refused after the cookie was set.');
      });
    }),
});

const setCookies = (res: LightMyRequestResponse) => ([] as string[]).concat(res.headers['set-cookie'] ?? []);

describeEachStore('Cookies set by the routes', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b', {}, { features: FEATURES.with(cookieRoutes) });
  });
  after(() => t.close());

  test('ISSUE 48: a cookie set twice is sent once, with its last value, in the order first set', async () => {
    const res = await t.get('/test/cookies/twice');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(setCookies(res), [
      'first=three; Path=/; HttpOnly; SameSite=Lax',
      'second=two; Max-Age=60; Path=/api; SameSite=Strict',
    ]);
  });

  test('ISSUE 48: one name on two paths is two cookies', async () => {
    const res = await t.get('/test/cookies/other-path');
    assert.deepEqual(setCookies(res), [
      'first=one; Path=/; SameSite=Lax',
      'first=two; Path=/api; SameSite=Lax',
    ]);
  });

  test('ISSUE 48: a Set-Cookie header set directly is kept, before the cookies', async () => {
    const res = await t.get('/test/cookies/with-header');
    assert.deepEqual(setCookies(res), ['plain=1; Path=/', 'first=one; SameSite=Lax']);
  });

  test('ISSUE 48: an error answer carries the cookies set before the error', async () => {
    const res = await t.get('/test/cookies/then-error');
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error, 'FORBIDDEN');
    assert.deepEqual(setCookies(res), ['first=one; Path=/; SameSite=Lax']);
  });

  test('ISSUE 48: a sign-in sets the session and device cookies; a lookup and a session read set none', async () => {
    const user = await register(t);
    const signin = await t.post('/api/signin', { email: user.email, password: user.password });
    assert.equal(signin.statusCode, 200);
    const cookies = setCookies(signin);
    assert.equal(cookies.length, 2);
    assert.match(cookies[0]!, /^usher_session=[A-Za-z0-9_-]+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/);
    assert.match(
      cookies[1]!,
      /^usher_device=[A-Za-z0-9_-]+; Max-Age=\d+; Path=\/api; HttpOnly; SameSite=Strict$/,
    );
    const token = await signIn(t, user);
    const lookup = await t.get(`/api/users/${user.id}`);
    assert.equal(lookup.statusCode, 200);
    assert.equal(lookup.headers['set-cookie'], undefined);
    const session = await t.inject({
      method: 'GET',
      url: '/api/session',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(session.statusCode, 200);
    assert.equal(session.headers['set-cookie'], undefined);
    const signout = await t.inject({
      method: 'POST',
      url: '/api/signout',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(signout.statusCode, 204);
    assert.deepEqual(setCookies(signout), ['usher_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax']);
  });
});
