// Sign-up through sign-in by mail (CONTRACT "Sign-in by mail, languages, and users from other
// systems", "Accounts and sign-in methods"): with EMAIL_SIGNIN_CREATES_ACCOUNTS=true an email with
// no account is mailed a link or a code too, and using it creates the account (email verified, no
// password, named after the address); without it (the default) nothing is mailed and nothing made.
// An account registered between the ask and the use is not taken over.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { newUser, register, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
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
  holdTable,
  linkTokens,
  mailSigninRows,
  PROFILES,
  PUBLIC_URL,
  postFrom,
  settle,
  signedInUser,
  signinMails,
  storeReader,
  verifyCode,
  verifyLink,
} from './support.ts';

let people = 0;
/** An email no account has, whose part before the @ is `local`. */
function newcomer(): { email: string; local: string } {
  people += 1;
  const local = `new.person.${people}.${process.pid}`;
  return { email: `${local}@example.com`, local };
}

describeEachStore('Sign-up by mail (EMAIL_SIGNIN_CREATES_ACCOUNTS)', (store) => {
  let smtp: TestSmtp;
  /** EMAIL_SIGNIN_CREATES_ACCOUNTS=true, each profile. */
  const open = {} as Record<Profile, TestApp>;
  const db = storeReader(store);
  const base = () => ({ publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) });

  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES)
      open[profile] = await startApp(store, profile, { ...base(), emailSigninCreatesAccounts: true });
  });
  after(async () => {
    for (const t of Object.values(open)) await t?.close();
    await smtp?.close();
  });

  /** Signs in by a link or a code mailed to `email` (asked for on `t`): the verify answer. */
  async function byMail(t: TestApp, method: 'link' | 'code', email: string): Promise<LightMyRequestResponse> {
    if (method === 'link') {
      assertAccepted(await askLink(t, email), 'ask');
      const [token] = await linkTokens(smtp, email);
      return verifyLink(t, token);
    }
    assertAccepted(await askCode(t, email), 'ask');
    const [code] = await codes(smtp, email);
    return verifyCode(t, email, code);
  }

  for (const profile of PROFILES) {
    for (const method of ['link', 'code'] as const) {
      test(`[${profile}] a ${method} to an email with no account creates it: verified, no password (a password sign-in fails as a wrong one does), named after the address`, async () => {
        const t = open[profile];
        const { email, local } = newcomer();
        const res = await byMail(t, method, email);
        const user = signedInUser(res, profile);
        assert.equal(user.email, email);
        assert.equal(user.name, local);
        const session = sessionToken(res.headers['set-cookie']);
        assert.ok(session, 'a session cookie');

        const account = await t.inject({
          method: 'GET',
          url: '/api/account',
          headers: { authorization: `Bearer ${session}` },
        });
        assert.equal(account.statusCode, 200, account.body);
        const me = account.json();
        assert.equal(me.password, false, 'no password');
        assert.equal(me.user.email, email);
        assert.equal(me.user.name, local);
        if (profile === 'b') assert.equal(me.user.emailVerified, true, 'the mail reached it');

        // A password sign-in fails exactly as a wrong password for an account that has one.
        const someone = await register(t);
        const address = '10.32.0.1';
        const noPassword = await postFrom(
          t,
          '/api/signin',
          { email, password: 'any-password-1' },
          { address },
        );
        const wrongPassword = await postFrom(
          t,
          '/api/signin',
          { email: someone.email, password: 'any-password-1' },
          { address },
        );
        assertSigninFailed(noPassword, profile, 401, 'a password for an account with none');
        assertSameAnswer(noPassword, wrongPassword, 'no password and a wrong password');

        assertError(await t.post('/api/users', newUser({ email })), 409, 'EMAIL_TAKEN', 'registering it');
      });
    }
  }

  test('an address no account could have (no @) is not mailed even when sign-up by mail is on', async () => {
    const t = open.b;
    const bad = `no-at-sign-${people++}.example.com`;
    assertAccepted(await askLink(t, bad), 'a link ask');
    assertAccepted(await askCode(t, bad), 'a code ask');
    await settle(db());
    assert.deepEqual(await mailSigninRows(db(), bad), []);
    assert.deepEqual(signinMails(smtp, bad), []);
  });

  for (const method of ['link', 'code'] as const) {
    test(`an account registered between the ask and the use is not taken over: the ${method} fails and signs no one in`, async () => {
      const t = open.b;
      const { email } = newcomer();
      if (method === 'link') assertAccepted(await askLink(t, email), 'ask');
      else assertAccepted(await askCode(t, email), 'ask');
      const secret = method === 'link' ? (await linkTokens(smtp, email))[0]! : (await codes(smtp, email))[0]!;

      const owner = await register(t, newUser({ email }));
      const used = method === 'link' ? await verifyLink(t, secret) : await verifyCode(t, email, secret);
      assertSigninFailed(used, 'b', 401, `the ${method}`);

      const signin = await postFrom(t, '/api/signin', { email, password: owner.password });
      assert.equal(signin.statusCode, 200, `the owner's password still signs in: ${signin.body}`);
      assert.equal(signedInUser(signin, 'b').id, Number(owner.id));
    });
  }

  test('the setting turned off between the ask and the use: the link fails and creates nothing', async () => {
    const { email } = newcomer();
    assertAccepted(await askLink(open.b, email), 'ask, while on');
    const [token] = await linkTokens(smtp, email);
    // An instance with the default setting (started only now: its worker takes no ask of this suite).
    const closed = await startApp(store, 'b', base());
    try {
      assertSigninFailed(await verifyLink(closed, token), 'b', 401, 'used, while off');
      const registered = await closed.post('/api/users', newUser({ email }));
      assert.equal(registered.statusCode, 201, `the email is still free: ${registered.body}`);
    } finally {
      await closed.close();
    }
  });

  test('a link and a code for one new email used at the same moment: one account, one session, never a 500', async () => {
    const t = open.b;
    const { email } = newcomer();
    assertAccepted(await askLink(t, email), 'link');
    assertAccepted(await askCode(t, email), 'code');
    const [token] = await linkTokens(smtp, email);
    const [code] = await codes(smtp, email);
    // On PostgreSQL, users is held while both are used: the first to spend the email's links and
    // codes waits there, and the other waits for the first's rows (or, without that, would have
    // spent its own and wait on users too): both are waiting when it is let go.
    const held = store.kind === 'postgres' ? await holdTable(db(), 'users') : undefined;
    const both = Promise.all([verifyLink(t, token), verifyCode(t, email, code)]);
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
    const registered = await t.post('/api/users', newUser({ email }));
    assertError(registered, 409, 'EMAIL_TAKEN', 'the account exists');
  });
});

