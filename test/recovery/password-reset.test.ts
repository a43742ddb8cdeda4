// Password reset (CONTRACT "Mail, password reset and email verification"), black-box: forgot-password
// asks go through HTTP, the mail is received by a real SMTP server, and its link is followed. Shown:
// known and unknown emails answer alike and only a known one gets mail; a reset ends every session,
// voids other links, verifies the email, forgives the sign-in throttle and mails a notice; tokens
// are single-use and expire; the per-account and per-address limits.
//
// "No mail was sent" is shown by ordering: asks are worked out, and mail sent, in the order they
// were recorded, so once the mail of an ask recorded later (for a marker account) has arrived,
// any mail for an earlier ask would have arrived too.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig, type Profile } from '../../src/config.ts';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailingApps, mailsTo, mailTo, median, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { linkToken, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://accounts.usher.example';
const PROFILES: readonly Profile[] = ['a', 'b'];
const DEFAULTS = loadConfig({});
const RESET_TTL_MS = DEFAULTS.tokens.passwordResetTtlMs;
const NEW_PASSWORD = 'a brand new passphrase';
const PRODUCT = { name: 'lamp', price: 100 };

let addresses = 0;
/** A client address no other ask in this process came from (the per-address limit is 20). */
function nextAddress(): string {
  addresses += 1;
  return `10.${(addresses >> 16) & 255}.${(addresses >> 8) & 255}.${addresses & 255}`;
}

function forgot(t: TestApp, email: unknown, remoteAddress = nextAddress()) {
  return t.inject({
    method: 'POST',
    url: '/api/password/forgot',
    remoteAddress,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email }),
  });
}

const reset = (t: TestApp, token: string, password: unknown = NEW_PASSWORD) =>
  t.post('/api/password/reset', { token, password });

function signInFrom(t: TestApp, remoteAddress: string, email: string, password: string) {
  return t.inject({
    method: 'POST',
    url: '/api/signin',
    remoteAddress,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email, password }),
  });
}

function assertAccepted(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 202, `${what}: ${res.body}`);
  assert.deepEqual(res.json(), { status: 'accepted' }, what);
}

function assertInvalidToken(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
  assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
  assert.equal(res.json().error, 'INVALID_TOKEN', what);
}

function assertValidationFailed(res: LightMyRequestResponse, field: string, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
  assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
  assert.equal(res.json().error, 'VALIDATION_FAILED', what);
  assert.match(res.json().message, new RegExp(`^${field}: `), what);
}

/** The headers of an answer without those that differ from one answer to the next. */
function stableHeaders(res: LightMyRequestResponse): Record<string, unknown> {
  const { date: _date, 'x-request-id': _id, ...rest } = res.headers;
  return rest;
}

