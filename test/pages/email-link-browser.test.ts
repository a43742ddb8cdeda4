// The sign-in link page (GET /signin/email-link, issue 31) in a real headless Chromium against a
// real listening Usher that mails through a real SMTP server: the link in the mail signs in and
// lands where it was asked to; a used link offers a new one; an account with TOTP finishes with a
// code on the account page. Skipped, visibly, without Chromium.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freshDatabaseUrl, postgresAvailable } from '../helpers/databases.ts';
import { mailTo, waitForMails } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { type ReceivedMail, startSmtp, type TestSmtp } from '../helpers/smtp.ts';

const LINK = /sign-in link/i;
const linkIn = (mail: ReceivedMail) =>
  /(http:\/\/\S+\/signin\/email-link#token=[A-Za-z0-9_-]+)/.exec(mail.text)![1]!;

for (const kind of ['sqlite', 'postgres'] as const) {
  const skipRun =
    skipWithoutChromium ||
    (kind === 'postgres' && !postgresAvailable ? 'TEST_DATABASE_URL is not set' : false);
  describeUnless(skipRun, `Sign-in link page in headless Chromium [${kind}]`, () => {
    let t: TestApp;
    let smtp: TestSmtp;
    let base: string;
    let browser: Browser;
    let drop: () => Promise<void> = async () => {};

    before(async () => {
      const fresh = await freshDatabaseUrl(kind);
      drop = fresh.drop;
      smtp = await startSmtp();
      const port = await freePort();
      base = `http://localhost:${port}`;
      t = await startApp({ kind, url: fresh.url }, 'b', {
        publicUrl: base,
        encryptionKey: randomBytes(32),
        mail: mailTo(smtp.url),
      });
      await t.app.listen({ port, host: '127.0.0.1' });
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await smtp?.close();
      await drop();
    });

    test('ISSUE 31: the link in the mail signs in and lands on redirectTo; used again, the page offers a new link', async () => {
      const u = await register(t);
      const asked = await t.post('/api/signin/email-link', {
        email: u.email,
        redirectTo: '/account?from=mail',
      });
      assert.equal(asked.statusCode, 202);
      const [mail] = await waitForMails(smtp, u.email, LINK);
      const url = linkIn(mail!);
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(url);
      await page.waitForURL(`${base}/account?from=mail`);
      await page.waitForSelector('#account', { state: 'visible' });
      assert.equal(await page.locator('#who-email').innerText(), u.email);
      // The link proved the address.
      assert.equal(await page.locator('#who-verified').innerText(), 'Verified');
      const cookies = await context.cookies(base);
      assert.ok(
        cookies.some((c) => c.httpOnly && c.value.length > 20),
        'a session cookie',
      );

      // The same link again, in a fresh browser: spent.
      const second = await (await browser.newContext()).newPage();
      await second.goto(url);
      await second.waitForSelector('#message.error');
      assert.match(await second.locator('#message').innerText(), /expired or was already used/);
      assert.equal(second.url(), `${base}/signin/email-link`, 'the token is cleared from the address bar');
      await second.fill('#email', u.email);
      await second.click('#ask-submit');
      await second.waitForSelector('#message.ok');
      assert.match(await second.locator('#message').innerText(), /on its way/);
      await waitForMails(smtp, u.email, LINK, 2);
      await context.close();
    });

    test('ISSUE 31: an account with TOTP is sent to the account page for its code, and is signed in', async () => {
      const u = await register(t);
      const me = asUser(t, await signIn(t, u));
      const setup = await me.post('/api/mfa/totp', { password: u.password });
      assert.equal(setup.statusCode, 200, setup.body);
      const totp = new TOTP({ secret: Secret.fromBase32(setup.json().secret), digits: 6, period: 30 });
      assert.equal((await me.post('/api/mfa/totp/confirm', { code: totp.generate() })).statusCode, 200);

      await t.post('/api/signin/email-link', { email: u.email });
      const [mail] = await waitForMails(smtp, u.email, LINK);
      const page = await (await browser.newContext()).newPage();
      await page.goto(linkIn(mail!));
      await page.waitForSelector('#second-factor', { state: 'visible' });
      assert.equal(new URL(page.url()).pathname, '/account');
      // A fresh code: the one confirming TOTP above may not be used again.
      const next = totp.generate({ timestamp: Date.now() + 30_000 });
      await page.fill('#second-factor-code', next);
      await page.click('#second-factor-submit');
      await page.waitForSelector('#account', { state: 'visible' });
      assert.equal(await page.locator('#who-email').innerText(), u.email);
    });
  });
}
