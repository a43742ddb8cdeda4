// @usher/client's sign-in by mail against a real listening Usher mailing through a real SMTP
// server: asking for a link and a code, signing in with either (token mode keeps the session
// token, whoAmI answers), and an account with two-step sign-in getting its ticket, finished with
// finishSignIn, in both profiles.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createUsherClient } from '../../clients/typescript/src/index.ts';
import type { Profile } from '../../src/config.ts';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, waitForMails } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt } from '../helpers/totp.ts';

const PROFILES = ['a', 'b'] as const;

describeEachStore('@usher/client: sign-in by mail', (store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, { t: TestApp; base: string }>;
  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      // TOTP on PostgreSQL needs ENCRYPTION_KEY.
      const t = await startApp(store, profile, {
        publicUrl: base,
        mail: mailTo(smtp.url),
        encryptionKey: randomBytes(32),
      });
      await t.app.listen({ port, host: '127.0.0.1' });
      apps[profile] = { t, base };
    }
  });
  after(async () => {
    for (const profile of PROFILES) await apps[profile]?.t.close();
    await smtp?.close();
  });

  for (const profile of PROFILES) {
    test(`[${profile}] a code: askSignInMail, then signInWithMail keeps the session token`, async () => {
      const { t, base } = apps[profile];
      const u = await register(t);
      const client = createUsherClient({ profile, baseUrl: base, session: 'token' });
      const asked = await client.askSignInMail(u.email, { via: 'code' });
      assert.equal(asked.ok, true);
      assert.equal(asked.status, 202);
      const [mail] = await waitForMails(smtp, u.email, /sign-in code/i);
      const code = /\b(\d{6})\b/.exec(mail!.subject)![1]!;
      const wrong = await client.signInWithMail({
        email: u.email,
        code: code === '000000' ? '111111' : '000000',
      });
      assert.equal(wrong.ok, false);
      if (!wrong.ok) assert.equal(wrong.status, 401);
      const done = await client.signInWithMail({ email: u.email, code });
      assert.equal(done.ok, true, JSON.stringify(!done.ok && done.error));
      if (done.ok) assert.equal(done.data.email, u.email);
      assert.ok(client.token, 'the session token is kept');
      const me = await client.whoAmI();
      assert.equal(me.ok, true);
    });

    test(`[${profile}] a link with TOTP in force: the failure carries the ticket; finishSignIn signs in`, async () => {
      const { t, base } = apps[profile];
      const u = await register(t);
      const me = asUser(t, await signIn(t, u));
      const setup = await me.post('/api/mfa/totp', { password: u.password });
      const secret = setup.json().secret as string;
      assert.equal(
        (await me.post('/api/mfa/totp/confirm', { code: totpAt(secret, Date.now()) })).statusCode,
        200,
      );

      const client = createUsherClient({ profile, baseUrl: base, session: 'token' });
      assert.equal((await client.askSignInMail(u.email, { redirectTo: '/account' })).status, 202);
      const [mail] = await waitForMails(smtp, u.email, /sign-in link/i);
      const first = await client.signInWithMail({ token: linkToken(mail!, '/signin/email-link') });
      assert.equal(first.ok, false);
      if (first.ok) return;
      assert.equal(first.status, 401);
      assert.equal(first.secondFactor, 'totp');
      assert.match(first.ticket ?? '', /^[A-Za-z0-9_-]{43}$/);
      const done = await client.finishSignIn(first.ticket!, totpAt(secret, Date.now() + STEP_MS));
      assert.equal(done.ok, true);
      assert.equal((await client.whoAmI()).ok, true);
    });
  }
});
