// Sign-in by mail against the clock (CONTRACT "Sign-in by mail, languages, and users from other
// systems"): a link lives 15 minutes and a code 10; an email gets at most 3 sign-in mails per 15
// minutes, and more once they are past. One instance on a database of its own, whose clock the
// test moves forward (never back): no other worker reads another time, so the asks' counts are
// exactly those of the test.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { compose, housekeeping } from '../../src/features.ts';
import { NO_THROTTLE, register, startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { mailTo } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  askCode,
  askLink,
  assertAccepted,
  assertSameAnswer,
  assertSigninFailed,
  CODE,
  CODE_TTL_MS,
  codeOf,
  codes,
  LINK_TTL_MS,
  linkTokens,
  MAIL_WINDOW_MS,
  mailSigninRows,
  PUBLIC_URL,
  settle,
  signedInUser,
  signinMails,
  storeReader,
  verifyCode,
  verifyLink,
} from './support.ts';

const PER_ACCOUNT = loadConfig({}).passwordReset.perAccount;

describeEachStore('Sign-in by mail: expiry and the mails per window', (store) => {
  let smtp: TestSmtp;
  let t: TestApp;
  const db = storeReader(store);
  /** Added to the app's clock; only ever grows. */
  let offset = 0;
  const now = () => Date.now() + offset;

  const overrides = () => ({ publicUrl: PUBLIC_URL, mail: mailTo(smtp.url), throttle: { ...NO_THROTTLE } });
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(store, 'b', overrides(), { clock: now });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  test('a link signs in a minute before its 15 minutes are up, and is 401 SIGNIN_FAILED a second after', async () => {
    const early = await register(t);
    const late = await register(t);
    assertAccepted(await askLink(t, early.email), 'early');
    assertAccepted(await askLink(t, late.email), 'late');
    const [earlyToken] = await linkTokens(smtp, early.email);
    const [lateToken] = await linkTokens(smtp, late.email);
    // The links were made by now: both are at most this old.
    const start = offset;

    offset = start + LINK_TTL_MS - 60_000;
    assert.equal(signedInUser(await verifyLink(t, earlyToken), 'b').email, early.email);

    offset = start + LINK_TTL_MS + 1000;
    assertSigninFailed(await verifyLink(t, lateToken), 'b', 401, 'a second after it expired');
  });

  test('a code signs in a minute before its 10 minutes are up, and is 401 SIGNIN_FAILED a second after', async () => {
    const early = await register(t);
    const late = await register(t);
    assertAccepted(await askCode(t, early.email), 'early');
    assertAccepted(await askCode(t, late.email), 'late');
    const [earlyCode] = await codes(smtp, early.email);
    const [lateCode] = await codes(smtp, late.email);
    const start = offset;

    offset = start + CODE_TTL_MS - 60_000;
    assert.equal(signedInUser(await verifyCode(t, early.email, earlyCode), 'b').email, early.email);

    offset = start + CODE_TTL_MS + 1000;
    assertSigninFailed(await verifyCode(t, late.email, lateCode), 'b', 401, 'a second after it expired');
  });

  test(`at most ${PER_ACCOUNT} sign-in mails per email in 15 minutes, links and codes together: further asks answer 202 and send nothing; past the window, mail again`, async () => {
    assert.equal(PER_ACCOUNT, 3);
    const u = await register(t);
    const start = offset;
    const answers = [
      await askLink(t, u.email),
      await askCode(t, u.email),
      await askLink(t, u.email),
      await askCode(t, u.email),
      await askLink(t, u.email),
    ];
    for (const [i, res] of answers.entries()) {
      assertAccepted(res, `ask ${i + 1}`);
      assertSameAnswer(res, answers[0]!, `ask ${i + 1} and the first`);
    }
    await settle(db(), now);
    const mails = signinMails(smtp, u.email);
    assert.equal(mails.length, 3, mails.map((m) => m.subject).join(', '));
    assert.equal((await mailSigninRows(db(), u.email)).length, 3, 'three links and codes recorded');

    // A minute before the window has passed: still nothing. Used links count as much as unused.
    const [token] = await linkTokens(smtp, u.email);
    assert.equal((await verifyLink(t, token)).statusCode, 200);
    offset = start + MAIL_WINDOW_MS - 60_000;
    assertAccepted(await askCode(t, u.email), 'an ask near the end of the window');
    await settle(db(), now);
    assert.equal(signinMails(smtp, u.email).length, 3, 'still three');

    // Once the first mail is older than the window, one more.
    offset = start + MAIL_WINDOW_MS + 5000;
    assertAccepted(await askCode(t, u.email), 'an ask past the window');
    await settle(db(), now);
    const mailed = signinMails(smtp, u.email);
    assert.equal(mailed.length, 4, 'a fourth mail');
    assert.match(mailed[3]!.subject, CODE);
    assert.equal(signedInUser(await verifyCode(t, u.email, codeOf(mailed[3]!)), 'b').email, u.email);
  });

  test('links and codes used or voided still count towards the mails per window once housekeeping has run (it runs once a minute)', async () => {
    const sweep = () => housekeeping(compose(testConfig(store, 'b', overrides()), db(), { now }));
    const u = await register(t);
    const start = offset;
    for (let i = 1; i <= 3; i++) assertAccepted(await askLink(t, u.email), `ask ${i}`);
    const tokens = await linkTokens(smtp, u.email, 3);
    // One used, the others voided by that use.
    assert.equal((await verifyLink(t, tokens[0])).statusCode, 200);
    await sweep();
    assertAccepted(await askCode(t, u.email), 'a fourth ask');
    await settle(db(), now);
    assert.equal(signinMails(smtp, u.email).length, 3, 'still three mails in the window');
    assert.equal((await mailSigninRows(db(), u.email)).length, 3, 'kept');

    // Past the window, housekeeping removes them.
    offset = start + MAIL_WINDOW_MS + 5000;
    await sweep();
    assert.deepEqual(await mailSigninRows(db(), u.email), [], 'removed once older than the window');
  });
});
