// The rules of sign-in by mail (CONTRACT "Sign-in by mail, languages, and users from other systems"
// and "Accounts and sign-in methods"), each shown through HTTP with mail received by a real SMTP
// server, on both stores: a link or code is used once, also by simultaneous uses; a code dies with
// its fifth wrong try; wrong codes count in the sign-in throttle (and bad links in the address's);
// the per-account mail limit and the per-address ask limit; a link mailed before an email change
// signs nobody in after it; a disabled account is told so only after a right link or code;
// REQUIRE_VERIFIED_EMAIL lets an unverified account in by mail, which verifies it; a code sign-in
// makes the browser a known device of the account. Expiry (the clock) is in expiry.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig, type Profile } from '../../src/config.ts';
import { as, staff } from '../admin/support.ts';
import { asUser, NO_THROTTLE, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  askCode,
  askLink,
  assertAccepted,
  assertError,
  assertSameAnswer,
  assertSigninFailed,
  codes,
  deviceCookie,
  freshAddress,
  holdTable,
  linkTokens,
  mailSigninRows,
  otherCode,
  PROFILES,
  PUBLIC_URL,
  postFrom,
  settle,
  signedInUser,
  signinMails,
  storeReader,
  unknownEmail,
  verifyCode,
  verifyLink,
} from './support.ts';

const DEFAULTS = loadConfig({});
/** Small limits, the mechanism of the defaults: the fourth failure of a pair is refused, the seventh of an account. */
const LOCKOUT = {
  windowMs: 900_000,
  perAccountAddress: 3,
  perAccount: 6,
  perAddress: 8,
  concurrentPerAccount: 1000,
  concurrentPerAddress: 1000,
  deviceTtlMs: 30 * 24 * 3600 * 1000,
};
const ASKS_PER_ADDRESS = 3;

