// The account page's provider sign-in (CONTRACT "Sign in with a provider", "Accounts and sign-in
// methods") in a real headless Chromium, against a real listening Usher at http://localhost:<port>
// and the real test OpenID Connect provider (panva's oidc-provider) on 127.0.0.2, whose login and
// consent pages the browser goes through: the provider button on the sign-in form, the way back to
// /account (signed in, ?error=CODE, #second-factor=<ticket>), and the Linked accounts section
// (listing, linking, unlinking, and what a sign-in over 10 minutes old may not do). Each test has
// its own browser context, users and provider logins: they run in any order.
//
// Profile B only: the page and these routes are the same in both profiles (the user object aside,
// whose name and email the page shows either way); the profiles' API answers are tested in
// test/oauth/. Both stores. Skipped, visibly, without Chromium.
//
// Screenshots (docs/screenshots/account-signin-providers*.png, account-linked-accounts*.png, at
// phone width and on a desktop; the second-factor step into test-results/pages/) are taken only
// with UPDATE_SCREENSHOTS=1, like the other browser suites' committed ones, so an ordinary run
// stays fast and leaves the working tree as it was.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../src/config.ts';
import { asUser, NO_THROTTLE, newUser, startApp, type TestApp } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { totpAt, wrongCodeAt } from '../helpers/totp.ts';

const TITLE = 'Account page: sign in with a provider, in headless Chromium';
const PROVIDER_NAME = 'Test ID';
const CLIENT_ID = 'usher';
const CLIENT_SECRET = 's3cret';
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const DESKTOP = { viewport: { width: 1280, height: 860 } };
const SHOOT = process.env.UPDATE_SCREENSHOTS === '1';
const SCREENSHOTS = new URL('../../docs/screenshots/', import.meta.url);
/** Further screenshots, for a look only (not committed). */
const RESULTS = new URL('../../test-results/pages/', import.meta.url);
/** The titles of the test provider's own pages (test/helpers/oidc-provider.ts). */
const LOGIN_PAGE = 'Test provider: sign in';
const CONSENT_PAGE = 'Test provider: allow access';
const ERROR_PAGE = 'Test provider: error';

