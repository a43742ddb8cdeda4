// Issue 25: someone who has the password cannot guess TOTP codes at the sliding window's pace.
// Wrong codes in a row get a growing delay, the owner is mailed, and the owner's own devices are
// not held by it. The app's clock is the test's, so delays pass without waiting.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Config } from '../../src/config.ts';
import { DEVICE_COOKIE } from '../../src/sessions/guard.ts';
import {
  CODE_FAILURE_DECAY_MS,
  CODE_FAILURES_MAILED_AT,
  codeDelayMs,
  FIRST_CODE_DELAY_MS,
  FREE_CODE_FAILURES,
  MAX_CODE_DELAY_MS,
} from '../../src/totp/service.ts';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { mailsTo, mailTo, waitForMails } from '../helpers/mail.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';

const SUBJECT = /password was used with wrong sign-in codes/i;

test('ISSUE 25: the delay schedule leaves someone holding the password under 0.1% in 30 days', () => {
  assert.equal(codeDelayMs(FREE_CODE_FAILURES - 1), 0);
  assert.equal(codeDelayMs(FREE_CODE_FAILURES), FIRST_CODE_DELAY_MS);
  assert.equal(codeDelayMs(FREE_CODE_FAILURES + 1), 2 * FIRST_CODE_DELAY_MS);
  assert.equal(codeDelayMs(1000), MAX_CODE_DELAY_MS);
  // The fastest attacker: each guess the moment the previous delay ends, the count falling by
  // one per CODE_FAILURE_DECAY_MS since the last wrong code meanwhile.
  const month = 30 * 24 * 3600 * 1000;
  let elapsed = 0;
  let guesses = 0;
  let counted = 0;
  while (elapsed <= month) {
    guesses++;
    counted++;
    const wait = codeDelayMs(counted);
    elapsed += wait;
    counted = Math.max(0, counted - Math.floor(wait / CODE_FAILURE_DECAY_MS));
  }
  // Three codes are good at any moment (one step of drift either way) out of a million.
  const chance = 1 - (1 - 3e-6) ** guesses;
  assert.ok(chance < 0.001, `${guesses} guesses: ${chance}`);
  assert.ok(guesses < 60, `${guesses} guesses in 30 days`);
});