// Its own database: an instance's worker mails an ask by its own setting, whichever instance took it.
describeEachStore('Sign-up by mail off (the default)', (store) => {
  let smtp: TestSmtp;
  let closed: TestApp;
  const db = storeReader(store);
  before(async () => {
    smtp = await startSmtp();
    closed = await startApp(store, 'b', { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) });
  });
  after(async () => {
    await closed?.close();
    await smtp?.close();
  });

  test('EMAIL_SIGNIN_CREATES_ACCOUNTS=false (the default): an email with no account gets the same 202, no mail, and no account', async () => {
    const { email } = newcomer();
    const someone = await register(closed);
    const address = '10.32.0.2';
    const unknownLink = await askLink(closed, email, {}, { address });
    const knownLink = await askLink(closed, someone.email, {}, { address });
    assertAccepted(unknownLink, 'a link ask');
    assertSameAnswer(unknownLink, knownLink, 'an email with no account and one with');
    const unknownCode = await askCode(closed, email, { address });
    assertSameAnswer(unknownCode, await askCode(closed, someone.email, { address }), 'code asks');
    await settle(db());
    assert.deepEqual(signinMails(smtp, email), [], 'nothing mailed');
    assert.deepEqual(await mailSigninRows(db(), email), [], 'nothing recorded');
    assert.equal(signinMails(smtp, someone.email).length, 2, 'the account was mailed');

    assertSigninFailed(await verifyCode(closed, email, '123456'), 'b', 401, 'a code for it');
    const registered = await closed.post('/api/users', newUser({ email }));
    assert.equal(registered.statusCode, 201, `the email is still free: ${registered.body}`);
  });
});
