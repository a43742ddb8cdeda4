// axe-core (WCAG 2.0/2.1, levels A and AA) in a real headless Chromium on every page Usher serves
// (issue 32), in each state that shows different controls: the account page signed out, signing
// up, asking for a reset, signed in with TOTP off and on, in its TOTP set-up, asking for the second
// step, deleting the account, and after a wrong password; the reset, verify and sign-in link pages
// with a good link, a bad one, and done; the console signed out, as an admin (search and a user),
// and as a plain user; the OpenID Connect sign-in and consent pages; and the docs page, at rest and
// with operations open, a call tried out and the Authorize dialog (at phone and desktop width).
// Every state must have no violation; nothing is left out of a scan, swagger-ui's own markup on the
// docs page included (Usher's CSS and script over it fix what it lacks).
//
// Each state's counts are written to test-results/axe.json (the figures of the closing
// note). Both stores, profile B (the pages are the same in both profiles). Skipped, visibly,
// without Chromium.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Config } from '../../src/config.ts';
import { setRole } from '../helpers/admin.ts';
import { NO_THROTTLE, newUser, register, startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { freePort } from '../helpers/process.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';
import {
  API,
  addClient,
  authorizationRequest,
  OIDC_ENCRYPTION_KEY,
  type OidcTestApp,
  OTHER_API,
  relyingParty,
} from '../helpers/usher-oidc.ts';

const TITLE = 'axe-core on every page Usher serves, in headless Chromium';
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, isMobile: true, hasTouch: true };
const RESULTS = new URL('../../test-results/', import.meta.url);

interface Violation {
  id: string;
  impact: string | null;
  nodes: number;
  targets: string[];
}

/** Every state scanned in this process: its violations (rule, nodes). */
const seen: Record<string, { violations: number; nodes: number; rules: Record<string, number> }> = {};

/** axe-core's A/AA violations on the whole page as it is now (nothing left out, swagger-ui's markup included). */
async function axe(page: Page): Promise<Violation[]> {
  // Through the DevTools protocol, not a <script>: the pages' CSP (script-src 'self') stays on.
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(async (tags) => {
    const run = (globalThis as unknown as { axe: { run(c: unknown, o: unknown): Promise<unknown> } }).axe;
    const result = (await run.run({ include: [['html']] }, { runOnly: { type: 'tag', values: tags } })) as {
      violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.length,
      targets: v.nodes.slice(0, 8).map((n) => n.target.join(' ')),
    }));
  }, TAGS)) as Violation[];
  return violations;
}

