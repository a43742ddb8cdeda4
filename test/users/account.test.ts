// PUT and DELETE /api/users/{id} (CONTRACT "Collections"): a signed-in user changes or deletes
// only their own account.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { leaksSecret, newUser, profileApps, register, signIn, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const USER_KEYS: Record<Profile, string[]> = {
  a: ['email', 'id', 'name'],
  b: ['createdAt', 'email', 'emailVerified', 'id', 'name'],
};

describeEachStore('PUT and DELETE /api/users/{id}', (store) => {
  const { a, b } = profileApps(store);

  // Every password this suite used, and every body it received: none may show one.
  const passwords = new Set<string>();
  const bodies: string[] = [];

  function noLeak(res: LightMyRequestResponse): LightMyRequestResponse {
    bodies.push(res.body);
    assert.equal(leaksSecret(res.body, [...passwords]), false, `a secret in ${res.body}`);
    return res;
  }

  async function account(t: TestApp, overrides: Parameters<typeof newUser>[0] = {}) {
    const u = await register(t, newUser(overrides));
    passwords.add(u.password);
    noLeak(u.res);
    return { ...u, token: await signIn(t, u) };
  }

  async function send(
    t: TestApp,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    token?: string,
    body?: unknown,
  ): Promise<LightMyRequestResponse> {
    if (body && typeof body === 'object' && 'password' in body && typeof body.password === 'string') {
      passwords.add(body.password);
    }
    return noLeak(
      await t.inject({
        method,
        url,
        headers: {
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      }),
    );
  }

  const put = (t: TestApp, id: bigint | string, body: unknown, token?: string) =>
    send(t, 'PUT', `/api/users/${id}`, token, body);
  const del = (t: TestApp, id: bigint | string, token?: string) =>
    send(t, 'DELETE', `/api/users/${id}`, token);

  async function signinStatus(t: TestApp, email: string, password: string): Promise<number> {
    return (await send(t, 'POST', '/api/signin', undefined, { email, password })).statusCode;
  }

  function assertError(res: LightMyRequestResponse, status: number, code: string, what = '') {
    assert.equal(res.statusCode, status, `${what} ${res.body}`);
    assert.equal(res.json().error, code, what);
  }

  /** PUT and DELETE of `id` by `me` both answer 404 USER_NOT_FOUND. */
  async function assertPutAndDeleteNotFound(
    t: TestApp,
    me: { email: string; name: string; token: string },
    id: string,
  ) {
    assertError(
      await put(t, id, { email: me.email, name: me.name }, me.token),
      404,
      'USER_NOT_FOUND',
      `PUT ${id}`,
    );
    assertError(await del(t, id, me.token), 404, 'USER_NOT_FOUND', `DELETE ${id}`);
  }

  /** The user as GET /api/users/{id} shows it. */
  async function stored(t: TestApp, id: bigint) {
    const res = await send(t, 'GET', `/api/users/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }

  for (const p of [
    { name: 'a' as const, app: () => a },
    { name: 'b' as const, app: () => b },
  ]) {
    test(`CONTRACT (${p.name}): PUT and DELETE without a session are 401 UNAUTHENTICATED`, async () => {
      const t = p.app();
      const u = await account(t);
      const before = await stored(t, u.id);
      for (const res of [
        await put(t, u.id, { email: `new.${u.email}`, name: 'Anonymous' }),
        await put(t, u.id, { nonsense: true }),
        await del(t, u.id),
        await del(t, 'abc'),
      ]) {
        assertError(res, 401, 'UNAUTHENTICATED');
        assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
      }
      assert.deepEqual(await stored(t, u.id), before, 'nothing changed');
    });

    test(`CONTRACT (${p.name}): PUT and DELETE on another user's id are 403 FORBIDDEN, a non-existent id too`, async () => {
      const t = p.app();
      const me = await account(t);
      const other = await account(t);
      const before = await stored(t, other.id);
      for (const id of [other.id, 999_999_999n, 9_223_372_036_854_775_807n]) {
        assertError(
          await put(t, id, { email: `x.${me.email}`, name: 'Intruder' }, me.token),
          403,
          'FORBIDDEN',
          `PUT ${id}`,
        );
        assertError(await del(t, id, me.token), 403, 'FORBIDDEN', `DELETE ${id}`);
      }
      assert.deepEqual(await stored(t, other.id), before, 'the other user is unchanged');
      assert.equal(await signinStatus(t, other.email, other.password), 200);
    });

    test(`CONTRACT (${p.name}): a malformed id on PUT and DELETE is 404 USER_NOT_FOUND`, async () => {
      const t = p.app();
      const me = await account(t);
      for (const id of ['abc', '0', '-1', '1.5', '1e3', '0x10', `0${me.id}`, '%20', '-']) {
        await assertPutAndDeleteNotFound(t, me, id);
      }
      assert.equal(
        (await send(t, 'GET', `/api/users/${me.id}`)).statusCode,
        200,
        'the account is still there',
      );
    });

    test(`CONTRACT (${p.name}): an id above 2^63-1 on PUT and DELETE is 404 USER_NOT_FOUND`, async () => {
      const t = p.app();
      const me = await account(t);
      for (const id of ['9223372036854775808', '9999999999999999999']) {
        await assertPutAndDeleteNotFound(t, me, id);
      }
    });

    test(`CONTRACT (${p.name}): PUT replaces email and name and answers the profile's user object`, async () => {
      const t = p.app();
      const me = await account(t);
      const newEmail = `Renamed.${me.email}`;
      const res = await put(
        t,
        me.id,
        { email: `  ${newEmail} `, name: '  New Name  ', currentPassword: me.password },
        me.token,
      );
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      const body = res.json();
      assert.deepEqual(Object.keys(body).sort(), USER_KEYS[p.name]);
      assert.equal(body.id, Number(me.id));
      assert.equal(body.email, newEmail, 'trimmed, case kept');
      assert.equal(body.name, 'New Name', 'trimmed');
      assert.deepEqual(await stored(t, me.id), body, 'GET shows the same user');
      assert.equal(await signinStatus(t, newEmail, me.password), 200, 'the new email signs in');
      assert.equal(await signinStatus(t, newEmail.toLowerCase(), me.password), 200, 'in any case');
      assert.equal(await signinStatus(t, me.email, me.password), 401, 'the old email does not');
    });

    test(`CONTRACT (${p.name}): PUT with an email another user has, in any case, is 409 EMAIL_TAKEN`, async () => {
      const t = p.app();
      const me = await account(t);
      const other = await account(t, { email: `Taken.${Date.now()}.${p.name}@Example.com` });
      const before = await stored(t, me.id);
      for (const email of [
        other.email,
        other.email.toUpperCase(),
        other.email.toLowerCase(),
        ` ${other.email} `,
      ]) {
        const res = await put(t, me.id, { email, name: 'Thief', currentPassword: me.password }, me.token);
        assertError(res, 409, 'EMAIL_TAKEN', email);
        assert.equal(typeof res.json().message, 'string');
      }
      assert.deepEqual(await stored(t, me.id), before, 'nothing changed');
      // One's own email in another case is not "taken".
      const own = await put(t, me.id, { email: me.email.toUpperCase(), name: me.name }, me.token);
      assert.equal(own.statusCode, 200, own.body);
      assert.equal(own.json().email, me.email.toUpperCase());
    });

    test(`CONTRACT (${p.name}): an unknown field in PUT is 400 VALIDATION_FAILED naming the field`, async () => {
      const t = p.app();
      const me = await account(t);
      const before = await stored(t, me.id);
      for (const field of ['role', 'id', 'createdAt', 'passwordHash', 'isAdmin']) {
        const res = await put(t, me.id, { email: me.email, name: 'Changed', [field]: 'x' }, me.token);
        assertError(res, 400, 'VALIDATION_FAILED', field);
        assert.match(res.json().message, new RegExp(`\\b${field}\\b`), field);
      }
      assert.deepEqual(await stored(t, me.id), before, 'nothing was stored');
    });

    test(`CONTRACT (${p.name}): PUT without a valid name or email is 400 VALIDATION_FAILED naming the field`, async () => {
      const t = p.app();
      const me = await account(t);
      const before = await stored(t, me.id);
      const cases: Array<[unknown, string]> = [
        [{ email: me.email }, 'name'],
        [{ name: 'Only Name' }, 'email'],
        [{ email: me.email, name: '   ' }, 'name'],
        [{ email: me.email, name: 'x'.repeat(101) }, 'name'],
        [{ email: me.email, name: 42 }, 'name'],
        [{ email: 'not-an-email', name: 'N' }, 'email'],
        [{ email: '', name: 'N' }, 'email'],
        [{ email: null, name: 'N' }, 'email'],
        [{}, ''],
      ];
      for (const [body, field] of cases) {
        const res = await put(t, me.id, body, me.token);
        assertError(res, 400, 'VALIDATION_FAILED', JSON.stringify(body));
        if (field) assert.match(res.json().message, new RegExp(`\\b${field}\\b`), JSON.stringify(body));
      }
      for (const payload of ['[]', '"text"', '{"email":']) {
        const res = noLeak(
          await t.inject({
            method: 'PUT',
            url: `/api/users/${me.id}`,
            headers: { authorization: `Bearer ${me.token}`, 'content-type': 'application/json' },
            payload,
          }),
        );
        assertError(res, 400, 'VALIDATION_FAILED', payload);
      }
      assert.deepEqual(await stored(t, me.id), before, 'nothing was stored');
    });

    test(`CONTRACT (${p.name}): PUT with a too-short password is 400 VALIDATION_FAILED and changes nothing`, async () => {
      const t = p.app();
      const me = await account(t);
      const before = await stored(t, me.id);
      for (const password of ['short', '1234567', '']) {
        const res = await put(
          t,
          me.id,
          { email: `new.${me.email}`, name: 'New', password, currentPassword: me.password },
          me.token,
        );
        assertError(res, 400, 'VALIDATION_FAILED', JSON.stringify(password));
        assert.match(res.json().message, /\bpassword\b/);
      }
      assert.deepEqual(await stored(t, me.id), before, 'email and name unchanged too');
      assert.equal(await signinStatus(t, me.email, me.password), 200, 'the old password still works');
      assert.equal(await signinStatus(t, me.email, 'short'), 401);
    });

    test(`CONTRACT (${p.name}): PUT with a new password: the old one no longer signs in, the new one does`, async () => {
      const t = p.app();
      const me = await account(t);
      const newPassword = `${me.password}-changed`;
      const res = await put(
        t,
        me.id,
        { email: me.email, name: me.name, password: newPassword, currentPassword: me.password },
        me.token,
      );
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(Object.keys(res.json()).sort(), USER_KEYS[p.name]);
      assert.equal(await signinStatus(t, me.email, me.password), 401, 'the old password fails');
      assert.equal(await signinStatus(t, me.email, newPassword), 200, 'the new password works');
      // Without a password field the password stays as it is.
      const rename = await put(t, me.id, { email: me.email, name: 'Renamed' }, me.token);
      assert.equal(rename.statusCode, 200, rename.body);
      assert.equal(await signinStatus(t, me.email, newPassword), 200, 'still the new password');
    });

    test(`CONTRACT (${p.name}): DELETE answers 204; the user is gone, cannot sign in, and the email is free again`, async () => {
      const t = p.app();
      const me = await account(t);
      const res = await del(t, me.id, me.token);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      const gone = await send(t, 'GET', `/api/users/${me.id}`);
      assert.equal(gone.statusCode, 404);
      assert.deepEqual(gone.json(), { error: 'USER_NOT_FOUND' });
      assert.equal(await signinStatus(t, me.email, me.password), 401, 'sign-in fails');
      assertError(await del(t, me.id, me.token), 401, 'UNAUTHENTICATED', 'the deleted session is over');
      const again = await send(t, 'POST', '/api/users', undefined, {
        email: me.email.toUpperCase(),
        name: 'Second Life',
        password: 'another-password',
      });
      assert.equal(again.statusCode, 201, again.body);
      assert.notEqual(again.json().id, Number(me.id), 'a new account, not the old one');
      assert.equal(await signinStatus(t, me.email, 'another-password'), 200);
      assert.equal(await signinStatus(t, me.email, me.password), 401);
    });

    test(`CONTRACT (${p.name}): deleting a user deletes their products and their reviews on others' products`, async () => {
      const t = p.app();
      const me = await account(t);
      const other = await account(t);
      const create = async (token: string, url: string, body: unknown) => {
        const res = await send(t, 'POST', url, token, body);
        assert.equal(res.statusCode, 201, res.body);
        return res.json() as { id: number };
      };
      const mine = await create(me.token, '/api/products', { name: 'Mine', price: 100 });
      const theirs = await create(other.token, '/api/products', { name: 'Theirs', price: 200 });
      const myReview = await create(me.token, `/api/products/${theirs.id}/reviews`, {
        rating: 2,
        text: 'meh',
      });
      const theirReview = await create(other.token, `/api/products/${theirs.id}/reviews`, {
        rating: 5,
        text: 'great',
      });
      await create(other.token, `/api/products/${mine.id}/reviews`, { rating: 4, text: 'fine' });
      const reviewIds = async (productId: number) => {
        const res = await send(t, 'GET', `/api/products/${productId}/reviews`);
        assert.equal(res.statusCode, 200, res.body);
        return (res.json() as Array<{ id: number }>).map((r) => r.id).sort((x, y) => x - y);
      };
      assert.deepEqual(
        await reviewIds(theirs.id),
        [myReview.id, theirReview.id].sort((x, y) => x - y),
      );

      assert.equal((await del(t, me.id, me.token)).statusCode, 204);

      assert.equal((await send(t, 'GET', `/api/products/${mine.id}`)).statusCode, 404, 'my product is gone');
      assert.equal((await send(t, 'GET', `/api/products/${theirs.id}`)).statusCode, 200, 'theirs stays');
      assert.deepEqual(await reviewIds(theirs.id), [theirReview.id], 'my review on their product is gone');
      assert.equal(
        (await send(t, 'GET', `/api/products/${theirs.id}/reviews/${myReview.id}`)).statusCode,
        404,
      );
    });
  }

  // SPEC 2: no response body in this suite contains a password or an argon2 hash. Every body was
  // checked on arrival against the passwords known then; this checks them all against every
  // password the suite used, once every test has run, in whatever order.
  after(() => {
    for (const body of bodies) {
      assert.ok(!body.includes('$argon2'), body);
      assert.equal(leaksSecret(body, [...passwords]), false, body);
    }
  });
});
