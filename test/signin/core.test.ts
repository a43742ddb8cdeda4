// The sign-in core, through a method that is not built in: the example method (a folder of its
// own, registered with one line: the `features` list). Every rule of the core applies to it
// without a line of its own: the throttle, REQUIRE_VERIFIED_EMAIL, the second factor by ticket,
// the session, the audit line and the metric.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Config, Profile } from '../../src/config.ts';
import { FEATURES } from '../../src/features.ts';
import { NO_THROTTLE, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { metric } from '../helpers/mail.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';
import { exampleMethod, exampleWord } from './example-method/feature.ts';

const T0 = Date.UTC(2026, 10, 25, 9, 0, 10);
const KEY = randomBytes(32);

describeEachStore('The sign-in core, through the example method', (store) => {
  const clock = { now: T0 };
  const configuredKey = randomBytes(32);
  const apps = {} as Record<Profile, TestApp>;
  let strict: TestApp;
  const throttle = { ...NO_THROTTLE, perAccountAddress: 3 };
  before(async () => {
    const overrides: Partial<Config> = {
      throttle,
      ...(store.kind === 'postgres' ? { encryptionKey: configuredKey } : {}),
    };
    const options = { clock: () => clock.now, features: FEATURES.with(exampleMethod(KEY)) };
    apps.a = await startApp(store, 'a', overrides, options);
    apps.b = await startApp(store, 'b', overrides, options);
    strict = await startApp(store, 'b', { ...overrides, requireVerifiedEmail: true }, options);
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
    await strict.close();
  });

  let addresses = 0;
  const freshAddress = () => `10.77.${++addresses >> 8}.${addresses & 255}`;
  const post = (t: TestApp, url: string, body: object, address = freshAddress(), token?: string) =>
    t.inject({
      method: 'POST',
      url,
      remoteAddress: address,
      headers: {
        'content-type': 'application/json',
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      payload: JSON.stringify(body),
    });
  const example = (t: TestApp, email: string, address?: string, word = exampleWord(KEY, email)) =>
    post(t, '/api/signin/example', { email, word }, address);
  const sessionCookie = (res: { headers: Record<string, unknown> }) =>
    ([res.headers['set-cookie']].flat() as string[]).find((c) => c?.startsWith('usher_session='));

  /** TOTP put in force for a registered user; codes are computed from the secret returned. */
  async function turnOnTotp(t: TestApp, u: { email: string; password: string }) {
    const token = await signIn(t, u);
    const setup = await post(t, '/api/mfa/totp', { password: u.password }, undefined, token);
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret } = setup.json() as { secret: string };
    const confirm = await post(
      t,
      '/api/mfa/totp/confirm',
      { code: totpAt(secret, clock.now) },
      undefined,
      token,
    );
    assert.equal(confirm.statusCode, 200, confirm.body);
    clock.now += STEP_MS; // the code used to confirm cannot be used again
    return secret;
  }
  const ticketOf = (location: unknown) => /#second-factor=([A-Za-z0-9_-]{43})$/.exec(String(location))?.[1];

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 26 (${profile}): a new method signs in with the core's answer, cookie and metric`, async () => {
      const t = apps[profile];
      const u = await register(t);
      const before = await metric(t, 'usher_signins_total', 'method="example",outcome="success"');
      const res = await example(t, u.email);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().user?.email ?? res.json().email, u.email);
      const cookie = sessionCookie(res);
      assert.ok(cookie, 'the session cookie is set');
      const me = await t.inject({
        method: 'GET',
        url: '/api/session',
        headers: { cookie: cookie.split(';')[0]! },
      });
      assert.equal(me.statusCode, 200);
      assert.equal(await metric(t, 'usher_signins_total', 'method="example",outcome="success"'), before + 1);
      assert.ok(t.logs.some((l) => l.includes('"event":"signin"') && l.includes('"method":"example"')));

      const wrong = await example(t, u.email, undefined, 'not-the-word');
      assert.equal(wrong.statusCode, 401);
      assert.deepEqual(
        wrong.json(),
        profile === 'a'
          ? { error: 'SIGNIN_FAILED' }
          : { error: 'SIGNIN_FAILED', message: 'That word does not open this account.' },
      );
    });
  }

  test("ISSUE 26: the method's failures pass the core's throttle, the account's by default", async () => {
    const t = apps.b;
    const u = await register(t);
    const address = freshAddress();
    for (let i = 0; i < throttle.perAccountAddress; i++)
      assert.equal((await example(t, u.email, address, 'wrong')).statusCode, 401);
    const refused = await example(t, u.email, address);
    assert.equal(refused.statusCode, 429, 'the right word is refused too once throttled');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.equal((await example(t, u.email)).statusCode, 200, 'from another address it still signs in');
  });

  test('ISSUE 26: REQUIRE_VERIFIED_EMAIL holds for the new method without a line of its own', async () => {
    const u = await register(strict);
    const res = await example(strict, u.email);
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error, 'SIGNIN_FAILED');
    assert.equal(sessionCookie(res), undefined);
  });

  test('ISSUE 26: with TOTP in force, a method without a body for a code leaves a ticket; a code finishes it once', async () => {
    const t = apps.b;
    const u = await register(t);
    const secret = await turnOnTotp(t, u);

    const first = await example(t, u.email);
    assert.equal(first.statusCode, 303);
    assert.equal(sessionCookie(first), undefined, 'no session before the second factor');
    const ticket = ticketOf(first.headers.location);
    assert.ok(ticket, `a ticket in the fragment: ${first.headers.location}`);
    assert.ok(!t.logs.some((l) => l.includes(ticket)), 'the ticket is never logged');

    const address = freshAddress();
    const noCode = await post(t, '/api/signin/second-factor', { ticket }, address);
    assert.equal(noCode.statusCode, 401);
    assert.equal(noCode.headers['usher-second-factor'], 'totp');

    const failures = () => metric(t, 'usher_signins_total', 'method="example",outcome="failure"');
    const failedBefore = await failures();
    const wrong = await post(
      t,
      '/api/signin/second-factor',
      { ticket, code: wrongCodeAt(secret, clock.now) },
      address,
    );
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers['usher-second-factor'], 'totp');
    assert.equal(await failures(), failedBefore + 1, "a wrong code on a live ticket is the method's failure");

    const before = await metric(t, 'usher_signin_second_factors_total', 'factor="totp"');
    const done = await post(
      t,
      '/api/signin/second-factor',
      { ticket, code: totpAt(secret, clock.now) },
      address,
    );
    assert.equal(done.statusCode, 200, done.body);
    assert.deepEqual(Object.keys(done.json()), ['user'], "profile B's success body, as POST /api/signin's");
    assert.equal(done.json().user.email, u.email);
    assert.ok(sessionCookie(done), 'the session cookie is set');
    assert.equal(await metric(t, 'usher_signin_second_factors_total', 'factor="totp"'), before + 1);
    assert.ok(
      t.logs.some(
        (l) =>
          l.includes('"outcome":"success"') &&
          l.includes('"method":"example"') &&
          l.includes('"factor":"totp"'),
      ),
      "the success is the method's, with its factor",
    );

    clock.now += STEP_MS;
    const again = await post(
      t,
      '/api/signin/second-factor',
      { ticket, code: totpAt(secret, clock.now) },
      address,
    );
    assert.equal(again.statusCode, 401, 'a ticket is single-use');
    assert.equal(again.headers['usher-second-factor'], undefined);
  });

  test('ISSUE 26: a ticket dies with its 5th wrong code, and after 5 minutes', async () => {
    const t = apps.a;
    const u = await register(t);
    const secret = await turnOnTotp(t, u);

    const ticket = ticketOf((await example(t, u.email)).headers.location)!;
    for (let i = 0; i < 5; i++) {
      const res = await post(t, '/api/signin/second-factor', {
        ticket,
        code: wrongCodeAt(secret, clock.now),
      });
      assert.equal(res.statusCode, 401);
    }
    const dead = await post(t, '/api/signin/second-factor', { ticket, code: totpAt(secret, clock.now) });
    assert.equal(dead.statusCode, 401, 'the right code does not revive a dead ticket');
    assert.deepEqual(dead.json(), { error: 'SIGNIN_FAILED' });
    assert.equal(sessionCookie(dead), undefined);

    // The wrong codes above put the account's code delay on; it runs out, then a new ticket.
    clock.now += 2 * 3600 * 1000;
    const late = ticketOf((await example(t, u.email)).headers.location)!;
    clock.now += 5 * 60 * 1000 + 1000;
    const expired = await post(t, '/api/signin/second-factor', {
      ticket: late,
      code: totpAt(secret, clock.now),
    });
    assert.equal(expired.statusCode, 401, 'a ticket lives 5 minutes');

    const fresh = ticketOf((await example(t, u.email)).headers.location)!;
    const ok = await post(t, '/api/signin/second-factor', { ticket: fresh, code: totpAt(secret, clock.now) });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 26 (${profile}): bad tickets are 401 and bad bodies 400, in the profile's SIGNIN_FAILED shape`, async () => {
      const t = apps[profile];
      const shaped = (message: string) =>
        profile === 'a' ? { error: 'SIGNIN_FAILED' } : { error: 'SIGNIN_FAILED', message };
      for (const ticket of ['', 'x', 'A'.repeat(43), '../etc']) {
        const res = await post(t, '/api/signin/second-factor', { ticket, code: '123456' });
        assert.equal(res.statusCode, 401, ticket);
        assert.deepEqual(
          res.json(),
          shaped('The ticket or the code is not right: sign in again if the ticket has expired.'),
        );
      }
      const badBody = shaped('The request body must be a JSON object with string fields ticket and code.');
      for (const body of [{ ticket: 5, code: '123456' }, { ticket: 'x', code: null }, [], 'ticket']) {
        const res = await post(t, '/api/signin/second-factor', body as object);
        assert.equal(res.statusCode, 400, JSON.stringify(body));
        assert.deepEqual(res.json(), badBody);
      }
      const notJson = await t.inject({
        method: 'POST',
        url: '/api/signin/second-factor',
        headers: { 'content-type': 'text/plain' },
        payload: 'ticket=x',
      });
      assert.equal(notJson.statusCode, 415);
      assert.deepEqual(
        notJson.json(),
        shaped('The request body must be JSON (Content-Type: application/json).'),
      );
    });
  }
});
