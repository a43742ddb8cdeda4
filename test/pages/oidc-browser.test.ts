// Usher's sign-in and consent pages for the OpenID Connect provider (/oidc/interaction/{uid},
// issue 28) in a real headless Chromium: an app (openid-client, the relying party) builds the
// authorization URL, the browser opens it and goes through Usher's pages, and the code comes back
// on the app's redirect URI, which the browser tries to load (the test answers that request in its
// place and reads the code from it). Usher listens at http://localhost:<port> (passkeys refuse IP
// addresses); the app's redirect URI is REDIRECT_URI (http://127.0.0.1:9/callback, nothing listens
// there); the upstream provider of the "Continue with" button is the test provider on 127.0.0.2.
//
// Profile B for the suite (the pages are the same in both profiles), with one password-and-TOTP
// sign-in in profile A, whose sign-in failures carry a code only. Both stores. Skipped, visibly,
// without Chromium.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Config, Profile } from '../../src/config.ts';
import { loadConfig } from '../../src/config.ts';
import { escapeHtml } from '../../src/oidc/pages.ts';
import { asUser, NO_THROTTLE, newUser, register, startApp, testConfig } from '../helpers/app.ts';
import { addVirtualAuthenticator, launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { totpAt, wrongCodeAt } from '../helpers/totp.ts';
import {
  API,
  type Authorization,
  addClient,
  authorizationRequest,
  exchange,
  OIDC_ENCRYPTION_KEY,
  type OidcTestApp,
  OTHER_API,
  REDIRECT_URI,
  relyingParty,
} from '../helpers/usher-oidc.ts';

const TITLE = 'OpenID Connect sign-in and consent pages, in headless Chromium';
const PHONE = { viewport: { width: 360, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const DESKTOP = { viewport: { width: 1280, height: 860 } };
const APP_ORIGIN = new URL(REDIRECT_URI).origin;
const PROVIDER_NAME = 'Test ID';
const UPSTREAM_CLIENT_ID = 'usher';
const UPSTREAM_CLIENT_SECRET = 's3cret';
/** The titles of the upstream test provider's own pages (test/helpers/oidc-provider.ts). */
const LOGIN_PAGE = 'Test provider: sign in';
const CONSENT_PAGE = 'Test provider: allow access';
/** Screenshots for a look only (not committed), with UPDATE_SCREENSHOTS=1. */
const SHOOT = process.env.UPDATE_SCREENSHOTS === '1';
const RESULTS = new URL('../../test-results/pages/', import.meta.url);

/** Polls `condition` from Node (up to 30 s: a bound on a failure, far from a loaded machine's noise). */
async function until(condition: () => Promise<boolean> | boolean, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The few DOM reads a locator does not give (no DOM types in the tests' tsconfig). */
interface Dom {
  id: string;
  ownerDocument: {
    activeElement: { id: string } | null;
    documentElement: { scrollWidth: number; clientWidth: number };
  };
}
const activeId = (page: Page) =>
  page.locator('body').evaluate((b) => (b as unknown as Dom).ownerDocument.activeElement?.id ?? '');

/**
 * Usher on http://localhost:<port> with what startOidcApp gives (OIDC_RESOURCES, the test
 * ENCRYPTION_KEY, no throttle), and `extra` on top.
 */
async function startLocalhostApp(
  store: Store,
  profile: Profile,
  extra: Partial<Config> = {},
): Promise<OidcTestApp> {
  const port = await freePort();
  const base = `http://localhost:${port}`;
  const overrides: Partial<Config> = {
    publicUrl: base,
    oidc: { resources: [API, OTHER_API], accessTokenTtlSeconds: 300 },
    encryptionKey: OIDC_ENCRYPTION_KEY,
    throttle: { ...NO_THROTTLE },
    ...extra,
  };
  const t = await startApp(store, profile, overrides);
  await t.app.listen({ port, host: '127.0.0.1' });
  return { ...t, base, issuer: `${base}/oidc`, config: testConfig(store, profile, overrides) };
}

if (skipWithoutChromium) test(TITLE, { skip: skipWithoutChromium }, () => {});
else
  describeEachStore(TITLE, (store) => {
    let t: OidcTestApp;
    let upstream: TestOidcProvider;
    let browser: Browser;
    let logins = 0;
    // The server's clock is set this far off only around a sign-in that must look older than it is,
    // and always put back.
    let offset = 0;

    before(async () => {
      upstream = await startOidcProvider();
      const port = await freePort();
      const base = `http://localhost:${port}`;
      await upstream.addClient({
        client_id: UPSTREAM_CLIENT_ID,
        client_secret: UPSTREAM_CLIENT_SECRET,
        redirect_uris: [`${base}/api/oauth/test/callback`],
      });
      const oauth = loadConfig({
        OAUTH_PROVIDERS: 'test',
        OAUTH_TEST_CLIENT_ID: UPSTREAM_CLIENT_ID,
        OAUTH_TEST_CLIENT_SECRET: UPSTREAM_CLIENT_SECRET,
        OAUTH_TEST_ISSUER: upstream.issuer,
        OAUTH_TEST_NAME: PROVIDER_NAME,
      }).oauth;
      const overrides: Partial<Config> = {
        publicUrl: base,
        oidc: { resources: [API, OTHER_API], accessTokenTtlSeconds: 300 },
        encryptionKey: OIDC_ENCRYPTION_KEY,
        throttle: { ...NO_THROTTLE },
        oauth,
      };
      const app = await startApp(store, 'b', overrides, { clock: () => Date.now() + offset });
      await app.app.listen({ port, host: '127.0.0.1' });
      t = { ...app, base, issuer: `${base}/oidc`, config: testConfig(store, 'b', overrides) };
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await upstream?.close();
    });

    interface Tab {
      context: BrowserContext;
      page: Page;
      /** Console errors and warnings, page errors and CSP violations on Usher's pages. */
      problems: string[];
      /** Every request the tab made, in order. */
      requests: string[];
      /** Every document Usher answered (main frame): its URL and status. */
      documents: Array<{ url: string; status: number }>;
      /** What the browser brought to the app's redirect URI, in order. */
      landings: URL[];
      /** Where the app's "Sign in with Usher" link goes. */
      next: string;
    }

    async function open(options: typeof PHONE | typeof DESKTOP = DESKTOP, base = t.base): Promise<Tab> {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const tab: Tab = { context, page, problems: [], requests: [], documents: [], landings: [], next: '' };
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return;
        const from = message.location().url;
        if (!from.startsWith(base)) return;
        // The browser's notes on the API's 4xx answers (a wrong password, a code needed): the page handles them.
        if (message.text().startsWith('Failed to load resource')) {
          const path = new URL(from).pathname;
          if (path.startsWith('/api/') || /^\/oidc\/interaction\/[^/]+\/(details|consent|cancel)$/.test(path))
            return;
        }
        tab.problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
      });
      page.on('pageerror', (error) => tab.problems.push(`page error: ${error.message}`));
      page.on('request', (request) => tab.requests.push(request.url()));
      page.on('response', (response) => {
        const request = response.request();
        if (
          request.isNavigationRequest() &&
          request.frame() === page.mainFrame() &&
          response.url().startsWith(base)
        )
          tab.documents.push({ url: response.url(), status: response.status() });
      });
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (event) =>
        console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
      });
      // The app: nothing listens at its origin; the test answers in its place. Its home page has the
      // link that starts a sign-in (tab.next); its redirect URI records what the browser brought.
      await context.route(`${APP_ORIGIN}/**`, async (route) => {
        const url = new URL(route.request().url());
        if (url.href.startsWith(REDIRECT_URI)) tab.landings.push(url);
        const body =
          url.pathname === '/'
            ? `<!doctype html><title>The app</title><a id="start" href="${escapeHtml(tab.next)}">Sign in with Usher</a>`
            : '<!doctype html><title>The app</title><p>Back at the app.</p>';
        await route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body });
      });
      return tab;
    }

    /** The next address the browser brought to the app (its redirect URI with the code or the error). */
    async function landing(tab: Tab, count = 1): Promise<URL> {
      await until(() => tab.landings.length >= count, 'the browser back at the app');
      // And the app's page is shown: Chromium first shows an error page for a redirect to port 9,
      // then the route's answer commits; a navigation started before that would be cut short.
      await until(() => tab.page.url().startsWith(REDIRECT_URI), "the app's page shown");
      await tab.page.waitForLoadState('load');
      return tab.landings[count - 1]!;
    }

    /** A registered client, openid-client's configuration of it, and an authorization request. */
    async function app(
      input: Parameters<typeof addClient>[1] = {},
      params: Record<string, string> = {},
      on: OidcTestApp = t,
    ): Promise<{ config: client.Configuration; authorization: Authorization; name: string }> {
      const name = input.name ?? 'Test app';
      const registered = await addClient(on, { ...input, name });
      const config = await relyingParty(on, registered);
      return { config, authorization: await authorizationRequest(config, params), name };
    }

    /**
     * The app sends the browser to Usher: its page's link to the authorization URL, followed. (Not
     * page.goto: Chromium does not let a route see a redirect of a navigation it started itself,
     * and refuses REDIRECT_URI's port 9 there.)
     */
    async function begin(tab: Tab, authorization: Authorization): Promise<void> {
      tab.next = authorization.url.href;
      await tab.page.goto(`${APP_ORIGIN}/`);
      await tab.page.click('#start');
    }

    /** The app sends the browser to Usher: the interaction page, its form or consent shown. */
    async function openSignIn(tab: Tab, authorization: Authorization): Promise<string> {
      await begin(tab, authorization);
      await until(
        async () =>
          (await tab.page.locator('#signin').isVisible()) || (await tab.page.locator('#consent').isVisible()),
        'the interaction page ready',
      );
      const uid = /\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(tab.page.url())?.[1];
      assert.ok(uid, `on the interaction page (${tab.page.url()})`);
      return uid;
    }

    async function passwordSignIn(page: Page, user: { email: string; password: string }): Promise<void> {
      await page.fill('#email', user.email);
      await page.fill('#password', user.password);
      await page.click('#signin-submit');
    }

    /** TOTP on for `user`, over the API; confirmed with the previous step's code, the current one left unspent. */
    async function turnOnTotp(
      user: { email: string; password: string },
      on: OidcTestApp = t,
    ): Promise<string> {
      const token = (await on.post('/api/sessions', { email: user.email, password: user.password })).json()
        .token as string;
      const setup = await asUser(on, token).post('/api/mfa/totp', { password: user.password });
      assert.equal(setup.statusCode, 200, setup.body);
      const secret = setup.json().secret as string;
      const confirmed = await asUser(on, token).post('/api/mfa/totp/confirm', {
        code: totpAt(secret, Date.now() - 30_000),
      });
      assert.equal(confirmed.statusCode, 200, confirmed.body);
      return secret;
    }

    /** The consent page, answered with Allow (a third-party app's first sign-in). */
    async function allow(tab: Tab): Promise<void> {
      await tab.page.locator('#consent').waitFor({ state: 'visible' });
      await tab.page.getByRole('button', { name: 'Allow' }).click();
    }

    async function shoot(page: Page, file: string): Promise<void> {
      if (!SHOOT) return;
      mkdirSync(RESULTS, { recursive: true });
      await page.mouse.move(0, 0);
      await page.screenshot({ path: fileURLToPath(new URL(file, RESULTS)), fullPage: true });
    }

    test("email and password, then the third-party consent page (the app's name, the scopes in words): Allow gives the app a code openid-client exchanges; the consent is remembered (no page the next time)", async () => {
      const user = newUser({ name: 'Ada Lovelace' });
      const { id } = await register(t, user);
      const { config, authorization, name } = await app({ name: 'Photo <b>Printer</b> & Co' });
      const tab = await open();
      const { page } = tab;
      try {
        await openSignIn(tab, authorization);
        assert.equal(await page.title(), 'Sign in');
        assert.equal(await page.locator('#heading').innerText(), 'Sign in');
        assert.equal(await page.locator('#client-line').innerText(), `to continue to ${name}`);
        assert.equal(await page.locator('#client-name b').count(), 0, 'the name is text, not markup');
        assert.equal(await page.locator('#consent').isVisible(), false);
        await shoot(page, 'oidc-signin.png');

        // A wrong password is said so, and nothing leaves for the app.
        await passwordSignIn(page, { email: user.email, password: 'not the password' });
        await page.locator('#message.error').waitFor();
        assert.match(await page.locator('#message').innerText(), /email or the password is not right/);
        assert.equal(await page.locator('#message').getAttribute('role'), 'alert');
        assert.equal(tab.landings.length, 0);

        await passwordSignIn(page, user);
        await page.locator('#consent').waitFor({ state: 'visible' });
        assert.equal(await page.locator('#signin').isVisible(), false, 'the form is gone');
        assert.equal(await page.title(), `Allow ${name}?`);
        assert.equal(await page.locator('#heading').innerText(), `Allow ${name}?`);
        assert.equal(await page.locator('#consent-client').innerText(), name);
        assert.deepEqual(await page.locator('#consent-scopes > li').allInnerTexts(), [
          'Know who you are (your account id)',
          'See your email address',
          'See your name',
        ]);
        assert.equal(await page.locator('#consent-who-line').innerText(), `Signed in as ${user.email}.`);
        assert.equal(await activeId(page), 'allow', 'Allow has the focus');
        assert.ok(await page.getByRole('button', { name: 'Deny' }).isVisible());
        // The name once in the heading and once in the question; Deny is the way back, not Cancel too.
        assert.equal(await page.locator('#client-line').isVisible(), false);
        assert.equal(
          await page.getByRole('button', { name: 'Cancel and go back to the app' }).isVisible(),
          false,
        );
        await shoot(page, 'oidc-consent.png');

        // While the answer is on its way, neither button can send another.
        let release: () => void = () => {};
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        await tab.context.route(`${t.base}/oidc/interaction/*/consent`, async (route) => {
          await held;
          await route.continue();
        });
        await page.getByRole('button', { name: 'Allow' }).click();
        await until(
          async () => await page.getByRole('button', { name: 'Deny' }).isDisabled(),
          'Deny disabled',
        );
        assert.ok(await page.getByRole('button', { name: 'Allow' }).isDisabled());
        assert.equal(await page.locator('#allow').getAttribute('aria-busy'), 'true');
        release();
        const back = await landing(tab);
        assert.equal(back.origin + back.pathname, REDIRECT_URI);
        assert.ok(back.searchParams.get('code'), `a code (${back})`);
        assert.equal(back.searchParams.get('state'), authorization.state);
        const tokens = await exchange(config, authorization, back);
        const claims = tokens.claims()!;
        assert.equal(claims.sub, id.toString());
        assert.deepEqual(claims.amr, ['pwd']);
        // The scopes' claims, at userinfo with the (opaque) access token.
        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        assert.equal(info.email, user.email);
        assert.equal(info.name, 'Ada Lovelace');

        // The same app again, in the same browser: the session and the consent stand, no page at all.
        tab.documents.length = 0;
        const again = await authorizationRequest(config);
        await begin(tab, again);
        const second = await landing(tab, 2);
        assert.ok(second.searchParams.get('code'));
        assert.deepEqual(
          tab.documents.filter((d) => d.status === 200),
          [],
          'no page of Usher was shown',
        );
        assert.equal((await exchange(config, again, second)).claims()!.sub, id.toString());
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('Deny on the consent page: the app gets error=access_denied (and its state), which openid-client reports', async () => {
      const user = newUser();
      await register(t, user);
      const { config, authorization } = await app();
      const tab = await open();
      const { page } = tab;
      try {
        await openSignIn(tab, authorization);
        await passwordSignIn(page, user);
        await page.locator('#consent').waitFor({ state: 'visible' });
        await page.getByRole('button', { name: 'Deny' }).click();
        const back = await landing(tab);
        assert.equal(back.searchParams.get('error'), 'access_denied');
        assert.equal(back.searchParams.get('code'), null);
        assert.equal(back.searchParams.get('state'), authorization.state);
        await assert.rejects(exchange(config, authorization, back), { error: 'access_denied' });

        // Denying remembers nothing: the next request asks again.
        const again = await authorizationRequest(config);
        await begin(tab, again);
        await page.locator('#consent').waitFor({ state: 'visible' });
        assert.equal(tab.landings.length, 1);
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test("an account with TOTP: after the password the code field appears (focused); a wrong code says so; the right one finishes, and the ID token's amr is pwd, otp, mfa", async () => {
      const user = newUser();
      await register(t, user);
      const secret = await turnOnTotp(user);
      const { config, authorization } = await app();
      const tab = await open();
      const { page } = tab;
      try {
        await openSignIn(tab, authorization);
        assert.equal(await page.locator('#signin-code-field').isVisible(), false, 'no code field at first');
        await passwordSignIn(page, user);
        await page.locator('#signin-code-field').waitFor({ state: 'visible' });
        const field = page.locator('#signin').getByLabel('Code from your authenticator app');
        assert.equal(await field.count(), 1, 'a labelled field');
        assert.equal(await field.getAttribute('autocomplete'), 'one-time-code');
        await until(async () => (await activeId(page)) === 'signin-code', 'the code field has the focus');
        assert.match(
          await page.locator('#message').innerText(),
          /Enter the code from your authenticator app/,
        );
        await shoot(page, 'oidc-totp.png');

        await field.fill(wrongCodeAt(secret, Date.now()));
        await page.click('#signin-submit');
        await until(
          async () => /code is not right/.test(await page.locator('#message').innerText()),
          'the wrong code said so',
        );
        assert.equal(await page.locator('#message').getAttribute('class'), 'message error');
        assert.equal(await page.locator('#message').getAttribute('role'), 'alert');
        assert.ok(await field.isVisible(), 'asked again');
        assert.equal(await activeId(page), 'signin-code', 'the field keeps the focus');
        assert.equal(tab.landings.length, 0);

        await field.fill(totpAt(secret, Date.now()));
        await page.click('#signin-submit');
        await allow(tab);
        const back = await landing(tab);
        assert.ok(back.searchParams.get('code'), `a code (${back})`);
        const claims = (await exchange(config, authorization, back)).claims()!;
        assert.deepEqual(claims.amr, ['pwd', 'otp', 'mfa']);
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('a passkey (added on the account page with a virtual authenticator): "Sign in with a passkey" on the interaction page finishes, and amr has hwk', async () => {
      const user = newUser();
      const { id } = await register(t, user);
      const tab = await open();
      const { page, context } = tab;
      await addVirtualAuthenticator(context, page);
      try {
        await page.goto(`${t.base}/account`, { waitUntil: 'networkidle' });
        await passwordSignIn(page, user);
        await page.locator('#account').waitFor({ state: 'visible' });
        await page.fill('#passkey-name', 'Laptop');
        await page.click('#passkey-add-submit');
        await page.waitForSelector('#passkeys > li:has-text("Laptop")');
        // Signed out: the authorization needs a sign-in again.
        await context.clearCookies();

        const { config, authorization } = await app();
        await openSignIn(tab, authorization);
        const button = page.getByRole('button', { name: 'Sign in with a passkey' });
        assert.ok(await button.isVisible());
        await button.click();
        await allow(tab);
        const back = await landing(tab);
        assert.ok(back.searchParams.get('code'), `a code (${back})`);
        const claims = (await exchange(config, authorization, back)).claims()!;
        assert.equal(claims.sub, id.toString());
        assert.ok((claims.amr as string[]).includes('hwk'), `amr ${JSON.stringify(claims.amr)}`);
        assert.ok(!(claims.amr as string[]).includes('pwd'), 'no password this time');
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await context.close();
      }
    });

    test("signed in on /account first, a first-party app: the authorization goes straight back to the app, no page of Usher's shown (no sign-in, no consent)", async () => {
      const user = newUser();
      const { id } = await register(t, user);
      const tab = await open();
      const { page } = tab;
      try {
        await page.goto(`${t.base}/account`, { waitUntil: 'networkidle' });
        // Signed in a minute ago: prompt=login below must not take it for a sign-in made for it.
        offset = -60_000;
        try {
          await passwordSignIn(page, user);
          await page.locator('#account').waitFor({ state: 'visible' });
        } finally {
          offset = 0;
        }

        const { config, authorization } = await app({ firstParty: true });
        tab.documents.length = 0;
        await begin(tab, authorization);
        const back = await landing(tab);
        assert.ok(back.searchParams.get('code'), `a code (${back})`);
        assert.deepEqual(
          tab.documents.filter((d) => d.status < 300 || d.status >= 400),
          [],
          'no page of Usher was shown',
        );
        const claims = (await exchange(config, authorization, back)).claims()!;
        assert.equal(claims.sub, id.toString());
        assert.deepEqual(claims.amr, ['pwd']);

        // prompt=login wants a new sign-in: the page is shown then.
        const fresh = await authorizationRequest(config, { prompt: 'login' });
        await openSignIn(tab, fresh);
        assert.ok(await page.locator('#signin').isVisible());
        await passwordSignIn(page, user);
        const again = (await exchange(config, fresh, await landing(tab, 2))).claims()!;
        assert.equal(again.sub, id.toString());
        assert.ok(
          (again.auth_time as number) >= (claims.auth_time as number) + 50,
          `auth_time of the new sign-in (${again.auth_time} after ${claims.auth_time})`,
        );
      } finally {
        await tab.context.close();
      }
    });

    test('"Cancel and go back to the app" on the sign-in page: the app receives error=access_denied', async () => {
      const { config, authorization } = await app();
      const tab = await open();
      const { page } = tab;
      try {
        await openSignIn(tab, authorization);
        const cancel = page.getByRole('button', { name: 'Cancel and go back to the app' });
        assert.ok(await cancel.isVisible());
        // Centred under the card's content.
        const box = await cancel.boundingBox();
        const card = await page.locator('main').boundingBox();
        assert.ok(box && card);
        const off = box.x + box.width / 2 - (card.x + card.width / 2);
        assert.ok(Math.abs(off) <= 2, `the Cancel button is centred (${off} px off)`);
        await cancel.click();
        const back = await landing(tab);
        assert.equal(back.searchParams.get('error'), 'access_denied');
        assert.equal(back.searchParams.get('state'), authorization.state);
        await assert.rejects(exchange(config, authorization, back), { error: 'access_denied' });
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('keyboard only at phone width (360 x 740): focus starts in the email field, Tab and Enter sign in and allow; no sideways scrolling, tap targets of 44 px or more; the page cannot be framed and loads nothing from elsewhere', async () => {
      const user = newUser();
      const { id } = await register(t, user);
      const { config, authorization } = await app({
        name: 'A rather long application name for a small phone',
      });
      const tab = await open(PHONE);
      const { page } = tab;
      try {
        const response = await page.goto(authorization.url.href);
        await page.locator('#signin').waitFor({ state: 'visible' });
        const interactionUrl = page.url();
        assert.match(interactionUrl, /\/oidc\/interaction\/[A-Za-z0-9_-]+$/);
        // The interaction page's own answer (the last of the redirects).
        assert.ok(response);
        assert.equal(response.status(), 200);
        const headers = await response.allHeaders();
        assert.match(headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
        assert.match(headers['content-security-policy'] ?? '', /default-src 'none'/);
        assert.equal(headers['cache-control'], 'no-store');
        await until(async () => (await activeId(page)) === 'email', 'the email field has the focus');

        /** Nothing sideways, every visible button 44 px tall or more. */
        const fitsPhone = async (what: string) => {
          const width = await page
            .locator('body')
            .evaluate((b) => (b as unknown as Dom).ownerDocument.documentElement.scrollWidth);
          assert.ok(width <= 360, `${what}: no sideways scrolling at 360 px (${width})`);
          const targets = page.locator('button:visible, a.button:visible, input:visible');
          const count = await targets.count();
          assert.ok(count > 0);
          for (let i = 0; i < count; i++) {
            const box = await targets.nth(i).boundingBox();
            const label = await targets.nth(i).evaluate((e) => (e as unknown as Dom).id || 'a link');
            assert.ok(box && box.height >= 44, `${what}: ${label} is ${box?.height} px tall`);
            assert.ok(box.x >= 0 && box.x + box.width <= 360, `${what}: ${label} within the screen`);
          }
        };
        await fitsPhone('the sign-in page');
        const signInButton = await page.locator('#signin-submit').boundingBox();
        const or = await page.locator('#other-ways .or').boundingBox();
        assert.ok(signInButton && or);
        assert.ok(
          or.y - (signInButton.y + signInButton.height) >= 16,
          '"or" stands apart from the Sign in button',
        );
        assert.ok(await page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` }).isVisible());
        assert.ok(await page.getByRole('button', { name: 'Sign in with a passkey' }).isVisible());
        await shoot(page, 'oidc-signin-phone.png');

        await page.keyboard.type(user.email);
        await page.keyboard.press('Tab');
        assert.equal(await activeId(page), 'password', 'Tab goes to the password');
        await page.keyboard.type(user.password);
        await page.keyboard.press('Enter');
        await page.locator('#consent').waitFor({ state: 'visible' });
        await until(async () => (await activeId(page)) === 'allow', 'Allow has the focus');
        await fitsPhone('the consent page');
        await shoot(page, 'oidc-consent-phone.png');
        await page.keyboard.press('Tab');
        assert.equal(await activeId(page), 'deny', 'Tab goes on to Deny');
        await page.keyboard.press('Shift+Tab');
        assert.equal(await activeId(page), 'allow');
        await page.keyboard.press('Enter');
        const back = await landing(tab);
        assert.equal((await exchange(config, authorization, back)).claims()!.sub, id.toString());

        // Every request went to Usher or to the app's redirect URI.
        const elsewhere = tab.requests.filter((url) => {
          const origin = new URL(url).origin;
          return origin !== t.base && origin !== APP_ORIGIN;
        });
        assert.deepEqual(elsewhere, [], 'nothing loaded from another origin');
        assert.ok(tab.requests.some((url) => url.startsWith(`${t.base}/pages/interaction.js`)));
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');

        // Framed by another site, the page is not shown at all.
        const frame = await open(DESKTOP);
        try {
          await frame.context.route(`${APP_ORIGIN}/framing`, (route) =>
            route.fulfill({
              status: 200,
              contentType: 'text/html; charset=utf-8',
              body: `<!doctype html><title>Framing</title><iframe src="${interactionUrl}"></iframe>`,
            }),
          );
          await frame.page.goto(`${APP_ORIGIN}/framing`, { waitUntil: 'load' });
          const child = frame.page.frames().find((f) => f !== frame.page.mainFrame());
          assert.ok(child, 'the iframe is there');
          assert.ok(!child.url().startsWith(t.base), `the frame shows no page of Usher's (${child.url()})`);
          const text = await child
            .locator('body')
            .innerText()
            .catch(() => '');
          assert.doesNotMatch(text, /Sign in|This sign-in cannot go on/, "nothing of Usher's in the frame");
        } finally {
          await frame.context.close();
        }
      } finally {
        await tab.context.close();
      }
    });

    test("an unknown, foreign or finished interaction shows Usher's error page (400, no stack trace); a page whose interaction is gone says so", async () => {
      const isErrorPage = async (page: Page, what: string) => {
        assert.equal(await page.title(), 'Sign-in problem', what);
        assert.equal(await page.locator('h1').innerText(), 'This sign-in cannot go on', what);
        const text = await page.locator('body').innerText();
        assert.match(text, /Go back to the app/, what);
        assert.doesNotMatch(text, /\bat \S+ \(|node_modules|\.ts:\d+|Error:/, `${what}: no stack trace`);
        assert.equal(await page.locator('#signin').count(), 0, `${what}: no sign-in form`);
      };
      const tab = await open();
      const { page } = tab;
      try {
        // Unknown.
        const unknown = await page.goto(`${t.base}/oidc/interaction/no-such-interaction`);
        assert.equal(unknown?.status(), 400);
        await isErrorPage(page, 'an unknown interaction');
        await shoot(page, 'oidc-error.png');
        assert.match(await page.locator('body').innerText(), /expired or was opened in another browser/);

        // A real one, opened in another browser (without its cookie).
        const user = newUser();
        await register(t, user);
        const { authorization } = await app();
        const uid = await openSignIn(tab, authorization);
        const other = await open();
        try {
          const foreign = await other.page.goto(`${t.base}/oidc/interaction/${uid}`);
          assert.equal(foreign?.status(), 400);
          await isErrorPage(other.page, 'another browser');
        } finally {
          await other.context.close();
        }

        // Finished: back to the interaction's address after the app got its code.
        await passwordSignIn(page, user);
        await allow(tab);
        await landing(tab);
        const finished = await page.goto(`${t.base}/oidc/interaction/${uid}`);
        assert.equal(finished?.status(), 400);
        await isErrorPage(page, 'a finished interaction');

        // The provider's own errors (an unknown client) are the same page.
        const bad = await page.goto(
          `${t.issuer}/auth?client_id=nobody&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(REDIRECT_URI)}`,
        );
        assert.equal(bad?.status(), 400);
        await isErrorPage(page, 'an unknown client');

        // The page is open but its interaction is gone (its cookie lost): Cancel says so, in words.
        // (Signed out first, so that the sign-in form is shown.)
        await tab.context.clearCookies();
        const next = await app();
        await openSignIn(tab, next.authorization);
        assert.ok(await page.locator('#signin').isVisible());
        await tab.context.clearCookies();
        const cancel = page.getByRole('button', { name: 'Cancel and go back to the app' });
        await cancel.click();
        await page.locator('#message.error').waitFor();
        assert.match(
          await page.locator('#message').innerText(),
          /This sign-in has expired\. Go back to the app/,
        );
        assert.ok(await cancel.isEnabled(), 'the button is free again');
        assert.equal(tab.landings.length, 1, 'nothing more for the app');
      } finally {
        await tab.context.close();
      }
    });

    test('"Continue with Test ID" on the interaction page: through the upstream provider\'s pages and back to the interaction, which finishes (amr fed)', async () => {
      logins += 1;
      const login = `oidc-person${logins}`;
      const email = newUser().email;
      upstream.setAccount(login, { email, email_verified: true, name: 'Provider Person' });
      const { config, authorization } = await app();
      const tab = await open();
      const { page } = tab;
      try {
        const uid = await openSignIn(tab, authorization);
        const link = page.getByRole('link', { name: `Continue with ${PROVIDER_NAME}` });
        assert.equal(
          await link.getAttribute('href'),
          `/api/oauth/test/start?redirectTo=${encodeURIComponent(`/oidc/interaction/${uid}`)}`,
        );
        await link.click();
        await until(
          async () => (await page.title().catch(() => '')) === LOGIN_PAGE,
          'the provider login page',
        );
        await page.getByLabel('login').fill(login);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await until(
          async () => (await page.title().catch(() => '')) === CONSENT_PAGE || tab.landings.length > 0,
          'the provider consent page',
        );
        if (tab.landings.length === 0) await page.getByRole('button', { name: 'Allow' }).click();
        // Back at the interaction, signed in: its login is done at once, and Usher asks for consent.
        await page.locator('#consent').waitFor({ state: 'visible' });
        assert.ok(
          tab.documents.some((d) => d.url === `${t.base}/oidc/interaction/${uid}` && d.status === 303),
          'back through the interaction page, whose login was done at once',
        );
        assert.equal(await page.locator('#consent-who-line').innerText(), `Signed in as ${email}.`);
        await allow(tab);
        const back = await landing(tab);
        assert.ok(back.searchParams.get('code'), `a code (${back})`);
        const tokens = await exchange(config, authorization, back);
        const claims = tokens.claims()!;
        assert.deepEqual(claims.amr, ['fed']);
        assert.equal((await client.fetchUserInfo(config, tokens.access_token, claims.sub)).email, email);
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
      }
    });

    test('profile A (sign-in failures carry a code only): a wrong password, the TOTP step and a wrong code are said in words; the right code finishes', async () => {
      const a = await startLocalhostApp(store, 'a');
      const tab = await open(DESKTOP, a.base);
      const { page } = tab;
      try {
        const user = newUser();
        await register(a, user);
        const secret = await turnOnTotp(user, a);
        const { config, authorization } = await app({}, {}, a);
        await openSignIn(tab, authorization);
        await passwordSignIn(page, { email: user.email, password: 'not the password' });
        await page.locator('#message.error').waitFor();
        assert.match(await page.locator('#message').innerText(), /email or the password is not right/);
        await passwordSignIn(page, user);
        await page.locator('#signin-code-field').waitFor({ state: 'visible' });
        await page.fill('#signin-code', wrongCodeAt(secret, Date.now()));
        await page.click('#signin-submit');
        await until(
          async () => /code is not right/.test(await page.locator('#message').innerText()),
          'the wrong code said so',
        );
        await page.fill('#signin-code', totpAt(secret, Date.now()));
        await page.click('#signin-submit');
        await allow(tab);
        const back = await landing(tab);
        assert.deepEqual((await exchange(config, authorization, back)).claims()!.amr, ['pwd', 'otp', 'mfa']);
        assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
      } finally {
        await tab.context.close();
        await a.close();
      }
    });
  });