describeEachStore('TOTP: wrong codes in a row', (store) => {
  const T0 = Date.UTC(2026, 10, 24, 12, 0, 10);
  const clock = { now: T0 };
  let smtp: TestSmtp;
  const apps = {} as Record<'a' | 'b', TestApp>;
  const key = randomBytes(32);
  before(async () => {
    smtp = await startSmtp();
    const overrides: Partial<Config> = {
      mail: mailTo(smtp.url),
      publicUrl: 'http://usher.test',
      encryptionKey: key,
      // The sliding window is not what is tested here: it stays out of the way.
      throttle: {
        windowMs: 900_000,
        perAccountAddress: 1000,
        perAccount: 1000,
        perAddress: 1000,
        concurrentPerAccount: 1000,
        concurrentPerAddress: 1000,
        deviceTtlMs: 30 * 24 * 3600 * 1000,
      },
    };
    apps.a = await startApp(store, 'a', overrides, { clock: () => clock.now });
    apps.b = await startApp(store, 'b', overrides, { clock: () => clock.now });
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
    await smtp.close();
  });

  let addresses = 0;
  const freshAddress = () => `10.66.${++addresses >> 8}.${addresses & 255}`;
  const post = (t: TestApp, url: string, body: object, headers: Record<string, string> = {}) =>
    t.inject({
      method: 'POST',
      url,
      remoteAddress: freshAddress(),
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(body),
    });
  /** A user with TOTP on, and the device cookie of the browser that set it up. */
  async function withTotp(t: TestApp) {
    const u = await register(t);
    const first = await post(t, '/api/sessions', { email: u.email, password: u.password });
    const token = first.json().token as string;
    const auth = { authorization: `Bearer ${token}` };
    const setup = await post(t, '/api/mfa/totp', { password: u.password }, auth);
    assert.equal(setup.statusCode, 200, setup.body);
    const secret = setup.json().secret as string;
    const confirmed = await post(t, '/api/mfa/totp/confirm', { code: totpAt(secret, clock.now) }, auth);
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    clock.now += STEP_MS; // the confirming code's step is spent
    return { ...u, secret, device: String(first.headers['usher-device']) };
  }
  const guess = (t: TestApp, u: { email: string; password: string; secret: string }, device?: string) =>
    post(
      t,
      '/api/signin',
      { email: u.email, password: u.password, code: wrongCodeAt(u.secret, clock.now) },
      device ? { cookie: `${DEVICE_COOKIE}=${device}` } : {},
    );
  const good = (t: TestApp, u: { email: string; password: string; secret: string }, device?: string) =>
    post(
      t,
      '/api/signin',
      { email: u.email, password: u.password, code: totpAt(u.secret, clock.now) },
      device ? { cookie: `${DEVICE_COOKIE}=${device}` } : {},
    );

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] ISSUE 25: past ${FREE_CODE_FAILURES} wrong codes in a row, codes wait a doubling delay (429 with Retry-After), the right one too`, async () => {
      const t = apps[profile];
      const u = await withTotp(t);
      for (let i = 0; i < FREE_CODE_FAILURES; i++) {
        const res = await guess(t, u);
        assert.equal(res.statusCode, 401, `wrong code ${i + 1}`);
        assert.equal(res.headers['usher-second-factor'], 'totp');
      }
      const held = await good(t, u);
      assert.equal(held.statusCode, 429, 'even the right code waits');
      assert.equal(Number(held.headers['retry-after']), FIRST_CODE_DELAY_MS / 1000);
      if (profile === 'a') assert.deepEqual(held.json(), { error: 'SIGNIN_FAILED' });
      else assert.deepEqual(Object.keys(held.json()).sort(), ['error', 'message']);
      assert.equal(held.json().error, 'SIGNIN_FAILED');
      assert.equal(held.headers['set-cookie'], undefined);
      // Once the delay has passed, one more guess; it doubles the delay.
      clock.now += FIRST_CODE_DELAY_MS + 1000;
      assert.equal((await guess(t, u)).statusCode, 401);
      const longer = await guess(t, u);
      assert.equal(longer.statusCode, 429);
      assert.equal(Number(longer.headers['retry-after']), (2 * FIRST_CODE_DELAY_MS) / 1000);
      // The right code after the delay signs in; it does not wipe the count (an attacker
      // could wait for the owner's next sign-in for 5 free guesses), so the next wrong code
      // starts the next delay at once.
      clock.now += 2 * FIRST_CODE_DELAY_MS + 1000;
      assert.equal((await good(t, u)).statusCode, 200);
      clock.now += STEP_MS;
      assert.equal((await guess(t, u)).statusCode, 401);
      const next = await guess(t, u);
      assert.equal(next.statusCode, 429);
      assert.equal(Number(next.headers['retry-after']), (4 * FIRST_CODE_DELAY_MS) / 1000);
      // A day after the last wrong code the count has fallen by one, and so on.
      clock.now += 8 * CODE_FAILURE_DECAY_MS;
      for (let i = 0; i < FREE_CODE_FAILURES - 1; i++) assert.equal((await guess(t, u)).statusCode, 401);
    });
  }

  test(`ISSUE 25: the owner is mailed once at ${CODE_FAILURES_MAILED_AT} wrong codes in a row`, async () => {
    const t = apps.b;
    const u = await withTotp(t);
    for (let i = 0; i < CODE_FAILURES_MAILED_AT - 1; i++) await guess(t, u);
    await guess(t, u);
    const [mail] = await waitForMails(smtp, u.email, SUBJECT);
    assert.match(mail!.text, new RegExp(`${CODE_FAILURES_MAILED_AT} wrong codes`));
    assert.match(mail!.text, /change it now/);
    await guess(t, u);
    await guess(t, u);
    // Another user's mail as a marker that the sender has caught up.
    const v = await withTotp(t);
    for (let i = 0; i < CODE_FAILURES_MAILED_AT; i++) await guess(t, v);
    await waitForMails(smtp, v.email, SUBJECT);
    assert.equal(mailsTo(smtp, u.email, SUBJECT).length, 1, 'one mail, not one per guess');
  });

  test("ISSUE 25: the owner's known device is not held by the delay others' wrong codes caused", async () => {
    const t = apps.b;
    const u = await withTotp(t);
    for (let i = 0; i < FREE_CODE_FAILURES + 1; i++) await guess(t, u);
    assert.equal((await good(t, u)).statusCode, 429, 'a stranger with the password waits');
    const owner = await good(t, u, u.device);
    assert.equal(owner.statusCode, 200, owner.body);
  });

  test('ISSUE 25: a password reset ends the delay (whoever had the password has it no more)', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    for (let i = 0; i < FREE_CODE_FAILURES + 1; i++) await guess(t, u);
    assert.equal((await good(t, u)).statusCode, 429);
    assert.equal((await post(t, '/api/password/forgot', { email: u.email })).statusCode, 202);
    const [mail] = await waitForMails(smtp, u.email, /reset your password/i);
    const password = 'a fresh passphrase 25';
    const reset = await post(t, '/api/password/reset', {
      token: linkToken(mail!, '/reset-password'),
      password,
    });
    assert.equal(reset.statusCode, 204);
    assert.equal((await good(t, { ...u, password })).statusCode, 200);
  });
  test('ISSUE 25: simultaneous wrong codes at the edge of the free ones get one check, not one each', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    for (let i = 0; i < FREE_CODE_FAILURES - 1; i++) assert.equal((await guess(t, u)).statusCode, 401);
    const answers = await Promise.all(Array.from({ length: 4 }, () => guess(t, u)));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [401, 429, 429, 429], 'the first check starts the delay for the others');
  });

  test('ISSUE 25: a known device has a delay of its own: a stolen device cookie with the password gets no more codes than a stranger', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    for (let i = 0; i < FREE_CODE_FAILURES; i++) assert.equal((await guess(t, u, u.device)).statusCode, 401);
    const held = await good(t, u, u.device);
    assert.equal(held.statusCode, 429, 'the device waits after its own wrong codes');
    assert.equal(Number(held.headers['retry-after']), FIRST_CODE_DELAY_MS / 1000);
    // The account's gate (clients it does not know) was not touched by the device's guesses.
    assert.equal((await good(t, u)).statusCode, 200);
  });
});
