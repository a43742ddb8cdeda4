// Re-authentication (CONTRACT "Account security"): changing the email or the password through
// PUT /api/users/{id} needs the present password in `currentPassword`; a wrong one counts in the
// account's sign-in throttle. Changing only the name does not need it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { leaksSecret, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const WRONG = 'not-my-password-1';

describeEachStore('Re-authentication on PUT /api/users/{id}', (store) => {
  // Small limits so the throttle is reached quickly; the mechanism is the one the defaults use.
  const throttle = {
    windowMs: 60_000,
    perAccountAddress: 3,
    perAccount: 50,
    perAddress: 50,
    concurrentPerAccount: 1000,
    concurrentPerAddress: 1000,
    deviceTtlMs: 180 * 24 * 3600 * 1000,
  };
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    apps.a = await startApp(store, 'a', { throttle });
    apps.b = await startApp(store, 'b', { throttle });
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
  });

  let addresses = 0;
  /** A client address no other test uses, so throttle counts never meet across tests. */
  const freshAddress = () => `10.77.${++addresses >> 8}.${addresses & 255}`;

  async function account(t: TestApp) {
    const u = await register(t);
    return { ...u, token: await signIn(t, u) };
  }

  const put = (t: TestApp, id: bigint, token: string, body: object, address = '10.77.255.1') =>
    t.inject({
      method: 'PUT',
      url: `/api/users/${id}`,
      remoteAddress: address,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const signinFrom = (t: TestApp, address: string, email: string, password: string) =>
    t.inject({ method: 'POST', url: '/api/signin', remoteAddress: address, payload: { email, password } });
  const signinStatus = async (t: TestApp, email: string, password: string) =>
    (await signinFrom(t, freshAddress(), email, password)).statusCode;
  const stored = async (t: TestApp, id: bigint) => (await t.get(`/api/users/${id}`)).json();
  const isLive = async (t: TestApp, token: string) =>
    (await t.inject({ method: 'GET', url: '/api/session', headers: { authorization: `Bearer ${token}` } }))
      .statusCode === 200;

  function assertRefused(res: LightMyRequestResponse, what: string) {
    assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], what);
    assert.equal(body.error, 'VALIDATION_FAILED', what);
    assert.ok(body.message.startsWith('currentPassword:'), `${what}: ${body.message}`);
  }

  for (const profile of ['a', 'b'] as const) {
    test(`CONTRACT (${profile}): a new email needs currentPassword: missing or wrong is 400 currentPassword:…, right is 200`, async () => {
      const t = apps[profile];
      const me = await account(t);
      const before = await stored(t, me.id);
      const newEmail = `moved.${me.email}`;
      const change = { email: newEmail, name: me.name };
      assertRefused(await put(t, me.id, me.token, change, freshAddress()), 'missing');
      assertRefused(
        await put(t, me.id, me.token, { ...change, currentPassword: WRONG }, freshAddress()),
        'wrong',
      );
      assertRefused(
        await put(t, me.id, me.token, { ...change, currentPassword: '' }, freshAddress()),
        'empty',
      );
      assertRefused(
        await put(t, me.id, me.token, { ...change, currentPassword: 12345678 }, freshAddress()),
        'not a string',
      );
      assert.deepEqual(await stored(t, me.id), before, 'nothing changed');
      assert.equal(await signinStatus(t, me.email, me.password), 200, 'the old email still signs in');

      const ok = await put(t, me.id, me.token, { ...change, currentPassword: me.password }, freshAddress());
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(ok.json().email, newEmail);
      assert.equal(leaksSecret(ok.body, [me.password]), false);
      assert.equal(await signinStatus(t, newEmail, me.password), 200, 'the new email signs in');
    });

    test(`CONTRACT (${profile}): a new password needs currentPassword: missing or wrong is 400 and nothing changes, right is 200`, async () => {
      const t = apps[profile];
      const me = await account(t);
      const other = await signIn(t, me);
      const newPassword = `${me.password}-new`;
      const change = { email: me.email, name: me.name, password: newPassword };
      assertRefused(await put(t, me.id, me.token, change, freshAddress()), 'missing');
      assertRefused(
        await put(t, me.id, me.token, { ...change, currentPassword: WRONG }, freshAddress()),
        'wrong',
      );
      // The new password itself is not the present one either.
      assertRefused(
        await put(t, me.id, me.token, { ...change, currentPassword: newPassword }, freshAddress()),
        'the new one',
      );
      assert.equal(await signinStatus(t, me.email, me.password), 200, 'the old password still works');
      assert.equal(await signinStatus(t, me.email, newPassword), 401, 'the new one does not');
      assert.equal(await isLive(t, other), true, 'no session was ended');

      const ok = await put(t, me.id, me.token, { ...change, currentPassword: me.password }, freshAddress());
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(leaksSecret(ok.body, [me.password, newPassword]), false);
      assert.equal(await signinStatus(t, me.email, newPassword), 200, 'now the new one works');
      assert.equal(await signinStatus(t, me.email, me.password), 401);
      assert.equal(await isLive(t, other), false, 'the other session ended');
      assert.equal(await isLive(t, me.token), true, 'the one that changed it goes on');
    });

    test(`CONTRACT (${profile}): only the name, or the email in another letter case, needs no currentPassword`, async () => {
      const t = apps[profile];
      const me = await account(t);
      const renamed = await put(t, me.id, me.token, { email: me.email, name: 'Renamed Without Password' });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json().name, 'Renamed Without Password');
      const recased = await put(t, me.id, me.token, { email: ` ${me.email.toUpperCase()} `, name: 'Again' });
      assert.equal(recased.statusCode, 200, recased.body);
      assert.equal(recased.json().email, me.email.toUpperCase(), 'the same email key: not a new email');
      assert.equal(await signinStatus(t, me.email, me.password), 200);
    });
  }

  test('CONTRACT: wrong present passwords count in the sign-in throttle: after N, the right one is 429 with Retry-After', async () => {
    const t = apps.b;
    const me = await account(t);
    const at = freshAddress();
    const change = { email: `taken.over.${me.email}`, name: me.name };
    for (let i = 0; i < throttle.perAccountAddress; i++)
      assertRefused(await put(t, me.id, me.token, { ...change, currentPassword: WRONG }, at), `wrong ${i}`);
    const blocked = await put(t, me.id, me.token, { ...change, currentPassword: me.password }, at);
    assert.equal(blocked.statusCode, 429, blocked.body);
    assert.deepEqual(Object.keys(blocked.json()).sort(), ['error', 'message']);
    assert.equal(blocked.json().error, 'SIGNIN_FAILED');
    assert.ok(blocked.json().message.startsWith('currentPassword:'), blocked.json().message);
    const retryAfter = Number(blocked.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${blocked.headers['retry-after']}`);
    assert.equal((await stored(t, me.id)).email, me.email, 'nothing changed');
    // It is the account's sign-in count: signing in from that address is held too ...
    assert.equal((await signinFrom(t, at, me.email, me.password)).statusCode, 429);
    // ... but not from another address, and the session is not ended by any of it.
    const elsewhere = await put(
      t,
      me.id,
      me.token,
      { ...change, currentPassword: me.password },
      freshAddress(),
    );
    assert.equal(elsewhere.statusCode, 200, elsewhere.body);
    assert.equal(await isLive(t, me.token), true);
  });

  test('CONTRACT: sign-in failures and wrong present passwords count together for one account and address', async () => {
    const t = apps.b;
    const me = await account(t);
    const at = freshAddress();
    for (let i = 0; i < throttle.perAccountAddress - 1; i++)
      assert.equal((await signinFrom(t, at, me.email, WRONG)).statusCode, 401);
    assertRefused(
      await put(
        t,
        me.id,
        me.token,
        { email: me.email, name: me.name, password: 'fresh-pass-123', currentPassword: WRONG },
        at,
      ),
      'the last wrong one',
    );
    const blocked = await put(
      t,
      me.id,
      me.token,
      { email: me.email, name: me.name, password: 'fresh-pass-123', currentPassword: me.password },
      at,
    );
    assert.equal(blocked.statusCode, 429, blocked.body);
    assert.equal(await signinStatus(t, me.email, me.password), 200, 'the password did not change');
  });

  test('CONTRACT: a right present password resets the count; a missing one is not counted', async () => {
    const t = apps.b;
    const me = await account(t);
    const at = freshAddress();
    let email = me.email;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < throttle.perAccountAddress - 1; i++) {
        assertRefused(
          await put(
            t,
            me.id,
            me.token,
            { email: `r${round}.${email}`, name: me.name, currentPassword: WRONG },
            at,
          ),
          `round ${round}`,
        );
        assertRefused(
          await put(t, me.id, me.token, { email: `r${round}.${email}`, name: me.name }, at),
          'missing',
        );
      }
      const res = await put(
        t,
        me.id,
        me.token,
        { email: `r${round}.${email}`, name: me.name, currentPassword: me.password },
        at,
      );
      assert.equal(res.statusCode, 200, `round ${round}: ${res.body}`);
      email = `r${round}.${email}`;
    }
  });

  test('CONTRACT: the checks that need no password come first: another user is 403, a bad field 400 naming it', async () => {
    const t = apps.b;
    const me = await account(t);
    const other = await account(t);
    const forbidden = await put(t, other.id, me.token, {
      email: `x.${other.email}`,
      name: 'x',
      currentPassword: me.password,
    });
    assert.equal(forbidden.statusCode, 403, forbidden.body);
    const badEmail = await put(t, me.id, me.token, { email: 'not-an-email', name: 'x' });
    assert.equal(badEmail.statusCode, 400);
    assert.match(badEmail.json().message, /^email: /);
    const badPassword = await put(t, me.id, me.token, { email: me.email, name: 'x', password: 'short' });
    assert.equal(badPassword.statusCode, 400);
    assert.match(badPassword.json().message, /^password: /);
  });
});
