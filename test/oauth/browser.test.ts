// Sign in with a provider in a real headless Chromium (CONTRACT "Sign in with a provider"): Usher
// listens at http://localhost:<port>, the provider is real (panva's oidc-provider on 127.0.0.2,
// another site, so the usher_oauth cookie must survive a cross-site top-level redirect as
// SameSite=Lax allows) and its own login and consent pages are filled in and clicked. Covered: a
// new account, sign-out, and the same account again (remembered at the provider, then from a new
// browser); and the TOTP ticket: the browser lands on redirectTo#second-factor=<ticket> without a
// session, and the page finishes it with POST /api/signin/second-factor. Skipped, visibly, without
// Chromium.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { mailTo } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { describeUnless } from '../helpers/skip.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt } from '../helpers/totp.ts';
import { listeningUsher, PROVIDER, providerPerson, type Usher, verifiedUser } from './support.ts';

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON from the page
  body: any;
}

/** A fetch from the page, on its own origin (so the browser's cookies go with it). */
function api(page: Page, method: string, url: string, body?: unknown): Promise<Answer> {
  return page.evaluate(
    async ([m, u, b]) => {
      const res = await fetch(u as string, {
        method: m as string,
        credentials: 'same-origin',
        headers: b === undefined ? {} : { 'content-type': 'application/json' },
        body: b === undefined ? undefined : JSON.stringify(b),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    [method, url, body] as const,
  );
}

describeUnless(skipWithoutChromium, 'Provider sign-in in Chromium', () => {
  describeEachStore('Chromium provider sign-in', (store) => {
    let chromium: Browser;
    let provider: TestOidcProvider;
    let smtp: TestSmtp;
    let usher: Usher;
    before(async () => {
      provider = await startOidcProvider();
      smtp = await startSmtp();
      usher = await listeningUsher(store, 'b', provider, {
        host: 'localhost',
        overrides: { mail: mailTo(smtp.url) },
      });
      chromium = await launchChromium();
    });
    after(async () => {
      await chromium?.close();
      await usher?.t.close();
      await provider?.close();
      await smtp?.close();
    });

    const startUrl = () => `${usher.base}/api/oauth/${PROVIDER}/start?redirectTo=%2Faccount`;

    /** Through the provider's login and consent pages, as a person would. */
    async function throughProvider(page: Page, login: string) {
      await page.goto(startUrl());
      assert.equal(new URL(page.url()).origin, provider.issuer, `at the provider: ${page.url()}`);
      await page.getByLabel('login').fill(login);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Allow' }).click();
    }

    async function sessionCookie(context: BrowserContext) {
      return (await context.cookies(usher.base)).find((c) => c.name === 'usher_session');
    }

    test('a new account through the provider’s pages; signed out, then in again (remembered at the provider, and from a new browser): the same account', async () => {
      const person = providerPerson(provider, { name: 'Chromium Person' });
      let id = 0;
      const context = await chromium.newContext();
      try {
        const page = await context.newPage();
        await throughProvider(page, person.login);
        await page.waitForURL(`${usher.base}/account`);
        const cookie = await sessionCookie(context);
        assert.ok(cookie, 'the session cookie is set');
        assert.equal(cookie.httpOnly, true);
        const session = await api(page, 'GET', '/api/session');
        assert.equal(session.status, 200);
        assert.equal(session.body.user.email, person.email);
        assert.equal(session.body.user.name, 'Chromium Person');
        id = session.body.user.id as number;
        const me = await api(page, 'GET', '/api/account');
        assert.equal(me.body.password, false);
        assert.equal(me.body.identities.length, 1);

        assert.equal((await api(page, 'POST', '/api/signout')).status, 204);
        assert.equal((await api(page, 'GET', '/api/session')).status, 401);

        // The provider remembers this browser and its consent: straight back, signed in again.
        await page.goto(startUrl());
        await page.waitForURL(`${usher.base}/account`);
        const again = await api(page, 'GET', '/api/session');
        assert.equal(again.status, 200);
        assert.equal(again.body.user.id, id);
      } finally {
        await context.close();
      }

      const other = await chromium.newContext();
      try {
        const page = await other.newPage();
        await throughProvider(page, person.login);
        await page.waitForURL(`${usher.base}/account`);
        const session = await api(page, 'GET', '/api/session');
        assert.equal(session.status, 200);
        assert.equal(session.body.user.id, id, 'the same account from another browser');
      } finally {
        await other.close();
      }
    });

    test('TOTP in force: the browser lands on redirectTo#second-factor=<ticket> with no session; the page posts the code and is signed in', async () => {
      const owner = await verifiedUser(usher.t, smtp);
      const signin = await usher.t.post('/api/signin', { email: owner.email, password: owner.password });
      const token = /usher_session=([^;]+)/.exec(String(signin.headers['set-cookie']))![1]!;
      const bearer = { authorization: `Bearer ${token}` };
      const setup = await usher.t.post('/api/mfa/totp', { password: owner.password }, bearer);
      assert.equal(setup.statusCode, 200, setup.body);
      const { secret } = setup.json() as { secret: string };
      const confirm = await usher.t.post(
        '/api/mfa/totp/confirm',
        { code: totpAt(secret, Date.now()) },
        bearer,
      );
      assert.equal(confirm.statusCode, 200, confirm.body);
      const person = providerPerson(provider, { email: owner.email, email_verified: true });

      const context = await chromium.newContext();
      try {
        const page = await context.newPage();
        // The account page takes the ticket out of the address once it has read it: the address
        // the browser landed on is taken as the navigation commits.
        const addresses: string[] = [];
        page.on('framenavigated', (frame) => {
          if (frame === page.mainFrame()) addresses.push(frame.url());
        });
        await throughProvider(page, person.login);
        await page.waitForURL((url) => url.origin === usher.base && url.pathname === '/account');
        const arrival = addresses.find((a) => a.startsWith(usher.base));
        assert.ok(arrival, addresses.join(' '));
        const landed = new URL(arrival);
        assert.equal(`${landed.origin}${landed.pathname}`, `${usher.base}/account`);
        const ticket = /^#second-factor=([^&]+)$/.exec(landed.hash)?.[1];
        assert.ok(ticket, arrival);
        assert.equal(await sessionCookie(context), undefined, 'no session before the code');
        assert.equal((await api(page, 'GET', '/api/session')).status, 401);

        const done = await api(page, 'POST', '/api/signin/second-factor', {
          ticket,
          code: totpAt(secret, Date.now() + STEP_MS),
        });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.equal(done.body.user.id, Number(owner.id));
        assert.ok(await sessionCookie(context), 'signed in now');
        const session = await api(page, 'GET', '/api/session');
        assert.equal(session.status, 200);
        assert.equal(session.body.user.id, Number(owner.id));
      } finally {
        await context.close();
      }
    });
  });
});