describeEachStore('password reset', (store) => {
  const mailing = mailingApps(store, PUBLIC_URL);
  const apps = mailing.apps;
  let smtp: TestSmtp;
  before(() => {
    smtp = mailing.smtp;
  });

  const startWith = (
    overrides: Parameters<typeof startApp>[2],
    options: Parameters<typeof startApp>[3] = {},
  ) => startApp(store, 'b', { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url), ...overrides }, options);

  /** Waits until `email` has `count` reset mails and returns their tokens, oldest first. */
  async function resetTokens(email: string, count = 1): Promise<string[]> {
    const mails = await waitForMails(smtp, email, SUBJECTS.reset, count);
    return mails.map((m) => linkToken(m, '/reset-password'));
  }

  /** Asks for a reset of a new account and waits for its mail: every ask recorded before is done. */
  async function drain(t: TestApp): Promise<void> {
    const marker = await register(t);
    assertAccepted(await forgot(t, marker.email), 'the marker ask');
    await resetTokens(marker.email);
  }

  async function emailVerified(t: TestApp, id: bigint): Promise<unknown> {
    return (await t.get(`/api/users/${id}`)).json().emailVerified;
  }

  for (const profile of PROFILES) {
    test(`[${profile}] forgot: a known and an unknown email get the same answer; only the known one gets a mail`, async () => {
      const t = apps[profile];
      const user = await register(t);
      const unknown = `nobody.${Date.now()}.${process.pid}@example.com`;
      const address = nextAddress();

      const known = await forgot(t, user.email, address);
      const missing = await forgot(t, unknown, address);
      assertAccepted(known, 'a known email');
      assertAccepted(missing, 'an unknown email');
      assert.equal(known.body, missing.body);
      assert.deepEqual(stableHeaders(missing), stableHeaders(known), 'the same headers');
      assert.equal(known.headers['cache-control'], 'no-store');

      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
      assert.equal(mail!.subject, 'Reset your password');
      const url = `${PUBLIC_URL}/reset-password#token=${linkToken(mail!, '/reset-password')}`;
      assert.match(linkToken(mail!, '/reset-password'), /^[A-Za-z0-9_-]{43}$/);
      assert.ok(mail!.text.includes(url), mail!.text);
      assert.ok(mail!.html.includes(`href="${url}"`) && mail!.html.includes(`>${url}</p>`), mail!.html);

      await drain(t);
      assert.deepEqual(mailsTo(smtp, unknown), [], 'no mail for an email without an account');
      assert.equal(mailsTo(smtp, user.email, SUBJECTS.reset).length, 1);
    });
  }

  test('forgot: time to answer, known vs unknown emails, and time until the mail arrives (measured, not asserted)', async (t) => {
    const app = apps.b;
    const known = [];
    for (let i = 0; i < 20; i++) known.push(await register(app));
    for (const user of known) await waitForMails(smtp, user.email, SUBJECTS.verify);

    const times = { known: [] as number[], unknown: [] as number[] };
    // Interleaved, each kind first every other time: background work an ask leaves behind (the
    // lookup, the mail) falls on the next request alike for both kinds.
    for (let i = 0; i < 20; i++) {
      const pair = [
        ['known', known[i]!.email],
        ['unknown', `absent${i}.${Date.now()}@example.com`],
      ] as const;
      for (const [kind, email] of i % 2 === 0 ? pair : [...pair].reverse()) {
        const started = process.hrtime.bigint();
        const res = await forgot(app, email);
        times[kind].push(Number(process.hrtime.bigint() - started) / 1e6);
        assertAccepted(res, kind);
      }
    }
    for (const user of known) await resetTokens(user.email);

    const arrival: number[] = [];
    for (const user of known) {
      const started = performance.now();
      assertAccepted(await forgot(app, user.email), 'a second ask');
      await resetTokens(user.email, 2);
      arrival.push(performance.now() - started);
    }
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    t.diagnostic(
      `[${store.kind}] forgot answer median: known ${ms(median(times.known))}, unknown ${ms(median(times.unknown))}`,
    );
    t.diagnostic(
      `[${store.kind}] forgot → mail received median: ${ms(median(arrival))} (of ${arrival.length})`,
    );
  });

  test('forgot: the email matches in any letter case, surrounding whitespace trimmed; the mail goes to the address as registered', async () => {
    const t = apps.b;
    const user = await register(t);
    assertAccepted(await forgot(t, `  ${user.email.toUpperCase()} `), 'upper case, with spaces');
    const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
    assert.equal(mail!.to, user.email);
  });

  test('forgot: a missing or non-string email is 400 VALIDATION_FAILED', async () => {
    const t = apps.b;
    const noEmail = await t.inject({
      method: 'POST',
      url: '/api/password/forgot',
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    assertValidationFailed(noEmail, 'email', 'no email');
    for (const email of [42, null, true, ['a@example.com'], { email: 'a@example.com' }]) {
      assertValidationFailed(await forgot(t, email), 'email', JSON.stringify(email));
    }
  });

  for (const profile of PROFILES) {
    test(`[${profile}] reset from the mailed link: sessions end, the new password works, links are void, the email is verified, a notice is mailed`, async () => {
      const t = apps[profile];
      const user = await register(t);
      const sessions = [await signIn(t, user), await signIn(t, user)];
      for (const session of sessions) {
        assert.equal((await asUser(t, session).post('/api/products', PRODUCT)).statusCode, 201);
      }
      if (profile === 'b') assert.equal(await emailVerified(t, user.id), false);

      assertAccepted(await forgot(t, user.email), 'first ask');
      assertAccepted(await forgot(t, user.email), 'second ask');
      const [earlier, later] = await resetTokens(user.email, 2);
      assert.notEqual(earlier, later);

      const res = await reset(t, later!);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');

      for (const session of sessions) {
        const after = await asUser(t, session).post('/api/products', PRODUCT);
        assert.equal(after.statusCode, 401, `a session from before the reset: ${after.body}`);
      }
      const signin = await t.post('/api/signin', { email: user.email, password: NEW_PASSWORD });
      assert.equal(signin.statusCode, 200, signin.body);
      const old = await t.post('/api/signin', { email: user.email, password: user.password });
      assert.equal(old.statusCode, 401, old.body);

      assertInvalidToken(await reset(t, later!, 'yet another password'), 'the same link again');
      assertInvalidToken(await reset(t, earlier!, 'yet another password'), 'a link mailed earlier');
      assert.equal(
        (await t.post('/api/signin', { email: user.email, password: NEW_PASSWORD })).statusCode,
        200,
      );

      const shown = (await t.get(`/api/users/${user.id}`)).json();
      if (profile === 'b') assert.equal(shown.emailVerified, true, 'the mail reached its owner');
      else assert.deepEqual(Object.keys(shown).sort(), ['email', 'id', 'name']);

      const [notice] = await waitForMails(smtp, user.email, SUBJECTS.changed);
      assert.equal(notice!.subject, 'Your password was changed');
      assert.ok(!notice!.text.includes(NEW_PASSWORD) && !notice!.html.includes(NEW_PASSWORD));
      assert.ok(!/token=/.test(notice!.text), 'the notice carries no link with a token');
      assert.ok(notice!.html.includes('The password of your account was just changed.'));
    });
  }

  test('one link used twice at the same moment: exactly one reset succeeds', async () => {
    const t = apps.b;
    const user = await register(t);
    assertAccepted(await forgot(t, user.email), 'ask');
    const [token] = await resetTokens(user.email);
    const passwords = ['first new password', 'second new password', 'third new password'];
    const answers = await Promise.all(passwords.map((password) => reset(t, token!, password)));
    const won = answers.flatMap((res, i) => (res.statusCode === 204 ? [passwords[i]!] : []));
    assert.equal(won.length, 1, `exactly one 204: ${answers.map((r) => r.statusCode)}`);
    for (const res of answers) if (res.statusCode !== 204) assertInvalidToken(res, 'the other uses');
    assert.equal((await t.post('/api/signin', { email: user.email, password: won[0] })).statusCode, 200);
    await waitForMails(smtp, user.email, SUBJECTS.changed);
  });

  test('a use whose clock was read earlier but reaches the token later cannot use it again', async () => {
    // Each clock reading is a second before the last: the second reset reads a time before the
    // first one's, as a request that read the clock first and lost the race for the row would.
    let readings = 0;
    const t = await startWith({}, { clock: () => Date.now() - 1000 * readings++ });
    try {
      const user = await register(t);
      assertAccepted(await forgot(t, user.email), 'ask');
      const [token] = await resetTokens(user.email);
      assert.equal((await reset(t, token!, 'first new password')).statusCode, 204);
      assertInvalidToken(await reset(t, token!, 'second new password'), 'the same link again');
      assert.equal(
        (await t.post('/api/signin', { email: user.email, password: 'first new password' })).statusCode,
        200,
      );
    } finally {
      await t.close();
    }
  });

  test('a reset link is good until PASSWORD_RESET_TTL after it was mailed, and INVALID_TOKEN after', async () => {
    let offset = 0;
    const t = await startWith({}, { clock: () => Date.now() + offset });
    try {
      const early = await register(t);
      const late = await register(t);
      assertAccepted(await forgot(t, early.email), 'early');
      assertAccepted(await forgot(t, late.email), 'late');
      const [earlyToken] = await resetTokens(early.email);
      const [lateToken] = await resetTokens(late.email);

      offset = RESET_TTL_MS - 60_000;
      assert.equal((await reset(t, earlyToken!)).statusCode, 204, 'a minute before it expires');

      offset = RESET_TTL_MS + 1000;
      assertInvalidToken(await reset(t, lateToken!), 'a second after it expired');
      const old = await t.post('/api/signin', { email: late.email, password: late.password });
      assert.equal(old.statusCode, 200, `the expired link changed nothing: ${old.body}`);
    } finally {
      await t.close();
    }
  });

  test('a new password that breaks the rules is 400 VALIDATION_FAILED and the link stays usable', async () => {
    const t = apps.b;
    const user = await register(t);
    assertAccepted(await forgot(t, user.email), 'ask');
    const [token] = await resetTokens(user.email);

    assertValidationFailed(await reset(t, token!, 'short'), 'password', 'a 5-character password');
    assertValidationFailed(await reset(t, token!, 'x'.repeat(1025)), 'password', 'a 1025-character password');
    assertValidationFailed(await reset(t, token!, 12345678), 'password', 'a number');
    const old = await t.post('/api/signin', { email: user.email, password: user.password });
    assert.equal(old.statusCode, 200, 'the password did not change');

    assert.equal((await reset(t, token!)).statusCode, 204, 'the same link with a good password');
    assert.equal(
      (await t.post('/api/signin', { email: user.email, password: NEW_PASSWORD })).statusCode,
      200,
    );
  });

  test('at most 3 reset mails per account in 15 minutes: 4 asks give exactly 3 mails', async () => {
    const t = apps.b;
    assert.equal(DEFAULTS.passwordReset.perAccount, 3);
    const user = await register(t);
    for (let i = 1; i <= 4; i++) assertAccepted(await forgot(t, user.email), `ask ${i}`);
    const tokens = await resetTokens(user.email, 3);
    await drain(t);
    assert.equal(mailsTo(smtp, user.email, SUBJECTS.reset).length, 3, 'the 4th ask sent nothing');
    assert.equal(new Set(tokens).size, 3);
  });

  test('ISSUE 25: asks from one IPv6 /64 count together, whatever /128 each comes from', async () => {
    const t = await startWith({ passwordReset: { ...DEFAULTS.passwordReset, perAddress: 3 } });
    try {
      const prefix = `2001:db8:${Date.now().toString(16).slice(-4)}:25`;
      for (let i = 1; i <= 3; i++) {
        assertAccepted(
          await forgot(t, `absent${i}.${Date.now()}@example.com`, `${prefix}::${i}`),
          `ask ${i}`,
        );
      }
      const res = await forgot(t, `absent4.${Date.now()}@example.com`, `${prefix}:ffff::4`);
      assert.equal(res.statusCode, 429, res.body);
      assertAccepted(await forgot(t, `absent5.${Date.now()}@example.com`, `${prefix}1::5`), 'another /64');
    } finally {
      await t.close();
    }
  });

  test('more than perAddress asks from one address: 429 TOO_MANY_REQUESTS with Retry-After, and nothing recorded', async () => {
    const t = await startWith({ passwordReset: { ...DEFAULTS.passwordReset, perAddress: 3 } });
    try {
      const user = await register(t);
      const address = nextAddress();
      for (let i = 1; i <= 3; i++) {
        assertAccepted(await forgot(t, `absent${i}.${Date.now()}@example.com`, address), `ask ${i}`);
      }
      for (let i = 4; i <= 5; i++) {
        const res = await forgot(t, user.email, address);
        assert.equal(res.statusCode, 429, `ask ${i}: ${res.body}`);
        assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
        assert.equal(res.json().error, 'TOO_MANY_REQUESTS');
        const retryAfter = Number(res.headers['retry-after']);
        assert.ok(
          Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900,
          `Retry-After ${retryAfter}`,
        );
      }
      assertAccepted(await forgot(t, `absent.${Date.now()}@example.com`, nextAddress()), 'another address');

      await drain(t);
      assert.deepEqual(mailsTo(smtp, user.email, SUBJECTS.reset), [], 'a refused ask sends nothing');
    } finally {
      await t.close();
    }
  });

  test('a reset forgives the sign-in throttle: the new password signs in from an address that was throttled', async () => {
    const t = apps.b;
    const user = await register(t);
    const address = nextAddress();
    let attempts = 0;
    for (;;) {
      attempts += 1;
      const res = await signInFrom(t, address, user.email, 'a wrong password');
      if (res.statusCode === 429) break;
      assert.equal(res.statusCode, 401, res.body);
      assert.ok(attempts <= 11, 'throttled after 10 failures');
    }
    assert.equal(attempts, DEFAULTS.throttle.perAccountAddress + 1);
    const right = await signInFrom(t, address, user.email, user.password);
    assert.equal(right.statusCode, 429, 'the right password is throttled too, before the reset');

    assertAccepted(await forgot(t, user.email), 'ask');
    const [token] = await resetTokens(user.email);
    assert.equal((await reset(t, token!)).statusCode, 204);
    const after = await signInFrom(t, address, user.email, NEW_PASSWORD);
    assert.equal(after.statusCode, 200, after.body);
  });
});
