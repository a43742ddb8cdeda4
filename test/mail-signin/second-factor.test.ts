// Sign-in by mail for an account with TOTP in force (CONTRACT "Accounts and sign-in methods", the
// second factor for methods without a body to carry a code): a right link or code starts no
// session; it answers 401 SIGNIN_FAILED in the profile's shape with `Usher-Second-Factor: totp`
// and a ticket in `Usher-Second-Factor-Ticket`, and POST /api/signin/second-factor with that
// ticket and a current code gives the session and the profile's body. Codes are computed here from
// the secret the API hands out, at times the test sets on the apps' clock.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { NO_THROTTLE, register, sessionToken, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, metric } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';
import {
  askCode,
  askLink,
  assertAccepted,
  assertSameAnswer,
  assertSigninFailed,
  codes,
  linkTokens,
  otherCode,
  PROFILES,
  PUBLIC_URL,
  postFrom,
  signedInUser,
  verifyCode,
  verifyLink,
} from './support.ts';

const TICKET = /^[A-Za-z0-9_-]{43}$/;

describeEachStore('Sign-in by mail with TOTP in force', (store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  /** Added to the apps' clock: the next TOTP step without waiting for it. Only ever grows. */
  let offset = 0;
  const now = () => Date.now() + offset;
  const nextStep = () => {
    offset += STEP_MS;
  };

  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES)
      apps[profile] = await startApp(
        store,
        profile,
        {
          publicUrl: PUBLIC_URL,
          mail: mailTo(smtp.url),
          throttle: { ...NO_THROTTLE },
          encryptionKey: randomBytes(32),
        },
        { clock: now },
      );
  });
  after(async () => {
    for (const t of Object.values(apps)) await t?.close();
    await smtp?.close();
  });

  /** A registered user with TOTP confirmed; codes are computed from `secret`. */
  async function withTotp(t: TestApp) {
    const u = await register(t);
    const token = await signIn(t, u);
    const auth = { authorization: `Bearer ${token}` };
    const setup = await postFrom(t, '/api/mfa/totp', { password: u.password }, { headers: auth });
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret } = setup.json() as { secret: string };
    const confirmed = await postFrom(
      t,
      '/api/mfa/totp/confirm',
      { code: totpAt(secret, now()) },
      { headers: auth },
    );
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    return { ...u, secret };
  }

  /** The answer of a right link or code for an account with TOTP: the ticket it carries. */
  function ticketOf(res: LightMyRequestResponse, profile: Profile, what: string): string {
    assertSigninFailed(res, profile, 401, what);
    assert.equal(res.headers['usher-second-factor'], 'totp', what);
    const ticket = res.headers['usher-second-factor-ticket'];
    assert.equal(typeof ticket, 'string', `${what}: a ticket header`);
    assert.match(String(ticket), TICKET, what);
    if (profile === 'b') assert.match(res.json().message, /code/i, what);
    return String(ticket);
  }

  const secondFactor = (t: TestApp, body: object) => postFrom(t, '/api/signin/second-factor', body);

  for (const profile of PROFILES) {
    test(`[${profile}] a right link: 401 with Usher-Second-Factor and a ticket, no session; the ticket and a current code sign in with the profile's body`, async () => {
      const t = apps[profile];
      const u = await withTotp(t);
      assertAccepted(await askLink(t, u.email, { redirectTo: '/welcome' }), 'ask');
      const [token] = await linkTokens(smtp, u.email);
      const first = await verifyLink(t, token);
      const ticket = ticketOf(first, profile, 'the link');
      assert.equal(first.headers['usher-redirect-to'], `${PUBLIC_URL}/welcome`, 'where the page goes next');
      assert.ok(!t.logs.some((line) => line.includes(ticket)), 'the ticket is in no log line');

      // The link is spent: the ticket is the only way on.
      assertSigninFailed(await verifyLink(t, token), profile, 401, 'the link again');

      nextStep();
      const wrong = await secondFactor(t, { ticket, code: wrongCodeAt(u.secret, now()) });
      assertSigninFailed(wrong, profile, 401, 'a wrong TOTP code');
      assert.equal(wrong.headers['usher-second-factor'], 'totp');

      const done = await secondFactor(t, { ticket, code: totpAt(u.secret, now()) });
      assert.equal(signedInUser(done, profile).email, u.email);
      const session = sessionToken(done.headers['set-cookie']);
      assert.ok(session, 'the session cookie');
      const me = await t.inject({
        method: 'GET',
        url: '/api/account',
        headers: { authorization: `Bearer ${session}` },
      });
      assert.equal(me.statusCode, 200, me.body);
      assert.equal(me.json().totp, true);

      nextStep();
      assertSigninFailed(
        await secondFactor(t, { ticket, code: totpAt(u.secret, now()) }),
        profile,
        401,
        'the ticket again',
      );
    });

    test(`[${profile}] a right code: 401 with Usher-Second-Factor and a ticket, no session; the ticket and a current code sign in`, async () => {
      const t = apps[profile];
      const u = await withTotp(t);
      assertAccepted(await askCode(t, u.email), 'ask');
      const [code] = await codes(smtp, u.email);
      const first = await verifyCode(t, u.email, code);
      const ticket = ticketOf(first, profile, 'the code');
      assert.equal(first.headers['usher-redirect-to'], undefined, 'a code has no redirect');
      assertSigninFailed(await verifyCode(t, u.email, code), profile, 401, 'the code again');

      nextStep();
      const done = await secondFactor(t, { ticket, code: totpAt(u.secret, now()) });
      assert.equal(signedInUser(done, profile).email, u.email);
      assert.ok(sessionToken(done.headers['set-cookie']), 'the session cookie');
    });

    test(`[${profile}] a wrong link or code for an account with TOTP says nothing of TOTP: the same answer as for any account`, async () => {
      const t = apps[profile];
      const u = await withTotp(t);
      const plain = await register(t);
      assertAccepted(await askCode(t, u.email), 'ask');
      assertAccepted(await askCode(t, plain.email), 'ask plain');
      const [code] = await codes(smtp, u.email);
      const [plainCode] = await codes(smtp, plain.email);
      const wrong = await verifyCode(t, u.email, otherCode(code!));
      assertSigninFailed(wrong, profile, 401, 'a wrong code');
      assert.equal(wrong.headers['usher-second-factor'], undefined);
      assert.equal(wrong.headers['usher-second-factor-ticket'], undefined);
      assertSameAnswer(wrong, await verifyCode(t, plain.email, otherCode(plainCode!)), 'TOTP or not');
    });
  }

  test('the ticket finishes the sign-in as the mail method: the metric counts it under email_link, with the TOTP factor', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    const labels = 'method="email_link",outcome="success"';
    const before = await metric(t, 'usher_signins_total', labels);
    const factorBefore = await metric(t, 'usher_signin_second_factors_total', 'factor="totp"');
    assertAccepted(await askLink(t, u.email), 'ask');
    const [token] = await linkTokens(smtp, u.email);
    const ticket = ticketOf(await verifyLink(t, token), 'b', 'the link');
    assert.equal(await metric(t, 'usher_signins_total', labels), before, 'no success yet');
    nextStep();
    assert.equal((await secondFactor(t, { ticket, code: totpAt(u.secret, now()) })).statusCode, 200);
    assert.equal(await metric(t, 'usher_signins_total', labels), before + 1);
    assert.equal(await metric(t, 'usher_signin_second_factors_total', 'factor="totp"'), factorBefore + 1);
  });
});
