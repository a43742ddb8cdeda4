// Usher's pages in the browser's language (CONTRACT "Languages"; issue 31), in a real headless
// Chromium whose context speaks English, German, French or Spanish (Playwright's `locale`: the
// Accept-Language it sends and navigator.languages), against a real listening Usher: the mail-link
// pages, the account page (and its Language section, which changes what the account's mail is
// written in), the sign-in link page, and the OpenID Connect sign-in and consent page (where an
// app's ui_locales comes first). No console error and no CSP violation on any of them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Config } from '../../src/config.ts';
import { FEATURES, featuresOf } from '../../src/features.ts';
import { escapeHtml } from '../../src/oidc/pages.ts';
import { composePageTexts } from '../../src/pages/i18n.ts';
import { NO_THROTTLE, newUser, startApp, testConfig } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freePort } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  API,
  addClient,
  authorizationRequest,
  OIDC_ENCRYPTION_KEY,
  type OidcTestApp,
  REDIRECT_URI,
  relyingParty,
} from '../helpers/usher-oidc.ts';

/** Every page text group in every language, as the app composes them at start. */
const PAGE_TEXTS = composePageTexts(featuresOf(FEATURES));

const TITLE = "Usher's pages in the browser's language, in headless Chromium";
const APP_ORIGIN = new URL(REDIRECT_URI).origin;

const LANGUAGES = [
  {
    lang: 'en',
    browser: 'en-US',
    account: 'Your account',
    saved: 'Saved. Mail language: Deutsch.',
    to: 'de',
  },
  {
    lang: 'de',
    browser: 'de-DE',
    account: 'Ihr Konto',
    saved: 'Gespeichert. Sprache der E-Mails: Français.',
    to: 'fr',
  },
  {
    lang: 'fr',
    browser: 'fr-FR',
    account: 'Votre compte',
    saved: 'Enregistré. Langue des e-mails\u00a0: Español.',
    to: 'es',
  },
  {
    lang: 'es',
    browser: 'es-ES',
    account: 'Tu cuenta',
    saved: 'Guardado. Idioma de los correos: English.',
    to: 'en',
  },
] as const;