describeEachStore('Sign-in by mail: the rules', (store) => {
  let smtp: TestSmtp;
  /** Profile B with no throttle a test reaches: for the rules that are not the throttle's. */
  let free: TestApp;
  /** Each profile behind the small throttle. */
  const lockout = {} as Record<Profile, TestApp>;
  /** Each profile with at most ASKS_PER_ADDRESS asks per address. */
  const fewAsks = {} as Record<Profile, TestApp>;
  /** Each profile with REQUIRE_VERIFIED_EMAIL=true. */
  const verifiedOnly = {} as Record<Profile, TestApp>;
  const db = storeReader(store);

  before(async () => {
    smtp = await startSmtp();
    const base = { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) };
    free = await startApp(store, 'b', { ...base, throttle: { ...NO_THROTTLE } });
    for (const profile of PROFILES) {
      lockout[profile] = await startApp(store, profile, { ...base, throttle: LOCKOUT });
      fewAsks[profile] = await startApp(store, profile, {
        ...base,
        throttle: { ...NO_THROTTLE },
        passwordReset: { ...DEFAULTS.passwordReset, perAddress: ASKS_PER_ADDRESS },
      });
      verifiedOnly[profile] = await startApp(store, profile, {
        ...base,
        throttle: { ...NO_THROTTLE },
        requireVerifiedEmail: true,
      });
    }
  });
  after(async () => {
    for (const t of [
      free,
      ...Object.values(lockout),
      ...Object.values(fewAsks),
      ...Object.values(verifiedOnly),
    ])
      await t?.close();
    await smtp?.close();
  });

  // --- Used once -------------------------------------------------------------------------------

  /**
   * Six instances for six simultaneous uses: each reads with its own connection, as separate
   * processes do (on SQLite, one connection runs one statement at a time).
   */
  const spread = () => [free, lockout.a, lockout.b, fewAsks.a, fewAsks.b, free];

  test('a link signs in once: used again, it is 401 SIGNIN_FAILED, as a link never mailed is', async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'ask');
    const [token] = await linkTokens(smtp, u.email);
    assert.equal(signedInUser(await verifyLink(t, token), 'b').email, u.email);
    const again = await verifyLink(t, token);
    assertSigninFailed(again, 'b', 401, 'the link again');
    assertSameAnswer(again, await verifyLink(t, 'A'.repeat(43)), 'a used link and one never mailed');
  });

  test('a code signs in once: used again, it is 401 SIGNIN_FAILED', async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    assert.equal(signedInUser(await verifyCode(t, u.email, code), 'b').email, u.email);
    assertSigninFailed(await verifyCode(t, u.email, code), 'b', 401, 'the code again');
  });

  test('one link used six times at the same moment, through several instances: exactly one session, five 401s', async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'ask');
    const [token] = await linkTokens(smtp, u.email);
    const answers = await Promise.all(spread().map((instance) => verifyLink(instance, token)));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, 401, 401, 401, 401, 401], answers.map((r) => r.body).join('\n'));
    for (const res of answers) if (res.statusCode !== 200) assert.equal(res.json().error, 'SIGNIN_FAILED');
    assert.equal(answers.filter((r) => r.headers['set-cookie'] !== undefined).length, 1, 'one session');
  });

  test('one code used six times at the same moment, through several instances: exactly one session, five 401s', async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    const answers = await Promise.all(spread().map((instance) => verifyCode(instance, u.email, code)));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, 401, 401, 401, 401, 401], answers.map((r) => r.body).join('\n'));
    assert.equal(answers.filter((r) => r.headers['set-cookie'] !== undefined).length, 1, 'one session');
  });

  for (const verified of [false, true])
    test(`a link and a code of one account (email ${verified ? 'verified' : 'unverified'}) used at the same moment, through two instances: one session, the other 401, never a 500`, async () => {
      const u = await register(free);
      if (verified) {
        assertAccepted(await askCode(free, u.email), 'a first code');
        const [first] = await codes(smtp, u.email);
        assert.equal((await verifyCode(free, u.email, first)).statusCode, 200);
      }
      const before = verified ? 1 : 0;
      assertAccepted(await askLink(free, u.email), 'link');
      assertAccepted(await askCode(free, u.email), 'code');
      const [token] = await linkTokens(smtp, u.email);
      const [code] = (await codes(smtp, u.email, before + 1)).slice(before);
      // On PostgreSQL, users is held while both are used: the first to spend the email's links
      // and codes waits there, and the other waits for the first's rows (or, without that, would
      // have spent its own and wait on users too): both are waiting when it is let go.
      const held = store.kind === 'postgres' ? await holdTable(db(), 'users') : undefined;
      const both = Promise.all([verifyLink(free, token), verifyCode(lockout.b, u.email, code)]);
      if (held) {
        await held.untilWaitingAnywhere(2, 10_000);
        await held.release();
      }
      const [byLink, byCode] = await both;
      assert.deepEqual(
        [byLink.statusCode, byCode.statusCode].sort(),
        [200, 401],
        `${byLink.statusCode} ${byLink.body} / ${byCode.statusCode} ${byCode.body}`,
      );
    });

  test('a sign-in by one mail voids the other links and codes mailed to the email', async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'link');
    assertAccepted(await askCode(t, u.email), 'code');
    const [token] = await linkTokens(smtp, u.email);
    const [code] = await codes(smtp, u.email);
    assert.equal((await verifyCode(t, u.email, code)).statusCode, 200);
    assertSigninFailed(await verifyLink(t, token), 'b', 401, 'the link, once the code signed in');
  });

  // --- Five wrong tries --------------------------------------------------------------------------

  test('four wrong codes leave the code good; the fifth voids it, and the right code then fails too', async () => {
    const t = free;
    const lucky = await register(t);
    const unlucky = await register(t);
    assertAccepted(await askCode(t, lucky.email), 'ask lucky');
    assertAccepted(await askCode(t, unlucky.email), 'ask unlucky');
    const [luckyCode] = await codes(smtp, lucky.email);
    const [unluckyCode] = await codes(smtp, unlucky.email);

    for (let i = 1; i <= 4; i++)
      assertSigninFailed(await verifyCode(t, lucky.email, otherCode(luckyCode!)), 'b', 401, `wrong ${i}`);
    assert.equal((await verifyCode(t, lucky.email, luckyCode)).statusCode, 200, 'after four wrong tries');

    for (let i = 1; i <= 5; i++)
      assertSigninFailed(await verifyCode(t, unlucky.email, otherCode(unluckyCode!)), 'b', 401, `wrong ${i}`);
    const right = await verifyCode(t, unlucky.email, unluckyCode);
    assertSigninFailed(right, 'b', 401, 'the right code after five wrong tries');

    // The code died, not the account: a new code signs in.
    assertAccepted(await askCode(t, unlucky.email), 'a new ask');
    const [, fresh] = await codes(smtp, unlucky.email, 2);
    assert.equal((await verifyCode(t, unlucky.email, fresh)).statusCode, 200, 'a new code');
  });

  // --- The sign-in throttle -------------------------------------------------------------------

  for (const profile of PROFILES) {
    test(`[${profile}] wrong codes count in the sign-in throttle: after ${LOCKOUT.perAccountAddress} from one address even the right code (and the password) is 429 with Retry-After there; elsewhere the code signs in`, async () => {
      const t = lockout[profile];
      const u = await register(t);
      assertAccepted(await askCode(t, u.email), 'ask');
      const [code] = await codes(smtp, u.email);
      const address = freshAddress();
      for (let i = 1; i <= LOCKOUT.perAccountAddress; i++)
        assertSigninFailed(
          await verifyCode(t, u.email, otherCode(code!), { address }),
          profile,
          401,
          `wrong code ${i}`,
        );
      const throttled = await verifyCode(t, u.email, code, { address });
      assertSigninFailed(throttled, profile, 429, 'the right code from that address');
      const retryAfter = Number(throttled.headers['retry-after']);
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900,
        `Retry-After ${retryAfter}`,
      );
      const password = await postFrom(
        t,
        '/api/signin',
        { email: u.email, password: u.password },
        { address },
      );
      assertSigninFailed(password, profile, 429, 'the password from that address: the same throttle');
      const elsewhere = await verifyCode(t, u.email, code);
      assert.equal(signedInUser(elsewhere, profile).email, u.email);
    });
  }

  test(`wrong codes from many addresses count for the account: after ${LOCKOUT.perAccount}, 429 from any new address`, async () => {
    const t = lockout.b;
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    for (let i = 1; i <= LOCKOUT.perAccount; i++)
      assertSigninFailed(await verifyCode(t, u.email, otherCode(code!)), 'b', 401, `wrong code ${i}`);
    const res = await verifyCode(t, u.email, otherCode(code!));
    assertSigninFailed(res, 'b', 429, 'one more, from a new address');
    assert.ok(Number(res.headers['retry-after']) >= 1);
  });

  test(`bad links count for the address: after ${LOCKOUT.perAddress}, 429 with Retry-After from it, even for a good link`, async () => {
    const t = lockout.a;
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'ask');
    const [token] = await linkTokens(smtp, u.email);
    const address = freshAddress();
    for (let i = 1; i <= LOCKOUT.perAddress; i++)
      assertSigninFailed(
        await verifyLink(t, `${'B'.repeat(40)}${String(i).padStart(3, '0')}`, { address }),
        'a',
        401,
        `bad link ${i}`,
      );
    const refused = await verifyLink(t, token, { address });
    assertSigninFailed(refused, 'a', 429, 'a good link from that address');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(signedInUser(await verifyLink(t, token), 'a').email, u.email, 'from another address');
  });

  // --- Limits on asks --------------------------------------------------------------------------

  test(`ISSUE 31: a link ask and a code ask for one email, worked out at the same moment by two instances, still mail it at most ${DEFAULTS.passwordReset.perAccount} times in 15 minutes`, async () => {
    const u = await register(free);
    for (let i = 1; i <= 2; i++) assertAccepted(await askLink(free, u.email), `ask ${i}`);
    await linkTokens(smtp, u.email, 2);
    await settle(db());
    // On PostgreSQL, mail_signins is held while the two asks are made, so the instance that takes
    // each one waits with it: the two are then worked out together, as two instances can. (On
    // SQLite one transaction writes at a time: the two are worked out one after the other.)
    const held = store.kind === 'postgres' ? await holdTable(db(), 'mail_signins') : undefined;
    try {
      assertAccepted(await askCode(lockout.a, u.email), 'a code ask, by one instance');
      assertAccepted(await askLink(lockout.b, u.email), 'a link ask, by another');
      // Both wait there, unless the asks are kept from running together before they read it
      // (then this never happens, and the asks are let go after a while).
      if (held) await held.untilWaitingAnywhere(2, 10_000);
    } finally {
      await held?.release();
    }
    await settle(db());
    const mails = signinMails(smtp, u.email);
    assert.equal(mails.length, DEFAULTS.passwordReset.perAccount, mails.map((m) => m.subject).join(', '));
    assert.equal((await mailSigninRows(db(), u.email)).length, DEFAULTS.passwordReset.perAccount);
  });

  for (const [kind, ask] of [
    ['link', (t: TestApp, email: string, from: { address?: string } = {}) => askLink(t, email, {}, from)],
    ['code', askCode],
  ] as const) {
    for (const profile of PROFILES) {
      test(`[${profile}] more than PASSWORD_RESET_MAX_PER_ADDRESS ${kind} asks from one address: 429 TOO_MANY_REQUESTS with Retry-After, and nothing mailed`, async () => {
        const t = fewAsks[profile];
        const u = await register(t);
        const address = freshAddress();
        for (let i = 1; i <= ASKS_PER_ADDRESS; i++)
          assertAccepted(await ask(t, unknownEmail(), { address }), `ask ${i}`);
        for (let i = ASKS_PER_ADDRESS + 1; i <= ASKS_PER_ADDRESS + 2; i++) {
          const res = await ask(t, u.email, { address });
          assertError(res, 429, 'TOO_MANY_REQUESTS', `ask ${i}`);
          const retryAfter = Number(res.headers['retry-after']);
          assert.ok(
            Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900,
            `Retry-After ${retryAfter}`,
          );
        }
        assertAccepted(await ask(t, unknownEmail()), 'from another address');
        await settle(db());
        assert.deepEqual(signinMails(smtp, u.email), [], 'a refused ask is never mailed');
        assert.deepEqual(await mailSigninRows(db(), u.email), []);
      });
    }
  }

  // --- An email change ---------------------------------------------------------------------------

  test('a link and a code mailed before an email change sign nobody in after it; the new address signs in', async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'link');
    assertAccepted(await askCode(t, u.email), 'code');
    const [token] = await linkTokens(smtp, u.email);
    const [code] = await codes(smtp, u.email);

    const next = unknownEmail('moved');
    const changed = await asUser(t, await signIn(t, u)).put(`/api/users/${u.id}`, {
      email: next,
      name: u.name,
      currentPassword: u.password,
    });
    assert.equal(changed.statusCode, 200, changed.body);

    assertSigninFailed(await verifyLink(t, token), 'b', 401, 'the link to the old address');
    assertSigninFailed(await verifyCode(t, u.email, code), 'b', 401, 'the code with the old address');
    assertSigninFailed(await verifyCode(t, next, code), 'b', 401, 'the code with the new address');

    // The account's new address has links of its own.
    assertAccepted(await askLink(t, next), 'a link to the new address');
    const [fresh] = await linkTokens(smtp, next);
    assert.equal(signedInUser(await verifyLink(t, fresh), 'b').id, Number(u.id));
  });

  test("a link to an address its account left, now another account's, signs neither in", async () => {
    const t = free;
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'link');
    const [token] = await linkTokens(smtp, u.email);
    const moved = await asUser(t, await signIn(t, u)).put(`/api/users/${u.id}`, {
      email: unknownEmail('moved'),
      name: u.name,
      currentPassword: u.password,
    });
    assert.equal(moved.statusCode, 200, moved.body);
    await register(t, newUser({ email: u.email }));
    assertSigninFailed(await verifyLink(t, token), 'b', 401, 'the link');
  });

  // --- A disabled account ---------------------------------------------------------------------

  for (const profile of PROFILES) {
    test(`[${profile}] a disabled account: a right link or code is 403 SIGNIN_FAILED (no session), a wrong code 401 as for anyone`, async () => {
      const t = lockout[profile];
      const admin = await staff(t, store, 'admin');
      const u = await register(t);
      assertAccepted(await askLink(t, u.email), 'link');
      const [token] = await linkTokens(smtp, u.email);
      const disabled = await as(t, admin.token).post(`/api/admin/users/${u.id}/disable`, {});
      assert.equal(disabled.statusCode, 200, disabled.body);

      const link = await verifyLink(t, token);
      assertSigninFailed(link, profile, 403, 'a right link');
      if (profile === 'b') assert.match(link.json().message, /disabled/i);

      assertAccepted(await askCode(t, u.email), 'code');
      const [code] = await codes(smtp, u.email);
      const wrong = await verifyCode(t, u.email, otherCode(code!));
      assertSigninFailed(wrong, profile, 401, 'a wrong code');
      assertSameAnswer(wrong, await verifyCode(t, unknownEmail(), code), 'a wrong code and an unknown email');
      const right = await verifyCode(t, u.email, code);
      assertSigninFailed(right, profile, 403, 'a right code');
      if (profile === 'b') assert.match(right.json().message, /disabled/i);
    });
  }

  // --- REQUIRE_VERIFIED_EMAIL ------------------------------------------------------------------

  for (const profile of PROFILES) {
    for (const method of ['link', 'code'] as const) {
      test(`[${profile}] REQUIRE_VERIFIED_EMAIL: an unverified account signs in by a ${method}, which verifies the email; its password then signs in too`, async () => {
        const t = verifiedOnly[profile];
        const u = await register(t);
        const before = await postFrom(t, '/api/signin', { email: u.email, password: u.password });
        assert.equal(before.statusCode, 403, `the password before: ${before.body}`);

        let res: Awaited<ReturnType<typeof verifyLink>>;
        if (method === 'link') {
          assertAccepted(await askLink(t, u.email), 'ask');
          const [token] = await linkTokens(smtp, u.email);
          res = await verifyLink(t, token);
        } else {
          assertAccepted(await askCode(t, u.email), 'ask');
          const [code] = await codes(smtp, u.email);
          res = await verifyCode(t, u.email, code);
        }
        const user = signedInUser(res, profile);
        assert.equal(user.email, u.email);
        if (profile === 'b') assert.equal(user.emailVerified, true);

        const after = await postFrom(t, '/api/signin', { email: u.email, password: u.password });
        assert.equal(after.statusCode, 200, `the password after: ${after.body}`);
      });
    }
  }

  // --- Known devices ---------------------------------------------------------------------------

  test("a code sign-in sets the known-device cookie: that browser's password gets past the throttle that holds strangers", async () => {
    const t = lockout.b;
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    const signedIn = await verifyCode(t, u.email, code);
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    const device = deviceCookie(signedIn);
    assert.ok(device, `a device cookie: ${signedIn.headers['set-cookie']}`);
    assert.match(device, /^[A-Za-z0-9_-]{43}$/);
    const cookie = ([] as string[])
      .concat(signedIn.headers['set-cookie'] ?? [])
      .find((c) => c.startsWith('usher_device='))!;
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; Path=\/api(;|$)/);

    for (let i = 1; i <= LOCKOUT.perAccount; i++)
      assert.equal(
        (await postFrom(t, '/api/signin', { email: u.email, password: 'not-the-password-1' })).statusCode,
        401,
        `guess ${i}`,
      );
    const stranger = await postFrom(t, '/api/signin', { email: u.email, password: u.password });
    assert.equal(stranger.statusCode, 429, 'a browser the account does not know is held');
    const known = await postFrom(
      t,
      '/api/signin',
      { email: u.email, password: u.password },
      { headers: { cookie: `usher_device=${device}` } },
    );
    assert.equal(known.statusCode, 200, `the browser of the code sign-in: ${known.body}`);
  });
});
