// At most five wrong codes are ever checked against one live code, also when they come at once
// (issue 40, "not confirmed": 12 wrong codes in parallel rounds of 4 on SQLite; decision 341).
// Each try takes one of the code's five tries in one statement before its code is compared, so
// the code's `failures` counts exactly the tries checked against it: the test reads it after
// parallel rounds (on PostgreSQL each round is held at the table until all four wait, so they
// truly meet), and the right code then fails as after five wrong tries one by one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { NO_THROTTLE, register, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  askCode,
  assertAccepted,
  assertSigninFailed,
  codes,
  holdTable,
  mailSigninRows,
  otherCode,
  PUBLIC_URL,
  storeReader,
  verifyCode,
} from './support.ts';

const ROUNDS = 3;
/** SIGNIN_MAX_CONCURRENT_PER_ACCOUNT's default: four tries at once for one account pass the throttle. */
const AT_ONCE = 4;

describeEachStore('Sign-in by mail: five tries per code under parallel tries', (store) => {
  let smtp: TestSmtp;
  let t: TestApp;
  const db = storeReader(store);
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(store, 'b', {
      publicUrl: PUBLIC_URL,
      mail: mailTo(smtp.url),
      // The throttle's failure counts out of the way; its default concurrency per account kept.
      throttle: { ...NO_THROTTLE, concurrentPerAccount: AT_ONCE },
    });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  /** Four wrong codes at once, each from an address of its own. */
  async function round(email: string, code: string, wrong: (i: number) => string = () => otherCode(code)) {
    const held = store.kind === 'postgres' ? await holdTable(db(), 'mail_signins') : undefined;
    const answers = Promise.all(Array.from({ length: AT_ONCE }, (_, i) => verifyCode(t, email, wrong(i))));
    if (held) {
      await held.untilWaiting(AT_ONCE, 10_000);
      await held.release();
    }
    for (const res of await answers) assertSigninFailed(res, 'b', 401, 'a wrong code');
  }

  test(`${ROUNDS * AT_ONCE} wrong codes in parallel rounds of ${AT_ONCE}: five checked against the live code, and the right code then fails`, async () => {
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    for (let r = 0; r < ROUNDS; r++)
      await round(u.email, code!, (i) =>
        String((Number(code) + 1 + r * AT_ONCE + i) % 1_000_000).padStart(6, '0'),
      );
    const [row] = await mailSigninRows(db(), u.email);
    assert.equal(Number(row!.failures), 5, 'exactly five tries were checked against the code');
    assertSigninFailed(await verifyCode(t, u.email, code), 'b', 401, 'the right code after them');
  });

  test('the right code among four at once after four wrong ones: it signs in only as the fifth try checked', async () => {
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    for (let i = 1; i <= 4; i++)
      assertSigninFailed(await verifyCode(t, u.email, otherCode(code!)), 'b', 401, `wrong ${i}`);
    const held = store.kind === 'postgres' ? await holdTable(db(), 'mail_signins') : undefined;
    const burst = Promise.all([
      verifyCode(t, u.email, otherCode(code!)),
      verifyCode(t, u.email, otherCode(otherCode(code!))),
      verifyCode(t, u.email, code),
      verifyCode(t, u.email, otherCode(otherCode(otherCode(code!)))),
    ]);
    if (held) {
      await held.untilWaiting(AT_ONCE, 10_000);
      await held.release();
    }
    const answers = await burst;
    const [row] = await mailSigninRows(db(), u.email);
    // One try of the four took the code's fifth; the other three found it spent and were checked
    // against nothing. Whichever it was, the code was checked five times, no more.
    assert.equal(Number(row!.failures), 5, 'five tries checked');
    const signedIn = answers.filter((res) => res.statusCode === 200);
    assert.ok(signedIn.length <= 1, 'at most one sign-in');
    if (signedIn.length === 1) assert.equal(answers[2]!.statusCode, 200, 'the right code was that fifth try');
  });
});
