// Issue 25: nobody can lock an owner out. Each test replays the red team's attack at small limits
// (the mechanism is the one the defaults use) and checks the owner's way in, and that the
// attacker's guesses stay bounded.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { DEVICE_COOKIE } from '../../src/sessions/guard.ts';
import { newUser, register, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, waitForMails } from '../helpers/mail.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const WRONG = 'definitely-wrong-1';

/** The device token a response set in its device cookie (undefined when it set none). */
function deviceCookie(res: LightMyRequestResponse): string | undefined {
  const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = cookies.find((c) => c.startsWith(`${DEVICE_COOKIE}=`));
  return cookie?.slice(DEVICE_COOKIE.length + 1).split(';')[0];
}

describeEachStore('No malicious lockout: known devices, networks, the reset flow', (store) => {
  const throttle = {
    windowMs: 900_000,
    perAccountAddress: 3,
    perAccount: 6,
    perAddress: 8,
    concurrentPerAccount: 1000,
    concurrentPerAddress: 1000,
    deviceTtlMs: 30 * 24 * 3600 * 1000,
  };
  let smtp: TestSmtp;
  const apps = {} as { a: TestApp; b: TestApp };
  before(async () => {
    smtp = await startSmtp();
    const overrides = { throttle, mail: mailTo(smtp.url), publicUrl: 'http://usher.test' };
    apps.a = await startApp(store, 'a', overrides);
    apps.b = await startApp(store, 'b', overrides);
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
    await smtp.close();
  });

  let addresses = 0;
  const freshAddress = () => `10.77.${++addresses >> 8}.${addresses & 255}`;

  const signin = (
    t: TestApp,
    body: object,
    {
      address = freshAddress(),
      device,
      url = '/api/signin',
    }: { address?: string; device?: string; url?: string } = {},
  ) =>
    t.inject({
      method: 'POST',
      url,
      remoteAddress: address,
      headers: {
        'content-type': 'application/json',
        ...(device === undefined ? {} : { cookie: `${DEVICE_COOKIE}=${device}` }),
      },
      payload: JSON.stringify(body),
    });

  /** The attack: failures on the account from many addresses until it is throttled for strangers. */
  async function lockAccount(t: TestApp, email: string) {
    for (let i = 0; i < throttle.perAccount; i++) {
      assert.equal((await signin(t, { email, password: WRONG })).statusCode, 401, `guess ${i + 1}`);
    }
    const stranger = await signin(t, { email, password: WRONG });
    assert.equal(stranger.statusCode, 429, 'the account is throttled for clients it does not know');
  }

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] ISSUE 25: an owner signing in from a device they used before is not locked out by others' failures`, async () => {
      const t = apps[profile];
      const u = await register(t);
      const first = await signin(t, { email: u.email, password: u.password });
      assert.equal(first.statusCode, 200);
      const device = deviceCookie(first);
      assert.ok(device, 'a successful sign-in sets the device cookie');

      await lockAccount(t, u.email);
      // The right password from a new browser is refused, as before (the attacker's guesses stay bounded)...
      const newBrowser = await signin(t, { email: u.email, password: u.password });
      assert.equal(newBrowser.statusCode, 429);
      assert.ok(Number(newBrowser.headers['retry-after']) >= 1);
      // ...but the owner's own browser gets in, from any address, with the documented body.
      const owner = await signin(t, { email: u.email, password: u.password }, { device });
      assert.equal(owner.statusCode, 200, owner.body);
      const body = owner.json();
      assert.equal(profile === 'a' ? body.email : body.user.email, u.email);
      // The attacker keeps going: still refused, the owner still in.
      assert.equal((await signin(t, { email: u.email, password: u.password })).statusCode, 429);
      assert.equal((await signin(t, { email: u.email, password: u.password }, { device })).statusCode, 200);
    });
  }

  test('ISSUE 25: the device cookie is HttpOnly, SameSite=Strict, scoped to /api, and renewed with the same token', async () => {
    const t = apps.b;
    const u = await register(t);
    const first = await signin(t, { email: u.email, password: u.password });
    const cookie = ([] as string[])
      .concat(first.headers['set-cookie'] ?? [])
      .find((c) => c.startsWith(`${DEVICE_COOKIE}=`));
    assert.ok(cookie);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Strict/);
    assert.match(cookie, /; Path=\/api(;|$)/);
    assert.match(cookie, new RegExp(`; Max-Age=${throttle.deviceTtlMs / 1000}(;|$)`));
    const token = deviceCookie(first)!;
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    const again = await signin(t, { email: u.email, password: u.password }, { device: token });
    assert.equal(deviceCookie(again), token, 'the browser keeps its token');
    // Nothing about the device in the documented body.
    assert.deepEqual(Object.keys(again.json()), ['user']);
  });

  test('ISSUE 25: a known device is judged by its own failures: it is stopped after the per-pair limit, others are not', async () => {
    const t = apps.b;
    const u = await register(t);
    const deviceA = deviceCookie(await signin(t, { email: u.email, password: u.password }))!;
    const deviceB = deviceCookie(await signin(t, { email: u.email, password: u.password }))!;
    assert.notEqual(deviceA, deviceB);
    // Each guess from a new address: only the device's own count can stop it.
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      assert.equal(
        (await signin(t, { email: u.email, password: WRONG }, { device: deviceA })).statusCode,
        401,
      );
    }
    const stopped = await signin(t, { email: u.email, password: u.password }, { device: deviceA });
    assert.equal(stopped.statusCode, 429, 'a stolen device cookie gives no more guesses than an address');
    assert.equal(
      (await signin(t, { email: u.email, password: u.password }, { device: deviceB })).statusCode,
      200,
    );
  });

  test("ISSUE 25: a device token is bound to the account it signed in to: an attacker's own device cookie does not lift the lock on another account", async () => {
    const t = apps.b;
    const victim = await register(t);
    const attacker = await register(t);
    const attackerDevice = deviceCookie(
      await signin(t, { email: attacker.email, password: attacker.password }),
    )!;
    await lockAccount(t, victim.email);
    const withOwnCookie = await signin(
      t,
      { email: victim.email, password: WRONG },
      { device: attackerDevice },
    );
    assert.equal(withOwnCookie.statusCode, 429);
    // Made-up tokens are strangers too.
    const madeUp = 'A'.repeat(43);
    assert.equal(
      (await signin(t, { email: victim.email, password: WRONG }, { device: madeUp })).statusCode,
      429,
    );
  });

  test('ISSUE 25: behind one address (a proxy without TRUST_PROXY), failures on made-up emails do not lock out the users with known devices', async () => {
    const t = apps.b;
    const proxy = freshAddress();
    const u = await register(t);
    const device = deviceCookie(
      await signin(t, { email: u.email, password: u.password }, { address: proxy }),
    )!;
    for (let i = 0; i < throttle.perAddress; i++) {
      const res = await signin(t, { email: `made-up-${i}@example.com`, password: WRONG }, { address: proxy });
      assert.equal(res.statusCode, 401);
    }
    const other = await register(t);
    assert.equal(
      (await signin(t, { email: other.email, password: other.password }, { address: proxy })).statusCode,
      429,
      'a client the account does not know is held by the address limit',
    );
    assert.equal(
      (await signin(t, { email: u.email, password: u.password }, { address: proxy, device })).statusCode,
      200,
    );
  });

  test('ISSUE 25: POST /api/sessions hands the device token in Usher-Device (no cookie), and takes it back in that header', async () => {
    const t = apps.a;
    const u = await register(t);
    const first = await signin(t, { email: u.email, password: u.password }, { url: '/api/sessions' });
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers['set-cookie'], undefined, 'no cookie on the token route');
    const device = first.headers['usher-device'];
    assert.equal(typeof device, 'string');
    assert.match(String(device), /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(Object.keys(first.json()).sort(), ['session', 'token', 'user']);
    await lockAccount(t, u.email);
    const app = await t.inject({
      method: 'POST',
      url: '/api/sessions',
      remoteAddress: freshAddress(),
      headers: { 'content-type': 'application/json', 'usher-device': String(device) },
      payload: JSON.stringify({ email: u.email, password: u.password }),
    });
    assert.equal(app.statusCode, 201, app.body);
    assert.equal(app.headers['usher-device'], device);
  });

  test('ISSUE 25: the reset flow is a way back: the browser that finishes a reset is known to the account while it is under attack', async () => {
    const t = apps.b;
    const u = await register(t, newUser());
    await lockAccount(t, u.email);
    const asked = await t.inject({
      method: 'POST',
      url: '/api/password/forgot',
      remoteAddress: freshAddress(),
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: u.email }),
    });
    assert.equal(asked.statusCode, 202);
    const [mail] = await waitForMails(smtp, u.email, /reset your password/i);
    const newPassword = 'a brand new passphrase';
    const reset = await t.post('/api/password/reset', {
      token: linkToken(mail!, '/reset-password'),
      password: newPassword,
    });
    assert.equal(reset.statusCode, 204);
    const device = deviceCookie(reset);
    assert.ok(device, 'the reset sets the device cookie');
    // The attacker locks the account again at once...
    await lockAccount(t, u.email);
    assert.equal((await signin(t, { email: u.email, password: newPassword })).statusCode, 429);
    // ...and the owner, in the browser that reset, still gets in.
    assert.equal((await signin(t, { email: u.email, password: newPassword }, { device })).statusCode, 200);
  });

  test('ISSUE 25: IPv6 clients are counted by /64: new addresses in one /64 share one count; another /64 is apart', async () => {
    const t = apps.b;
    const u = await register(t);
    const prefix = `2001:db8:${(++addresses).toString(16)}:7`;
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      const address = `${prefix}:${(i + 1).toString(16)}::${(i * 7 + 1).toString(16)}`;
      assert.equal((await signin(t, { email: u.email, password: WRONG }, { address })).statusCode, 401);
    }
    const sameNetwork = await signin(
      t,
      { email: u.email, password: u.password },
      { address: `${prefix}:ffff::1` },
    );
    assert.equal(sameNetwork.statusCode, 429, 'a fresh /128 in the same /64 is the same client');
    const otherNetwork = await signin(
      t,
      { email: u.email, password: u.password },
      { address: `${prefix.slice(0, -1)}8::1` },
    );
    assert.equal(otherNetwork.statusCode, 200);
  });

  test('ISSUE 25: an IPv4 client is counted by its address, also when it arrives as an IPv4-mapped IPv6 address', async () => {
    const t = apps.b;
    const u = await register(t);
    const address = freshAddress();
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      const res = await signin(
        t,
        { email: u.email, password: WRONG },
        { address: i % 2 ? `::ffff:${address}` : address },
      );
      assert.equal(res.statusCode, 401);
    }
    assert.equal(
      (await signin(t, { email: u.email, password: u.password }, { address: `::ffff:${address}` }))
        .statusCode,
      429,
    );
    // The neighbouring IPv4 address is another client.
    const neighbour = address.replace('10.77.', '10.78.');
    assert.equal(
      (await signin(t, { email: u.email, password: u.password }, { address: neighbour })).statusCode,
      200,
    );
  });
  test("ISSUE 25: known devices belong to the account, not to the address: tokens collected by an address's earlier holder are strangers to its next one", async () => {
    const t = apps.b;
    const taken = await register(t);
    // The earlier holder collects device tokens for the address, then gives it up.
    const collected: string[] = [];
    for (let i = 0; i < 3; i++) {
      collected.push(deviceCookie(await signin(t, { email: taken.email, password: taken.password }))!);
    }
    const session = await t.inject({
      method: 'POST',
      url: '/api/sessions',
      remoteAddress: freshAddress(),
      payload: { email: taken.email, password: taken.password },
    });
    const token = session.json().token as string;
    const gone = await t.inject({
      method: 'DELETE',
      url: `/api/users/${taken.id}`,
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(gone.statusCode, 204, gone.body);
    // Someone else registers the address; an attacker locks it and tries the collected tokens.
    const next = await register(t, newUser({ email: taken.email }));
    await lockAccount(t, next.email);
    for (const device of collected) {
      assert.equal(
        (await signin(t, { email: next.email, password: next.password }, { device })).statusCode,
        429,
      );
    }
  });

  test("ISSUE 25: an owner's known devices follow an email change, and the old address's tokens do not come back to it", async () => {
    const t = apps.b;
    const u = await register(t);
    const device = deviceCookie(await signin(t, { email: u.email, password: u.password }))!;
    const session = await t.inject({
      method: 'POST',
      url: '/api/sessions',
      remoteAddress: freshAddress(),
      payload: { email: u.email, password: u.password },
    });
    const moved = newUser().email;
    const changed = await t.inject({
      method: 'PUT',
      url: `/api/users/${u.id}`,
      remoteAddress: freshAddress(),
      headers: { authorization: `Bearer ${session.json().token}` },
      payload: { email: moved, name: u.name, currentPassword: u.password },
    });
    assert.equal(changed.statusCode, 200, changed.body);
    await lockAccount(t, moved);
    assert.equal((await signin(t, { email: moved, password: u.password }, { device })).statusCode, 200);
    // The address the account left: someone registering it starts with no known devices.
    const newcomer = await register(t, newUser({ email: u.email }));
    await lockAccount(t, newcomer.email);
    assert.equal(
      (await signin(t, { email: newcomer.email, password: newcomer.password }, { device })).statusCode,
      429,
    );
  });
  test('ISSUE 25: an app on a CORS_ORIGINS origin may send Usher-Device and read it back', async () => {
    const origin = 'https://app.example.com';
    const cors = await startApp(store, 'b', { throttle, corsOrigins: [origin] });
    try {
      const preflight = await cors.inject({
        method: 'OPTIONS',
        url: '/api/sessions',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,usher-device',
        },
      });
      assert.match(String(preflight.headers['access-control-allow-headers']), /usher-device/i);
      const u = await register(cors);
      const signedIn = await cors.inject({
        method: 'POST',
        url: '/api/sessions',
        headers: { origin, 'content-type': 'application/json' },
        payload: JSON.stringify({ email: u.email, password: u.password }),
      });
      assert.equal(signedIn.statusCode, 201);
      assert.match(String(signedIn.headers['access-control-expose-headers']), /usher-device/i);
    } finally {
      await cors.close();
    }
  });
});