/** Polls `condition` from Node (up to 10 s). */
async function until(condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One Chromium for both stores (each test opens a context of its own); launched by the file's `before`. */
let browser: Browser;

if (skipWithoutChromium) test(TITLE, { skip: skipWithoutChromium }, () => {});
else {
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  describeEachStore(TITLE, (store) => {
    let t: OidcTestApp;

    before(async () => {
      const port = await freePort();
      const base = `http://localhost:${port}`;
      const overrides: Partial<Config> = {
        publicUrl: base,
        oidc: { resources: [API], accessTokenTtlSeconds: 300 },
        encryptionKey: OIDC_ENCRYPTION_KEY,
        throttle: { ...NO_THROTTLE },
      };
      const app = await startApp(store, 'b', overrides);
      await app.app.listen({ port, host: '127.0.0.1' });
      t = { ...app, base, issuer: `${base}/oidc`, config: testConfig(store, 'b', overrides) };
    });
    after(async () => {
      await t?.close();
    });

    interface Tab {
      context: BrowserContext;
      page: Page;
      /** Console errors and warnings, page errors and CSP violations on Usher's pages. */
      problems: string[];
      /** The app's home page link (for the OpenID Connect sign-in). */
      next: string;
    }

    async function open(locale: string): Promise<Tab> {
      const context = await browser.newContext({ locale, viewport: { width: 1024, height: 800 } });
      const page = await context.newPage();
      const tab: Tab = { context, page, problems: [], next: '' };
      page.on('console', (message) => {
        if (message.type() !== 'error' && message.type() !== 'warning') return;
        const from = message.location().url;
        if (!from.startsWith(t.base)) return;
        // The browser's notes on the API's 4xx answers: the pages handle them.
        if (message.text().startsWith('Failed to load resource')) {
          const path = new URL(from).pathname;
          if (path.startsWith('/api/') || /^\/oidc\/interaction\/[^/]+\/details$/.test(path)) return;
        }
        tab.problems.push(`console ${message.type()}: ${message.text()} @ ${from}`);
      });
      page.on('pageerror', (error) => tab.problems.push(`page error: ${error.message}`));
      await page.addInitScript({
        content: `document.addEventListener('securitypolicyviolation', (event) =>
        console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
      });
      await context.route(`${APP_ORIGIN}/**`, async (route) => {
        const body = `<!doctype html><title>The app</title><a id="start" href="${escapeHtml(tab.next)}">Sign in</a>`;
        await route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body });
      });
      return tab;
    }

    const lang = (page: Page) => page.locator('html').getAttribute('lang');
    const message = (page: Page) => page.locator('#message').innerText();

    for (const language of LANGUAGES) {
      const texts = PAGE_TEXTS[language.lang];

      test(`${language.lang}: the mail-link pages (reset, verify, sign-in link) speak ${language.lang}, their script's words too`, async () => {
        const tab = await open(language.browser);
        const { page } = tab;
        try {
          await page.goto(`${t.base}/reset-password`);
          assert.equal(await lang(page), language.lang);
          await page.locator('#message').waitFor();
          assert.equal(await page.locator('h1').innerText(), texts.common.linkIncomplete);
          assert.equal(await page.title(), texts.common.linkIncomplete);
          assert.equal(await message(page), `${texts.common.incomplete}\n\n${texts.common.incompleteHint}`);

          // Another document first: a change of the fragment alone would not load the page again.
          await page.goto('about:blank');
          await page.goto(`${t.base}/reset-password#token=abc`);
          assert.equal(await page.locator('h1').innerText(), texts.resetPassword.title);
          assert.equal(
            await page.locator('label[for=password]').innerText(),
            texts.resetPassword.newPassword,
          );
          await page.fill('#password', 'one password here');
          await page.fill('#confirm', 'another password');
          await page.click('#submit');
          await until(async () => (await message(page)) === texts.resetPassword.notSame, 'the mismatch said');

          // The server's real answer to a bad token, in the page's words.
          await page.goto(`${t.base}/verify-email#token=not-a-real-token`);
          await until(
            async () => (await page.locator('h1').innerText()) === texts.common.linkInvalid,
            'the bad link said',
          );
          assert.equal(
            await message(page),
            `${texts.verifyEmail.expired}\n\n${texts.verifyEmail.expiredHint}`,
          );
          assert.equal(await page.locator('#retry').innerText(), texts.common.tryAgain);

          await page.goto(`${t.base}/signin/email-link`);
          assert.equal(await lang(page), language.lang);
          await page.locator('#ask').waitFor();
          assert.equal(await page.locator('h1').innerText(), texts.common.linkIncomplete);
          assert.equal(await page.locator('label[for=email]').innerText(), texts.signinEmailLink.email);
          assert.equal(await page.locator('#ask-submit').innerText(), texts.signinEmailLink.askSubmit);
          await page.fill('#email', 'someone@example.com');
          await page.click('#ask-submit');
          await until(
            async () => (await page.locator('h1').innerText()) === texts.signinEmailLink.checkMail,
            'the ask answered',
          );
          assert.deepEqual(tab.problems, []);
        } finally {
          await tab.context.close();
        }
      });

      test(`${language.lang}: the account page signs in, shows the account in ${language.lang}, and its Language section sets the account's mail language`, async () => {
        const user = newUser();
        const registered = await t.inject({
          method: 'POST',
          url: '/api/users',
          headers: { 'content-type': 'application/json', 'accept-language': language.browser },
          payload: JSON.stringify(user),
        });
        assert.equal(registered.statusCode, 201, registered.body);
        const tab = await open(language.browser);
        const { page } = tab;
        try {
          await page.goto(`${t.base}/account`);
          assert.equal(await lang(page), language.lang);
          await page.locator('#signin').waitFor();
          assert.equal(await page.locator('h1').innerText(), texts.account.signIn);
          assert.equal(await page.locator('label[for=password]').innerText(), texts.account.password);
          await page.fill('#email', user.email);
          await page.fill('#password', 'not the password');
          await page.click('#signin-submit');
          await until(
            async () => (await message(page)) === texts.account.wrongCredentials,
            'the wrong password said',
          );

          await page.fill('#password', user.password);
          await page.click('#signin-submit');
          await page.locator('#account').waitFor();
          assert.equal(await page.locator('h1').innerText(), language.account);
          assert.equal(await page.locator('#language-title').innerText(), texts.account.languageTitle);
          // The account kept the browser's tag; the list shows it in its own words.
          await until(
            async () => (await page.locator('#locale').inputValue()) === language.browser,
            'the locale shown',
          );
          assert.equal(
            await page.locator('#locale option:checked').innerText(),
            new Intl.DisplayNames([language.browser], { type: 'language' }).of(language.browser),
          );
          await page.selectOption('#locale', language.to);
          await page.click('#language-submit');
          await until(
            async () => (await page.locator('#language-message').innerText()) === language.saved,
            'saved',
          );
          const token = (await t.post('/api/sessions', { email: user.email, password: user.password })).json()
            .token;
          const account = await t.inject({
            method: 'GET',
            url: '/api/account',
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(account.json().locale, language.to);
          assert.deepEqual(tab.problems, []);
        } finally {
          await tab.context.close();
        }
      });

      test(`${language.lang}: the OpenID Connect sign-in and consent page speak ${language.lang}`, async () => {
        const user = newUser();
        assert.equal((await t.post('/api/users', user)).statusCode, 201);
        const registered = await addClient(t, { name: 'Photo Printer' });
        const config = await relyingParty(t, registered);
        const tab = await open(language.browser);
        const { page } = tab;
        try {
          tab.next = (await authorizationRequest(config)).url.href;
          await page.goto(`${APP_ORIGIN}/`);
          await page.click('#start');
          await page.locator('#signin').waitFor();
          assert.equal(await lang(page), language.lang);
          assert.equal(await page.title(), texts.interaction.signIn);
          assert.equal(
            await page.locator('#client-line').innerText(),
            `${texts.interaction.toContinueBefore}Photo Printer${texts.interaction.toContinueAfter}`.trim(),
          );
          await page.fill('#email', user.email);
          await page.fill('#password', user.password);
          await page.click('#signin-submit');
          await page.locator('#consent').waitFor();
          const allowClient = texts.interaction.allowClient.replace('{client}', 'Photo Printer');
          assert.equal(await page.locator('#heading').innerText(), allowClient);
          assert.deepEqual(await page.locator('#consent-scopes > li').allInnerTexts(), [
            texts.interaction.scopeOpenid,
            texts.interaction.scopeEmail,
            texts.interaction.scopeProfile,
          ]);
          assert.equal(await page.locator('#allow').innerText(), texts.interaction.allow);
          assert.deepEqual(tab.problems, []);
        } finally {
          await tab.context.close();
        }
      });
    }

    test("the app's ui_locales comes before the browser's language: a German browser sees Spanish", async () => {
      const registered = await addClient(t, { name: 'Photo Printer' });
      const config = await relyingParty(t, registered);
      const tab = await open('de-DE');
      const { page } = tab;
      try {
        tab.next = (await authorizationRequest(config, { ui_locales: 'es-MX de' })).url.href;
        await page.goto(`${APP_ORIGIN}/`);
        await page.click('#start');
        await page.locator('#signin').waitFor();
        assert.equal(await lang(page), 'es');
        assert.equal(await page.locator('#signin-submit').innerText(), PAGE_TEXTS.es.interaction.signIn);
        assert.deepEqual(tab.problems, []);
      } finally {
        await tab.context.close();
      }
    });
  });
}