/** Scans the page in the state `state`, records the figures and asserts there is nothing. */
async function clean(page: Page, state: string): Promise<void> {
  // The page at rest: a CSS transition still running (swagger-ui's Execute button fades its colours
  // after a click) shows axe an in-between colour, a contrast the page never rests at. On a loaded
  // machine the scan came mid-transition and failed.
  // Transitions only: an endless animation (a spinner) never ends, and is not what axe misread.
  await page.waitForFunction(() => {
    type Running = { playState: string; constructor: { name: string } };
    const doc = (globalThis as unknown as { document: { getAnimations(): Running[] } }).document;
    return doc
      .getAnimations()
      .every((a) => a.constructor.name !== 'CSSTransition' || a.playState !== 'running');
  });
  const violations = await axe(page);
  seen[state] = {
    violations: violations.length,
    nodes: violations.reduce((sum, v) => sum + v.nodes, 0),
    rules: Object.fromEntries(violations.map((v) => [v.id, v.nodes])),
  };
  assert.deepEqual(
    violations.map((v) => `${v.id} (${v.impact}): ${v.nodes} × ${v.targets.join(' | ')}`),
    [],
    `${state}: axe-core violations`,
  );
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const visible = (page: Page, selector: string) =>
  page.locator(selector).first().waitFor({ state: 'visible' });

/** Opens `url` as a new document: a page.goto that changes only the fragment would not load the page again. */
async function open(page: Page, url: string): Promise<void> {
  await page.goto('about:blank');
  await page.goto(url);
}

if (skipWithoutChromium) test(TITLE, { skip: skipWithoutChromium }, () => {});
else
  describeEachStore(TITLE, (store) => {
    let t: TestApp;
    let config: Config;
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
        oidc: { resources: [API, OTHER_API], accessTokenTtlSeconds: 300 },
        encryptionKey: OIDC_ENCRYPTION_KEY,
        throttle: { ...NO_THROTTLE },
        mail: mailTo(smtp.url),
      };
      t = await startApp(store, 'b', overrides);
      await t.app.listen({ port, host: '127.0.0.1' });
      config = testConfig(store, 'b', overrides);
      browser = await launchChromium();
    });
    after(async () => {
      for (const context of contexts) await context.close();
      await browser?.close();
      await t?.close();
      await smtp?.close();
      mkdirSync(RESULTS, { recursive: true });
      const file = new URL(`axe-${store.kind}.json`, RESULTS);
      writeFileSync(file, `${JSON.stringify(seen, null, 2)}\n`);
    });

    async function tab(scheme: 'light' | 'dark' = 'light'): Promise<Page> {
      const context = await browser.newContext({ ...PHONE, colorScheme: scheme });
      contexts.push(context);
      return context.newPage();
    }

    /** A new tab signed in as `user` (through the account page's own form). */
    async function signedIn(
      user: { email: string; password: string },
      code?: string,
      scheme: 'light' | 'dark' = 'light',
    ): Promise<Page> {
      const page = await tab(scheme);
      await open(page, `${base}/account`);
      await visible(page, '#signin');
      await page.fill('#email', user.email);
      await page.fill('#password', user.password);
      await page.click('#signin-submit');
      if (code !== undefined) {
        await visible(page, '#signin-code');
        await page.fill('#signin-code', code);
        await page.click('#signin-submit');
      }
      await visible(page, '#account');
      await page.waitForLoadState('networkidle');
      return page;
    }

    test('ISSUE 32: the account page, signed out: the sign-in form, a wrong password, sign-up, forgot-password, the second step', async () => {
      const page = await tab();
      await open(page, `${base}/account`);
      await visible(page, '#signin');
      await page.waitForLoadState('networkidle');
      await clean(page, 'account: signed out');

      const user = await register(t);
      await page.fill('#email', user.email);
      await page.fill('#password', 'not the password');
      await page.click('#signin-submit');
      await visible(page, '#message.error');
      await clean(page, 'account: a wrong password');

      await page.click('#show-signup');
      await visible(page, '#signup');
      await clean(page, 'account: sign up');
      await page.click('#signup-submit');
      await visible(page, '#message.error');
      await clean(page, 'account: sign up, fields missing');
      await page.click('#signup .show-signin');
      await page.click('#show-forgot');
      await visible(page, '#forgot');
      await clean(page, 'account: forgot password');
      await page.fill('#forgot-email', user.email);
      await page.click('#forgot-submit');
      await visible(page, '#message.ok');
      await clean(page, 'account: forgot password, link sent');

      await open(page, `${base}/account#second-factor=not-a-real-ticket`);
      await visible(page, '#second-factor');
      await clean(page, 'account: the second step');
    });

    test('ISSUE 32: the account page, signed in: TOTP off, its set-up, TOTP on with recovery codes, deleting the account', async () => {
      const user = await register(t);
      const page = await signedIn(user);
      await clean(page, 'account: signed in, TOTP off');

      await page.fill('#totp-pass', user.password);
      await page.click('#totp-on');
      await visible(page, '#totp-setup');
      await until(async () => (await page.locator('#totp-qr').getAttribute('src')) !== null, 'the QR code');
      await clean(page, 'account: TOTP set-up');
      const secret = (await page.locator('#totp-secret').innerText()).trim();
      await page.fill('#totp-code', totpAt(secret, Date.now()));
      await page.click('#totp-confirm-submit');
      await visible(page, '#totp-codes');
      await clean(page, 'account: TOTP on, recovery codes');

      // A fresh sign-in (the code above spent) shows the page with TOTP in force.
      const again = await signedIn(user, totpAt(secret, Date.now() + 30_000));
      await clean(again, 'account: signed in, TOTP on');

      await again.click('#delete-start');
      await visible(again, '#delete');
      await again.click('#delete-submit');
      await visible(again, '#delete-message.error');
      await clean(again, 'account: delete the account, refused');
      await again.fill('#change-password-current', 'not the password');
      await again.fill('#change-password-new', 'a new pass-word');
      await again.fill('#change-password-again', 'a new pass-word');
      await again.click('#change-password-submit');
      await visible(again, '#credentials-message.error');
      await clean(again, 'account: a change refused');
    });

    test('ISSUE 32: the pages in a dark colour scheme (they follow the system’s): signed out, signed in, deleting, a finished link, the console', async () => {
      const page = await tab('dark');
      await open(page, `${base}/account`);
      await visible(page, '#signin');
      await page.waitForLoadState('networkidle');
      await clean(page, 'dark: account signed out');
      const user = await register(t);
      const account = await signedIn(user, undefined, 'dark');
      await account.click('#verify-resend');
      await visible(account, '#who-message.ok');
      await clean(account, 'dark: account signed in');
      await account.click('#delete-start');
      await account.click('#delete-submit');
      await visible(account, '#delete-message.error');
      await clean(account, 'dark: account, deleting');
      await open(page, `${base}/verify-email#token=never-was`);
      await visible(page, '#message.error');
      await clean(page, 'dark: verify-email, a bad link');
      await open(page, `${base}/admin`);
      await visible(page, '#signin');
      await clean(page, 'dark: admin signed out');
    });

    test('ISSUE 32: the reset page: an incomplete link, a good link, a bad one, and done', async () => {
      const page = await tab();
      await open(page, `${base}/reset-password`);
      await visible(page, '#message.error');
      await clean(page, 'reset-password: no token');

      const user = await register(t);
      assert.equal((await t.post('/api/password/forgot', { email: user.email })).statusCode, 202);
      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
      const link = /(http:\/\/\S+\/reset-password#token=[A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
      await open(page, link);
      await visible(page, '#reset');
      await clean(page, 'reset-password: the form');
      await page.fill('#password', 'short');
      await page.fill('#confirm', 'other');
      await page.click('#submit');
      await visible(page, '#message.error');
      await clean(page, 'reset-password: the passwords differ');
      await page.fill('#password', 'a new pass-word');
      await page.fill('#confirm', 'a new pass-word');
      await page.click('#submit');
      await visible(page, '#message.ok');
      await clean(page, 'reset-password: done');

      await open(page, `${base}/reset-password#token=spent-or-never-was`);
      await visible(page, '#reset');
      await page.fill('#password', 'a new pass-word');
      await page.fill('#confirm', 'a new pass-word');
      await page.click('#submit');
      await visible(page, '#message.error');
      await clean(page, 'reset-password: a bad link');
    });

    test('ISSUE 32: the verify page and the sign-in link page: a good link, a bad one', async () => {
      const user = newUser();
      assert.equal((await t.post('/api/users', user)).statusCode, 201);
      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.verify);
      const link = /(http:\/\/\S+\/verify-email#token=[A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
      const page = await tab();
      await open(page, link);
      await visible(page, '#message.ok');
      await clean(page, 'verify-email: done');
      await open(page, `${base}/verify-email#token=never-was`);
      await visible(page, '#message.error');
      await clean(page, 'verify-email: a bad link');
      await open(page, `${base}/verify-email`);
      await visible(page, '#message.error');
      await clean(page, 'verify-email: no token');

      await open(page, `${base}/signin/email-link#token=never-was`);
      await visible(page, '#message.error');
      await page.waitForLoadState('networkidle');
      await clean(page, 'signin/email-link: a bad link');
      await open(page, `${base}/signin/email-link`);
      await visible(page, '#message.error');
      await clean(page, 'signin/email-link: no token');
    });

    test('ISSUE 32: the console: signed out, an admin searching and opening a user, a plain user', async () => {
      const page = await tab();
      await open(page, `${base}/admin`);
      await visible(page, '#signin');
      await clean(page, 'admin: signed out');

      const admin = await register(t);
      await setRole(config, admin.email, 'admin');
      await page.fill('#email', admin.email);
      await page.fill('#password', admin.password);
      await page.click('#signin-submit');
      await visible(page, '#search-view');
      await visible(page, '#results');
      await page.waitForLoadState('networkidle');
      await clean(page, 'admin: search');
      await page.locator('#results-body a').first().click();
      await visible(page, '#user-view');
      await page.waitForLoadState('networkidle');
      await clean(page, 'admin: a user');
      for (const view of ['audit', 'webhooks', 'invite']) {
        await open(page, `${base}/admin#${view}`);
        await visible(page, `#${view}-view`);
        await page.waitForLoadState('networkidle');
        await clean(page, `admin: ${view}`);
      }

      const plain = await register(t);
      const other = await tab();
      await open(other, `${base}/admin`);
      await visible(other, '#signin');
      await other.fill('#email', plain.email);
      await other.fill('#password', plain.password);
      await other.click('#signin-submit');
      await visible(other, '#denied');
      await clean(other, 'admin: a plain user');
    });

    test('ISSUE 32: the OpenID Connect sign-in and consent pages', async () => {
      const oidc: OidcTestApp = { ...t, base, issuer: `${base}/oidc`, config };
      const registered = await addClient(oidc, { name: 'Axe app' });
      const rp = await relyingParty(oidc, registered);
      const page = await tab();
      await open(page, (await authorizationRequest(rp)).url.href);
      await visible(page, '#signin');
      await page.waitForLoadState('networkidle');
      await clean(page, 'oidc: sign in');

      const user = await register(t);
      await page.fill('#email', user.email);
      await page.fill('#password', 'not the password');
      await page.click('#signin-submit');
      await visible(page, '.message.error, #message.error');
      await clean(page, 'oidc: a wrong password');
      await page.fill('#password', user.password);
      await page.click('#signin-submit');
      await visible(page, '#consent');
      await clean(page, 'oidc: consent');
    });

    test('ISSUE 32: the docs page, at phone width and on a desktop: at rest, operations open with their error examples, a call tried out, the Authorize dialog', async () => {
      for (const [width, height] of [
        [390, 844],
        [1280, 900],
      ] as const) {
        const context = await browser.newContext({ viewport: { width, height } });
        contexts.push(context);
        const page = await context.newPage();
        await open(page, `${base}/docs`);
        await visible(page, '.opblock');
        await page.waitForLoadState('networkidle');
        await clean(page, `docs (${width} px): at rest`);
        for (const [method, path] of [
          ['post', '/api/signin'],
          ['get', '/api/session'],
          ['put', '/api/users/{id}'],
        ] as const) {
          const block = page
            .locator(`.opblock.opblock-${method}`)
            .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
          await block.locator('.opblock-summary').first().click();
          await block.locator('.responses-wrapper').waitFor();
        }
        await clean(page, `docs (${width} px): operations open`);
        const signin = page
          .locator('.opblock.opblock-post')
          .filter({ has: page.locator('.opblock-summary-path[data-path="/api/signin"]') });
        await signin.locator('.try-out__btn').click();
        await signin.getByRole('button', { name: 'Execute' }).click();
        await signin.locator('.live-responses-table .response .response-col_status').waitFor();
        await clean(page, `docs (${width} px): a call tried out`);
        await page.locator('.auth-wrapper button.authorize').click();
        await visible(page, '.dialog-ux .modal-ux');
        await clean(page, `docs (${width} px): the Authorize dialog`);
      }
    });
  });
