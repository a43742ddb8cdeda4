// The account page (GET /account, issue 14) in a real headless Chromium against a real listening
// Usher at http://localhost:<port> (passkeys refuse IP addresses), with a CDP virtual authenticator
// for the passkey. SQLite only: the page is the same on either store. Skipped, visibly, without
// Chromium. Screenshots on a phone-sized viewport go to docs/screenshots/.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { newUser, startApp, type TestApp } from '../helpers/app.ts';
import { addVirtualAuthenticator, launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freshDatabaseUrl, postgresAvailable } from '../helpers/databases.ts';
import { freePort } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';

const skip = skipWithoutChromium;
// The committed screenshots in docs/screenshots/ are rewritten only when asked
// (UPDATE_SCREENSHOTS=1 npm test), so a test run leaves the working tree as it was.
const SCREENSHOTS = new URL(
  process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/screenshots/' : '../../test-results/',
  import.meta.url,
);
const RESULTS = new URL('../../test-results/pages/', import.meta.url);
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

/** Polls `condition` from Node (up to 30 s: a bound on a failure, far from a loaded machine's noise). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const kind of ['sqlite', 'postgres'] as const) {
  const skipRun =
    skip || (kind === 'postgres' && !postgresAvailable ? 'TEST_DATABASE_URL is not set' : false);
  describeUnless(skipRun, `Account page in headless Chromium [${kind}]`, () => {
    let t: TestApp;
    let base: string;
    let browser: Browser;
    let drop: () => Promise<void> = async () => {};
    // The server's clock runs this far ahead, to age the page's session (only ever moved forward).
    let offset = 0;

    before(async () => {
      const fresh = await freshDatabaseUrl(kind);
      drop = fresh.drop;
      const port = await freePort();
      base = `http://localhost:${port}`;
      // PostgreSQL has no key file to fall back on: TOTP there needs ENCRYPTION_KEY.
      t = await startApp(
        { kind, url: fresh.url },
        'b',
        { publicUrl: base, encryptionKey: randomBytes(32) },
        { clock: () => Date.now() + offset },
      );
      await t.app.listen({ port, host: '127.0.0.1' });
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await drop();
    });

    test('ISSUE 14: sign in on the page, see the account and sessions, turn TOTP on (QR code and URI), add and remove a passkey, sign out another session', async () => {
      const user = newUser({ name: 'Ada Lovelace' });
      assert.equal((await t.post('/api/users', user)).statusCode, 201);
      // A second session, from another client, to sign out from the page.
      const other = await t.inject({
        method: 'POST',
        url: '/api/sessions',
        headers: { 'content-type': 'application/json', 'user-agent': 'UsherTestClient/1.0' },
        payload: JSON.stringify({ email: user.email, password: user.password }),
      });
      assert.equal(other.statusCode, 201, other.body);
      const otherToken = other.json().token as string;
      const asOther = () =>
        t.inject({ method: 'GET', url: '/api/session', headers: { authorization: `Bearer ${otherToken}` } });
      assert.equal((await asOther()).statusCode, 200);

      const context = await browser.newContext(PHONE);
      const page = await context.newPage();
      const problems: string[] = [];
      const origins = new Set<string>();
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return;
        const from = message.location().url;
        // The browser's note that GET /api/session answered 401 (not signed in yet): the page handles it.
        if (
          message.text().startsWith('Failed to load resource') &&
          new URL(from).pathname.startsWith('/api/')
        )
          return;
        problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) =>
        origins.add(new URL(request.url()).protocol === 'blob:' ? base : new URL(request.url()).origin),
      );
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (event) =>
        console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
      });
      await addVirtualAuthenticator(context, page);

      try {
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        assert.ok(await page.locator('#signin').isVisible(), 'not signed in: the sign-in form');
        assert.equal(await page.locator('#account').isVisible(), false);
        await page.fill('#email', user.email);
        await page.fill('#password', 'not the password');
        await page.click('#signin-submit');
        await page.waitForSelector('#message.error');
        assert.match(await page.locator('#message').innerText(), /not right/);
        await page.fill('#password', user.password);
        await page.click('#signin-submit');
        await page.waitForSelector('#account', { state: 'visible' });
        assert.equal(await page.locator('#who-name').innerText(), 'Ada Lovelace');
        assert.equal(await page.locator('#who-email').innerText(), user.email);
        assert.equal(await page.locator('#who-verified').innerText(), 'Not verified');

        mkdirSync(RESULTS, { recursive: true });
        await page.screenshot({ path: fileURLToPath(new URL('account-top.png', RESULTS)), fullPage: true });

        // Sessions: this one, marked, and the other client's.
        const sessions = page.locator('#sessions > li');
        await until(async () => (await sessions.count()) === 2);
        const mine = sessions.filter({ hasText: 'This device' });
        assert.equal(await mine.count(), 1);
        assert.match(await mine.innerText(), /Chrome on (Android|Linux)/);
        assert.match(await sessions.filter({ hasText: 'UsherTestClient/1.0' }).innerText(), /Last seen/);

        // TOTP on: the key, the otpauth URI as text and the QR code drawn from a blob: URL.
        await page.fill('#totp-pass', user.password);
        await page.click('#totp-on');
        await page.waitForSelector('#totp-setup', { state: 'visible' });
        // Drawn: the blob: image has loaded (page.waitForFunction would need eval, which the CSP forbids).
        const qr = page.locator('#totp-qr');
        await until(
          async () =>
            (await qr.isVisible()) &&
            (await qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)) > 0,
        );
        assert.match((await page.locator('#totp-qr').getAttribute('src')) ?? '', /^blob:/);
        const secret = (await page.locator('#totp-secret').innerText()).trim();
        const uri = (await page.locator('#totp-uri').innerText()).trim();
        assert.match(secret, /^[A-Z2-7]+=*$/);
        assert.match(uri, /^otpauth:\/\/totp\//);
        assert.ok(uri.includes(`secret=${secret}`), 'the URI carries the key shown');
        mkdirSync(SCREENSHOTS, { recursive: true });
        assert.equal(await page.locator('#totp-password').isVisible(), false, 'one step at a time');
        await page.mouse.move(0, 0);
        await page.locator('#totp-title').evaluate((e) => e.scrollIntoView({ block: 'start' }));
        await page.screenshot({ path: fileURLToPath(new URL('account-totp.png', SCREENSHOTS)) });

        // At the server's time: another test may have moved its clock ahead.
        const code = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 }).generate({
          timestamp: Date.now() + offset,
        });
        await page.fill('#totp-code', code);
        await page.click('#totp-confirm-submit');
        await page.waitForSelector('#totp-codes', { state: 'visible' });
        const codes = await page.locator('#recovery-codes > li').allInnerTexts();
        assert.equal(codes.length, 10);
        assert.equal(new Set(codes).size, 10);
        assert.equal(
          await page.locator('#totp-setup').isVisible(),
          false,
          'the key is hidden once confirmed',
        );
        assert.match(await page.locator('#totp-message').innerText(), /Two-step sign-in is on/);
        await page.locator('#totp-codes').scrollIntoViewIfNeeded();
        await page.screenshot({ path: fileURLToPath(new URL('account-codes.png', RESULTS)) });
        await page.click('#totp-codes-done');
        assert.ok(await page.locator('#totp-password').isVisible());
        assert.equal(
          await page.locator('#recovery-codes > li').count(),
          0,
          'the codes are gone from the page',
        );

        // A passkey: added with the virtual authenticator, listed, then removed.
        await page.fill('#passkey-name', 'Test phone');
        await page.click('#passkey-add-submit');
        await page.waitForSelector('#passkeys > li:has-text("Test phone")');
        assert.match(await page.locator('#passkeys-message').innerText(), /"Test phone" is added/);
        assert.equal(
          (
            await t.inject({
              method: 'GET',
              url: '/api/passkeys',
              headers: { authorization: `Bearer ${otherToken}` },
            })
          ).json().length,
          1,
        );
        await page.mouse.move(0, 0);
        // To the end of the page, where the passkeys are, with the heading above them whole.
        await page.locator('body').evaluate((body) => {
          const w = body.ownerDocument.defaultView as unknown as {
            scrollTo(x: number, y: number): void;
            innerHeight: number;
          };
          w.scrollTo(0, body.scrollHeight - w.innerHeight - 40);
        });
        await page.screenshot({ path: fileURLToPath(new URL('account-passkeys.png', SCREENSHOTS)) });
        await page
          .locator('#passkeys > li', { hasText: 'Test phone' })
          .getByRole('button', { name: 'Remove' })
          .click();
        await page.waitForSelector('#passkeys > li:has-text("No passkeys yet.")');
        assert.deepEqual(
          (
            await t.inject({
              method: 'GET',
              url: '/api/passkeys',
              headers: { authorization: `Bearer ${otherToken}` },
            })
          ).json(),
          [],
        );

        // Signing the other session out ends it; this one stays.
        await sessions
          .filter({ hasText: 'UsherTestClient/1.0' })
          .getByRole('button', { name: 'Sign out' })
          .click();
        await until(async () => (await sessions.count()) === 1);
        assert.equal(await sessions.filter({ hasText: 'This device' }).count(), 1);
        assert.equal((await asOther()).statusCode, 401);

        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
        assert.deepEqual([...origins], [base], 'every request goes to Usher itself');
      } finally {
        await context.close();
      }
    });

    test('ISSUE 25: removing a passkey over 10 minutes after signing in asks for the password on the page; a wrong one is said so, the right one removes it', async () => {
      const user = newUser({ name: 'Grace Hopper' });
      assert.equal((await t.post('/api/users', user)).statusCode, 201);
      const context = await browser.newContext(PHONE);
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return;
        const from = message.location().url;
        // The browser's notes on the API's 401, 403 and 400 answers: the page handles them.
        if (
          message.text().startsWith('Failed to load resource') &&
          new URL(from).pathname.startsWith('/api/')
        )
          return;
        problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await addVirtualAuthenticator(context, page);
      try {
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        await page.fill('#email', user.email);
        await page.fill('#password', user.password);
        await page.click('#signin-submit');
        await page.waitForSelector('#account', { state: 'visible' });
        await page.fill('#passkey-name', 'Old key');
        await page.click('#passkey-add-submit');
        await page.waitForSelector('#passkeys > li:has-text("Old key")');
        assert.equal(await page.locator('#passkey-confirm').isVisible(), false);

        offset += 11 * 60_000;
        const remove = page
          .locator('#passkeys > li', { hasText: 'Old key' })
          .getByRole('button', { name: 'Remove' });
        await remove.click();
        await page.waitForSelector('#passkey-confirm', { state: 'visible' });
        assert.match(
          await page.locator('#passkey-confirm-text').innerText(),
          /more than 10 minutes ago.*"Old key"/,
        );
        await page.fill('#passkey-confirm-pass', 'not the password');
        await page.click('#passkey-confirm-submit');
        await page.waitForSelector('#passkeys-message.error');
        assert.match(await page.locator('#passkeys-message').innerText(), /password is not right/);
        assert.equal(await page.locator('#passkeys > li', { hasText: 'Old key' }).count(), 1, 'still there');
        assert.ok(await page.locator('#passkey-confirm').isVisible(), 'asked again');

        await page.fill('#passkey-confirm-pass', user.password);
        await page.click('#passkey-confirm-submit');
        await page.waitForSelector('#passkeys > li:has-text("No passkeys yet.")');
        assert.match(await page.locator('#passkeys-message').innerText(), /"Old key" is removed/);
        assert.equal(await page.locator('#passkey-confirm').isVisible(), false);
        assert.equal(
          await page.locator('#passkey-confirm-pass').inputValue(),
          '',
          'the password is not kept',
        );
        const token = (await t.post('/api/sessions', { email: user.email, password: user.password })).json()
          .token as string;
        const list = await t.inject({
          method: 'GET',
          url: '/api/passkeys',
          headers: { authorization: `Bearer ${token}` },
        });
        assert.deepEqual(list.json(), []);
        assert.deepEqual(problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await context.close();
      }
    });
  });
}