/** Polls `condition` from Node (up to 30 s: a bound on a failure, far from a loaded machine's noise). */
async function until(condition: () => Promise<boolean> | boolean, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The page as the DOM sees it, for the few reads a locator does not give (no DOM types here). */
interface Dom {
  ownerDocument: { documentElement: { scrollWidth: number } };
}

if (skipWithoutChromium) test(TITLE, { skip: skipWithoutChromium }, () => {});
else
  describeEachStore(TITLE, (store) => {
    let provider: TestOidcProvider;
    let t: TestApp;
    let base: string;
    let browser: Browser;
    // The server's clock is set this far off only around a sign-in that must look old (the test
    // "over 10 minutes after signing in"), and always put back.
    let offset = 0;
    let logins = 0;

    before(async () => {
      provider = await startOidcProvider();
      const port = await freePort();
      base = `http://localhost:${port}`;
      await provider.addClient({
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${base}/api/oauth/test/callback`],
      });
      const oauth = loadConfig({
        OAUTH_PROVIDERS: 'test',
        OAUTH_TEST_CLIENT_ID: CLIENT_ID,
        OAUTH_TEST_CLIENT_SECRET: CLIENT_SECRET,
        OAUTH_TEST_ISSUER: provider.issuer,
        OAUTH_TEST_NAME: PROVIDER_NAME,
      }).oauth;
      t = await startApp(
        store,
        'b',
        // PostgreSQL has no key file to fall back on: TOTP there needs ENCRYPTION_KEY.
        { oauth, publicUrl: base, encryptionKey: randomBytes(32), throttle: { ...NO_THROTTLE } },
        { clock: () => Date.now() + offset },
      );
      await t.app.listen({ host: '127.0.0.1', port });
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await provider?.close();
    });

    /** A provider account no other test uses: its login, and the email and name it gives. */
    function providerAccount(overrides: { email?: string; email_verified?: boolean; name?: string } = {}) {
      logins += 1;
      const login = `person${logins}`;
      const account = {
        email: newUser().email,
        email_verified: true,
        name: `Provider Person ${logins}`,
        ...overrides,
      };
      provider.setAccount(login, account);
      return { login, ...account };
    }

    interface Tab {
      context: BrowserContext;
      page: Page;
      /** Console errors and warnings, page errors and CSP violations on Usher's page. */
      problems: string[];
      /** Every request the page made to Usher's provider routes. */
      oauthRequests: string[];
    }

    async function open(options: typeof PHONE | typeof DESKTOP = PHONE): Promise<Tab> {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const problems: string[] = [];
      const oauthRequests: string[] = [];
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return;
        const from = message.location().url;
        // The provider's pages are not under test here.
        if (!from.startsWith(base)) return;
        // The browser's notes on the API's 401 and 409 answers: the page handles them.
        if (
          message.text().startsWith('Failed to load resource') &&
          new URL(from).pathname.startsWith('/api/')
        )
          return;
        problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) => {
        if (request.url().startsWith(`${base}/api/oauth/`)) oauthRequests.push(request.url());
      });
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (event) =>
        console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
      });
      return { context, page, problems, oauthRequests };
    }

    /**
     * Does `go` (a click that starts at a provider), then goes through the provider's pages as they
     * come (the login page, answered with `login`; the consent page, answered with Allow) until the
     * provider sends the browser back through Usher's callback and the page at /account has loaded.
     * The provider pages shown, in order, and the address the browser landed at (before the page
     * cleared it).
     */
    async function throughProvider(
      page: Page,
      login: string,
      go: () => Promise<void>,
    ): Promise<{ pages: string[]; landedAt: string }> {
      const callback = page.waitForRequest((r) => r.url().startsWith(`${base}/api/oauth/test/callback`), {
        timeout: 20_000,
      });
      const landed = page.waitForEvent('framenavigated', {
        predicate: (frame) => frame === page.mainFrame() && frame.url().startsWith(`${base}/account`),
        timeout: 20_000,
      });
      let back = false;
      void landed.then(
        () => {
          back = true;
        },
        () => {
          back = true;
        },
      );
      await go();
      const shown: string[] = [];
      while (!back) {
        const title = await page.title().catch(() => '');
        if (title === ERROR_PAGE) throw new Error(`the provider answered an error: ${await page.content()}`);
        // Each page once: until the click's navigation commits, the page is the one just answered.
        if (title === LOGIN_PAGE && !shown.includes('login')) {
          shown.push('login');
          await page.getByLabel('login').fill(login);
          await page.getByRole('button', { name: 'Sign in' }).click();
        } else if (title === CONSENT_PAGE && !shown.includes('consent')) {
          shown.push('consent');
          await page.getByRole('button', { name: 'Allow' }).click();
        } else {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      await callback;
      const landedAt = (await landed).url();
      await page.waitForLoadState('load');
      return { pages: shown, landedAt };
    }

    /** Signs in with a password on the page's form. */
    async function passwordSignIn(page: Page, user: { email: string; password: string }): Promise<void> {
      await page.locator('#signin').waitFor({ state: 'visible' });
      await page.fill('#email', user.email);
      await page.fill('#password', user.password);
      await page.click('#signin-submit');
      await page.locator('#account').waitFor({ state: 'visible' });
    }

    /** A new account made through the provider's pages, signed in on `tab`'s page. */
    async function signUpWithProvider(tab: Tab, person: { login: string; name: string }): Promise<void> {
      await tab.page.goto(`${base}/account`, { waitUntil: 'networkidle' });
      await throughProvider(tab.page, person.login, () =>
        tab.page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).click(),
      );
      await tab.page.locator('#account').waitFor({ state: 'visible' });
      assert.equal(await tab.page.locator('#who-name').innerText(), person.name);
    }

    /** GET `path` with `tab`'s session cookie, from Node. */
    async function apiGet(tab: Tab, path: string) {
      const session = (await tab.context.cookies(base)).find((c) => c.name === 'usher_session');
      assert.ok(session, 'the browser holds a session cookie');
      return t.inject({ method: 'GET', url: path, headers: { cookie: `usher_session=${session.value}` } });
    }

    const identityItems = (page: Page) => page.locator('#identities > li.item');
    const linkButton = (page: Page) => page.getByRole('link', { name: `Link ${PROVIDER_NAME}` });

    /** A viewport screenshot with `selector` at the top, into docs/screenshots/. */
    async function shoot(page: Page, selector: string, file: string): Promise<void> {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.mouse.move(0, 0);
      await page.locator(selector).evaluate((e) => e.scrollIntoView({ block: 'start' }));
      await page.screenshot({ path: fileURLToPath(new URL(file, SCREENSHOTS)) });
    }

    test('the sign-in form has a labelled, keyboard-usable "Continue with" link per provider, fit for a phone; through the provider\'s login and consent pages it lands on /account signed in, under Linked accounts; unlinking the only way to sign in says so (LAST_SIGNIN_METHOD)', async () => {
      const person = providerAccount();
      const tab = await open();
      const { page } = tab;
      try {
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        assert.ok(await page.locator('#signin').isVisible());
        const group = page.getByRole('list', { name: 'Other ways to sign in' });
        assert.ok(await group.isVisible(), 'the provider links, below the password form, as a labelled list');
        assert.match(await page.locator('#signin-providers .or').innerText(), /^or$/i);
        const link = group.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` });
        assert.equal(await link.count(), 1);
        assert.equal(await link.getAttribute('href'), '/api/oauth/test/start?redirectTo=%2Faccount');
        const box = await link.boundingBox();
        assert.ok(box && box.height >= 44, `a tap target of 44 px or more (${box?.height})`);
        assert.ok(box && box.x >= 0 && box.x + box.width <= 390, 'within the phone screen');
        const width = await page
          .locator('body')
          .evaluate((b) => (b as unknown as Dom).ownerDocument.documentElement.scrollWidth);
        assert.ok(width <= 390, `no sideways scrolling at 390 px (${width})`);
        assert.equal(tab.oauthRequests.filter((u) => u.includes('/start')).length, 0, 'nothing started yet');

        if (SHOOT) {
          await shoot(page, 'main', 'account-signin-providers.png');
          const desktop = await open(DESKTOP);
          try {
            await desktop.page.goto(`${base}/account`, { waitUntil: 'networkidle' });
            await desktop.page.screenshot({
              path: fileURLToPath(new URL('account-signin-providers-desktop.png', SCREENSHOTS)),
            });
          } finally {
            await desktop.context.close();
          }
        }

        // By keyboard: the link takes focus and Enter follows it.
        await link.focus();
        assert.deepEqual(await throughProvider(page, person.login, () => page.keyboard.press('Enter')), {
          pages: ['login', 'consent'],
          landedAt: `${base}/account`,
        });
        await page.locator('#account').waitFor({ state: 'visible' });
        assert.equal(page.url(), `${base}/account`, 'back at the page, nothing left in the address');
        assert.equal(await page.locator('#who-name').innerText(), person.name);
        assert.equal(await page.locator('#who-email').innerText(), person.email);
        assert.equal(await page.locator('#signin-providers').isVisible(), false);
        assert.equal(await page.locator('#message').isVisible(), false, 'no message for a plain sign-in');

        // Linked accounts: this identity, and the provider to link another.
        await page.locator('#identities-section').waitFor({ state: 'visible' });
        await until(async () => (await identityItems(page).count()) === 1, 'one identity listed');
        const item = identityItems(page).first();
        assert.match(
          await item.innerText(),
          new RegExp(`${PROVIDER_NAME}[\\s\\S]*${person.email}[\\s\\S]*Linked `),
        );
        assert.ok(await linkButton(page).isVisible());

        // The only way into this account (no password, no passkey): the page says what to do first.
        await item.getByRole('button', { name: 'Unlink' }).click();
        await page.locator('#identities-message.error').waitFor();
        assert.match(
          await page.locator('#identities-message').innerText(),
          /only way to sign in to your account.*Set a password or add a passkey first/,
        );
        assert.equal(await identityItems(page).count(), 1, 'still listed');
        assert.equal((await apiGet(tab, '/api/identities')).json().length, 1, 'still linked');
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('linking a second provider account from the signed-in view lists both and says so; unlinking one leaves the other', async () => {
      const first = providerAccount();
      const second = providerAccount({ name: 'Work Account' });
      const tab = await open();
      const { page } = tab;
      try {
        await signUpWithProvider(tab, first);
        await until(async () => (await identityItems(page).count()) === 1, 'one identity listed');
        // Another account at the provider: the browser forgets its provider session.
        await tab.context.clearCookies({ domain: '127.0.0.2' });
        assert.deepEqual(await throughProvider(page, second.login, () => linkButton(page).click()), {
          pages: ['login', 'consent'],
          landedAt: `${base}/account`,
        });
        assert.equal(page.url(), `${base}/account`);
        await page.locator('#identities-message.ok').waitFor();
        assert.match(await page.locator('#identities-message').innerText(), /Test ID is linked/);
        await until(async () => (await identityItems(page).count()) === 2, 'two identities listed');
        const texts = await identityItems(page).allInnerTexts();
        assert.ok(texts[0]?.includes(first.email) && texts[1]?.includes(second.email), texts.join(' | '));
        assert.equal(await page.locator('#who-email').innerText(), first.email, 'still the same account');
        assert.equal((await apiGet(tab, '/api/identities')).json().length, 2);

        if (SHOOT) {
          await shoot(page, '#identities-section', 'account-linked-accounts.png');
          const desktop = await open(DESKTOP);
          try {
            await desktop.context.addCookies(await tab.context.cookies(base));
            await desktop.page.goto(`${base}/account`, { waitUntil: 'networkidle' });
            await until(
              async () => (await identityItems(desktop.page).count()) === 2,
              'listed on the desktop',
            );
            await shoot(desktop.page, '#identities-section', 'account-linked-accounts-desktop.png');
          } finally {
            await desktop.context.close();
          }
        }

        await identityItems(page)
          .filter({ hasText: first.email })
          .getByRole('button', { name: 'Unlink' })
          .click();
        await until(async () => (await identityItems(page).count()) === 1, 'one identity left');
        assert.match(
          await page.locator('#identities-message').innerText(),
          new RegExp(`Test ID \\(${first.email.replace(/[.]/g, '\\.')}\\) is unlinked`),
        );
        assert.match(await identityItems(page).innerText(), new RegExp(second.email.replace(/[.]/g, '\\.')));
        const left = (await apiGet(tab, '/api/identities')).json() as { email: string }[];
        assert.deepEqual(
          left.map((i) => i.email),
          [second.email],
        );
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('ACCOUNT_EXISTS: back on the sign-in form with the message naming the provider and the address cleared; signing in with the password and linking from the page links it', async () => {
      const user = newUser();
      assert.equal((await t.post('/api/users', user)).statusCode, 201);
      // The same email at the provider: verified there, not here, so nothing is linked.
      const person = providerAccount({ email: user.email });
      const tab = await open();
      const { page } = tab;
      try {
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        const { landedAt } = await throughProvider(page, person.login, () =>
          page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).click(),
        );
        assert.equal(landedAt, `${base}/account?error=ACCOUNT_EXISTS`);
        await page.locator('#message.error').waitFor();
        assert.equal(
          await page.locator('#message').innerText(),
          'An account already uses this email. Sign in with your password, then link Test ID below.',
        );
        assert.equal(await page.locator('#message').getAttribute('role'), 'alert');
        assert.equal(page.url(), `${base}/account`, 'the ?error is gone from the address bar');
        assert.ok(await page.locator('#signin').isVisible());
        assert.ok(await page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).isVisible());

        await passwordSignIn(page, user);
        assert.equal(await identityItems(page).count(), 0);
        assert.equal(await page.locator('#identities > li.empty').innerText(), 'No linked accounts yet.');
        // The provider still knows this browser: it may ask nothing this time.
        await throughProvider(page, person.login, () => linkButton(page).click());
        await page.locator('#identities-message.ok').waitFor();
        assert.match(await page.locator('#identities-message').innerText(), /Test ID is linked/);
        await until(async () => (await identityItems(page).count()) === 1, 'the identity listed');
        assert.match(await identityItems(page).innerText(), new RegExp(user.email.replace(/[.]/g, '\\.')));
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('an account with TOTP: the provider sign-in lands with #second-factor, which leaves the address bar; the page asks for the code, says a wrong one is wrong, and the right one signs in', async () => {
      const user = newUser({ name: 'Two Step' });
      assert.equal((await t.post('/api/users', user)).statusCode, 201);
      const person = providerAccount();
      const first = await open();
      try {
        await first.page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        await passwordSignIn(first.page, user);
        await throughProvider(first.page, person.login, () => linkButton(first.page).click());
        await until(async () => (await identityItems(first.page).count()) === 1, 'linked');
      } finally {
        await first.context.close();
      }

      // TOTP on, over the API with a Bearer token. Confirmed with the previous step's code (within
      // the drift allowed), so that the current one is still unspent for the page.
      const token = (await t.post('/api/sessions', { email: user.email, password: user.password })).json()
        .token as string;
      const setup = await asUser(t, token).post('/api/mfa/totp', { password: user.password });
      assert.equal(setup.statusCode, 200, setup.body);
      const secret = setup.json().secret as string;
      const confirmed = await asUser(t, token).post('/api/mfa/totp/confirm', {
        code: totpAt(secret, Date.now() - 30_000),
      });
      assert.equal(confirmed.statusCode, 200, confirmed.body);

      // Another browser: the provider asks for its login again.
      const tab = await open();
      const { page } = tab;
      try {
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        const { landedAt } = await throughProvider(page, person.login, () =>
          page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).click(),
        );
        assert.match(landedAt, new RegExp(`^${base}/account#second-factor=[^&]+$`));
        await page.locator('#second-factor').waitFor({ state: 'visible' });
        assert.equal(page.url(), `${base}/account`, 'the ticket is gone from the address bar');
        assert.equal(await page.locator('#signin').isVisible(), false);
        assert.equal(await page.locator('#signin-providers').isVisible(), false);
        assert.equal(await page.locator('#account').isVisible(), false);
        const field = page.locator('#second-factor').getByLabel('Code from your authenticator app');
        assert.equal(await field.count(), 1, 'a labelled field');
        assert.equal(await field.getAttribute('autocomplete'), 'one-time-code');
        assert.ok(await field.evaluate((e) => e === e.ownerDocument.activeElement), 'the field has focus');
        if (SHOOT) {
          mkdirSync(RESULTS, { recursive: true });
          await page.screenshot({ path: fileURLToPath(new URL('account-second-factor.png', RESULTS)) });
        }

        await field.fill(wrongCodeAt(secret, Date.now()));
        await page.click('#second-factor-submit');
        await page.locator('#message.error').waitFor();
        assert.match(await page.locator('#message').innerText(), /code is not right/);
        assert.ok(await page.locator('#second-factor').isVisible(), 'the ticket lives on: asked again');

        await field.fill(totpAt(secret, Date.now()));
        await page.click('#second-factor-submit');
        await page.locator('#account').waitFor({ state: 'visible' });
        assert.equal(await page.locator('#who-name').innerText(), 'Two Step');
        assert.equal(await page.locator('#who-email').innerText(), user.email);
        assert.equal(await page.locator('#second-factor').isVisible(), false);
        assert.equal(await page.locator('#message').isVisible(), false);
        assert.equal((await apiGet(tab, '/api/session')).statusCode, 200, 'the session cookie is set');
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('with no provider configured: no provider links on the sign-in form, and no Linked accounts section', async () => {
      const port = await freePort();
      const plainBase = `http://localhost:${port}`;
      const plain = await startApp(store, 'b', { publicUrl: plainBase, throttle: { ...NO_THROTTLE } });
      const user = newUser();
      const tab = await open();
      const { page } = tab;
      try {
        await plain.app.listen({ host: '127.0.0.1', port });
        assert.equal((await plain.post('/api/users', user)).statusCode, 201);
        await page.goto(`${plainBase}/account`, { waitUntil: 'networkidle' });
        assert.ok(await page.locator('#signin').isVisible());
        assert.equal(await page.locator('#signin-providers').isVisible(), false);
        assert.equal(await page.getByRole('link', { name: /Continue with/ }).count(), 0);
        await passwordSignIn(page, user);
        await page.locator('#passkeys > li').first().waitFor();
        await page.waitForLoadState('networkidle');
        assert.equal(await page.locator('#identities-section').isVisible(), false);
      } finally {
        await tab.context.close();
        await plain.close();
      }
    });

    test('over 10 minutes after signing in, "Link" and "Unlink" say to sign out and sign in again (and "Link" goes nowhere); after that both work', async () => {
      const user = newUser();
      assert.equal((await t.post('/api/users', user)).statusCode, 201);
      const person = providerAccount();
      const tab = await open();
      const { page } = tab;
      try {
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        await passwordSignIn(page, user);
        await throughProvider(page, person.login, () => linkButton(page).click());
        await until(async () => (await identityItems(page).count()) === 1, 'linked');

        // A session signed in 11 minutes ago: the server's clock is set back for that sign-in only.
        await tab.context.clearCookies({ domain: 'localhost' });
        await page.goto(`${base}/account`, { waitUntil: 'networkidle' });
        offset = -11 * 60_000;
        try {
          await passwordSignIn(page, user);
        } finally {
          offset = 0;
        }
        await until(async () => (await identityItems(page).count()) === 1, 'listed');

        tab.oauthRequests.length = 0;
        await linkButton(page).click();
        await page.locator('#identities-message.info').waitFor();
        assert.match(
          await page.locator('#identities-message').innerText(),
          /You signed in more than 10 minutes ago\. To link Test ID, sign out and sign in again\./,
        );
        assert.equal(page.url(), `${base}/account`, 'still on the page');
        assert.deepEqual(tab.oauthRequests, [], 'the link was not followed');

        await identityItems(page).getByRole('button', { name: 'Unlink' }).click();
        await until(
          async () =>
            /To unlink Test ID, sign out/.test(await page.locator('#identities-message').innerText()),
          'the unlink refused',
        );
        assert.equal(await identityItems(page).count(), 1);
        assert.equal((await apiGet(tab, '/api/identities')).json().length, 1, 'still linked');

        // The message's own button signs out; a new sign-in may unlink.
        await page.locator('#identities-message').getByRole('button', { name: 'Sign out' }).click();
        await page.locator('#signin').waitFor({ state: 'visible' });
        assert.match(await page.locator('#message').innerText(), /You are signed out/);
        await passwordSignIn(page, user);
        await until(async () => (await identityItems(page).count()) === 1, 'listed');
        await identityItems(page).getByRole('button', { name: 'Unlink' }).click();
        await page.locator('#identities > li.empty').waitFor();
        assert.match(await page.locator('#identities-message').innerText(), /is unlinked/);
        assert.equal((await apiGet(tab, '/api/identities')).json().length, 0);
        assert.ok(await linkButton(page).isVisible(), 'a provider is configured: the section stays');
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });
  });
