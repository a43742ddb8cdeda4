// The account page made complete (issue 32), in a real headless Chromium against a real listening
// Usher that mails through a real SMTP server: a visitor creates an account and asks for a reset
// link from the sign-in form; the reset page's "done" leads on to signing in; a passkey signs in;
// the page says whether TOTP is on and offers only the button that changes it; the confirmation
// mail is sent again; the email and the password change with the present password; the account
// is deleted with the password and a ticked box; an account without a password is offered a link
// to set one. Both stores, profile B (whose user object says whether the email is verified).
// Skipped, visibly, without Chromium.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Config } from '../../src/config.ts';
import { NO_THROTTLE, newUser, register, startApp, type TestApp } from '../helpers/app.ts';
import { addVirtualAuthenticator, launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { mailsTo, mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';
import { OIDC_ENCRYPTION_KEY } from '../helpers/usher-oidc.ts';

const TITLE = 'The complete account page in headless Chromium (issue 32)';
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

const visible = (page: Page, selector: string) =>
  page.locator(selector).first().waitFor({ state: 'visible' });
/** Waits until the element's text matches `pattern` (a message replaced by the next one). */
async function says(page: Page, selector: string, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = (await page.locator(selector).isVisible()) ? await page.locator(selector).innerText() : '';
    if (pattern.test(text)) return;
    if (Date.now() > deadline) assert.fail(`${selector} says "${text}", not ${pattern}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const hidden = async (page: Page, selector: string) => !(await page.locator(selector).isVisible());

if (skipWithoutChromium) test(TITLE, { skip: skipWithoutChromium }, () => {});
else
  describeEachStore(TITLE, (store) => {
    let t: TestApp;
    let base: string;
    let browser: Browser;
    let smtp: TestSmtp;
    const contexts: BrowserContext[] = [];

    before(async () => {
      smtp = await startSmtp();
      const port = await freePort();
      base = `http://localhost:${port}`;
      const overrides: Partial<Config> = {
        publicUrl: base,
        encryptionKey: OIDC_ENCRYPTION_KEY,
        throttle: { ...NO_THROTTLE },
        mail: mailTo(smtp.url),
        emailSigninCreatesAccounts: true,
      };
      t = await startApp(store, 'b', overrides);
      await t.app.listen({ port, host: '127.0.0.1' });
      browser = await launchChromium();
    });
    after(async () => {
      for (const context of contexts) await context.close();
      await browser?.close();
      await t?.close();
      await smtp?.close();
    });

    async function tab(): Promise<{ context: BrowserContext; page: Page }> {
      const context = await browser.newContext(PHONE);
      contexts.push(context);
      return { context, page: await context.newPage() };
    }

    /** The account page of `user`, signed in through its own form. */
    async function signedIn(user: { email: string; password: string }, page?: Page): Promise<Page> {
      const p = page ?? (await tab()).page;
      await p.goto(`${base}/account`);
      await visible(p, '#signin');
      await p.fill('#email', user.email);
      await p.fill('#password', user.password);
      await p.click('#signin-submit');
      await visible(p, '#account');
      await p.waitForLoadState('networkidle');
      return p;
    }

    const signsIn = async (email: string, password: string) =>
      (await t.post('/api/signin', { email, password })).statusCode;

    test('ISSUE 32: a visitor creates an account from the sign-in form, is signed in, and has the confirmation mail sent again', async () => {
      const { page } = await tab();
      await page.goto(`${base}/account`);
      await visible(page, '#signin');
      await page.click('#show-signup');
      await visible(page, '#signup');
      assert.ok(await hidden(page, '#signin'), 'one form at a time');
      assert.equal(await page.title(), 'Create an account');
      const user = newUser({ name: 'Grace Hopper' });
      await page.fill('#signup-name', user.name);
      await page.fill('#signup-email', user.email);
      await page.fill('#signup-password', 'short');
      await page.click('#signup-submit');
      await visible(page, '#message.error');
      assert.match(await page.locator('#message').innerText(), /password/i);
      await page.fill('#signup-password', user.password);
      await page.click('#signup-submit');
      await says(page, '#message.ok', /account is created/);
      assert.ok(await page.locator('#account').isVisible());
      assert.equal(await page.locator('#who-email').innerText(), user.email);
      assert.equal(await page.locator('#who-verified').innerText(), 'Not verified');
      await waitForMails(smtp, user.email, SUBJECTS.verify);

      // The same email again: refused, and said so.
      const again = (await tab()).page;
      await again.goto(`${base}/account#signup`);
      await visible(again, '#signup');
      await again.fill('#signup-name', 'Someone');
      await again.fill('#signup-email', user.email.toUpperCase());
      await again.fill('#signup-password', 'another pass-word');
      await again.click('#signup-submit');
      await says(again, '#message.error', /already uses this email/);

      await visible(page, '#verify-resend');
      await page.click('#verify-resend');
      await says(page, '#who-message.ok', /new confirmation link to/);
      assert.ok((await page.locator('#who-message').innerText()).includes(user.email));
      await waitForMails(smtp, user.email, SUBJECTS.verify, 2);
    });

    test('ISSUE 32: "Forgot your password?" mails a reset link; the reset page’s "done" leads on to signing in with the new password', async () => {
      const user = await register(t);
      const { page } = await tab();
      await page.goto(`${base}/account`);
      await visible(page, '#signin');
      await page.fill('#email', user.email);
      await page.click('#show-forgot');
      await visible(page, '#forgot');
      assert.equal(await page.inputValue('#forgot-email'), user.email, 'the email typed is carried over');
      await page.click('#forgot-submit');
      await visible(page, '#message.ok');
      assert.match(await page.locator('#message').innerText(), /link to choose a new password is on its way/);
      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
      const link = /(http:\/\/\S+\/reset-password#token=[A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;

      await page.goto(link);
      await visible(page, '#reset');
      await page.fill('#password', 'my new pass-word');
      await page.fill('#confirm', 'my new pass-word');
      await page.click('#submit');
      await visible(page, '#onward');
      assert.equal(await page.locator('#onward-link').getAttribute('href'), '/account');
      await page.click('#onward-link');
      await page.waitForURL(`${base}/account`);
      await visible(page, '#signin');
      await page.fill('#email', user.email);
      await page.fill('#password', 'my new pass-word');
      await page.click('#signin-submit');
      await visible(page, '#account');
      assert.equal(await page.locator('#who-email').innerText(), user.email);
    });

    test('ISSUE 32: the page says whether TOTP is on and offers only the button that changes it, after a reload too', async () => {
      const user = await register(t);
      const page = await signedIn(user);
      assert.equal(await page.locator('#totp-state-badge').innerText(), 'Off');
      assert.ok(await page.locator('#totp-on').isVisible());
      assert.ok(await hidden(page, '#totp-off'), 'no "Turn off" while it is off');

      await page.fill('#totp-pass', user.password);
      await page.click('#totp-on');
      await visible(page, '#totp-setup');
      const secret = (await page.locator('#totp-secret').innerText()).trim();
      await page.fill('#totp-code', totpAt(secret, Date.now()));
      await page.click('#totp-confirm-submit');
      await visible(page, '#totp-codes');
      assert.equal(await page.locator('#totp-state-badge').innerText(), 'On');
      await page.click('#totp-codes-done');
      assert.ok(await page.locator('#totp-off').isVisible());
      assert.ok(await hidden(page, '#totp-on'), 'no "Turn on" while it is on');

      await page.reload();
      await visible(page, '#account');
      await page.waitForLoadState('networkidle');
      assert.equal(await page.locator('#totp-state-badge').innerText(), 'On');
      assert.ok(await hidden(page, '#totp-on'));

      await page.fill('#totp-pass', user.password);
      await page.click('#totp-off');
      await says(page, '#totp-message.ok', /is off/);
      assert.equal(await page.locator('#totp-state-badge').innerText(), 'Off');
      assert.ok(await page.locator('#totp-on').isVisible());
      assert.ok(await hidden(page, '#totp-off'));
    });

    test('ISSUE 32: a passkey added on the page signs in from the sign-in form, without email or password', async () => {
      const user = await register(t);
      const { context, page } = await tab();
      await addVirtualAuthenticator(context, page);
      await signedIn(user, page);
      await page.fill('#passkey-name', 'This phone');
      await page.click('#passkey-add-submit');
      await page.waitForSelector('#passkeys > li:has-text("This phone")');
      // Signed out of this session (the current one, from the list).
      await page.locator('#sessions > li').filter({ hasText: 'This device' }).getByRole('button').click();
      await visible(page, '#signin');
      assert.equal((await context.cookies(base)).filter((c) => c.name === 'usher_session').length, 0);

      await visible(page, '#signin-passkey');
      await page.click('#signin-passkey');
      await visible(page, '#account');
      assert.equal(await page.locator('#who-email').innerText(), user.email);
      assert.ok((await context.cookies(base)).some((c) => c.name === 'usher_session'));
    });

    test('ISSUE 32: the email and the password change with the present password, and a wrong one is said so', async () => {
      const user = await register(t);
      const page = await signedIn(user);
      const newEmail = newUser().email;

      await page.fill('#new-email', newEmail);
      await page.fill('#change-email-pass', 'not the password');
      await page.click('#change-email-submit');
      await visible(page, '#credentials-message.error');
      assert.match(await page.locator('#credentials-message').innerText(), /password is not right/);
      await page.fill('#change-email-pass', user.password);
      await page.click('#change-email-submit');
      await says(page, '#credentials-message.ok', /email is now/);
      assert.equal(await page.locator('#who-email').innerText(), newEmail);
      assert.equal(await page.locator('#who-verified').innerText(), 'Not verified');
      await waitForMails(smtp, newEmail, SUBJECTS.verify);

      await page.fill('#change-password-current', user.password);
      await page.fill('#change-password-new', 'brand new pass-word');
      await page.fill('#change-password-again', 'something else');
      await page.click('#change-password-submit');
      await says(page, '#credentials-message.error', /not the same/);
      assert.equal(await signsIn(newEmail, user.password), 200, 'nothing changed yet');
      await page.fill('#change-password-again', 'brand new pass-word');
      await page.click('#change-password-submit');
      await says(page, '#credentials-message.ok', /password is changed/);
      assert.equal(await signsIn(newEmail, 'brand new pass-word'), 200);
      assert.equal(await signsIn(newEmail, user.password), 401);
      // This session goes on.
      await page.reload();
      await visible(page, '#account');
    });

    test('ISSUE 32: the account is deleted only with the password and a ticked box; then the page is signed out', async () => {
      const user = await register(t);
      const page = await signedIn(user);
      assert.ok(await hidden(page, '#delete'), 'nothing to fill in before asking');
      await page.click('#delete-start');
      await visible(page, '#delete');

      await page.fill('#delete-pass', user.password);
      await page.click('#delete-submit');
      await visible(page, '#delete-message.error');
      assert.match(await page.locator('#delete-message').innerText(), /Tick the box/);
      assert.equal((await t.get(`/api/users/${user.id}`)).statusCode, 200, 'not deleted without the tick');

      await page.check('#delete-sure');
      await page.fill('#delete-pass', 'not the password');
      await page.click('#delete-submit');
      await says(page, '#delete-message.error', /password is not right/);
      assert.equal(
        (await t.get(`/api/users/${user.id}`)).statusCode,
        200,
        'not deleted with a wrong password',
      );

      await page.fill('#delete-pass', user.password);
      await page.click('#delete-submit');
      await says(page, '#message.ok', /account is deleted/);
      assert.ok(await page.locator('#signin').isVisible());
      assert.equal((await t.get(`/api/users/${user.id}`)).statusCode, 404);
      assert.equal(await signsIn(user.email, user.password), 401);
    });

    test('ISSUE 32: an account without a password is offered a link to set one, not forms it cannot confirm', async () => {
      const email = newUser().email;
      assert.equal((await t.post('/api/signin/email-code', { email })).statusCode, 202);
      const [mail] = await waitForMails(smtp, email, /code/i);
      const code = /\b(\d{6})\b/.exec(mail!.text)![1]!;
      const { page } = await tab();
      // Signed in by the mailed code in this browser (the same call the page of an app would make).
      const response = await page.request.post(`${base}/api/signin/email-code/verify`, {
        data: { email, code },
        headers: { origin: base },
      });
      assert.equal(response.status(), 200, await response.text());
      await page.goto(`${base}/account`);
      await visible(page, '#account');
      await page.waitForLoadState('networkidle');
      await visible(page, '#no-password');
      assert.ok(await hidden(page, '#change-email'));
      assert.ok(await hidden(page, '#change-password'));
      const before = mailsTo(smtp, email, SUBJECTS.reset).length;
      await page.click('#set-password-mail');
      await visible(page, '#credentials-message.ok');
      await waitForMails(smtp, email, SUBJECTS.reset, before + 1);
    });
  });
