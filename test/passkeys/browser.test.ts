// Passkeys in a real headless Chromium with a CDP virtual authenticator, against a real listening
// Usher at http://localhost:<port> (WebAuthn refuses IP addresses as relying party ids; localhost
// is a secure context). The ceremony code runs in one of Usher's own pages (/verify-email, whose
// CSP allows connect-src 'self'), injected by the test: page.evaluate runs outside the page's CSP.
// Skipped, visibly, without Chromium.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Profile } from '../../src/config.ts';
import { newUser, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { addVirtualAuthenticator, launchChromium, skipWithoutChromium } from '../helpers/browser.ts';
import { freePort } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';

const skip = skipWithoutChromium;

// Plain JavaScript for the page: fetch against the page's own origin (so the session cookie is
// the browser's), and the WebAuthn calls with the base64url <-> ArrayBuffer conversions a page
// of an app would do.
const PAGE_HELPERS = `
window.__pk = (() => {
  const toBytes = (s) => {
    const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4);
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer;
  };
  const toB64url = (buf) => {
    let s = '';
    for (const b of new Uint8Array(buf)) s += String.fromCharCode(b);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  };
  const api = async (method, url, body) => {
    const res = await fetch(url, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const create = async (options) => {
    const publicKey = {
      ...options,
      challenge: toBytes(options.challenge),
      user: { ...options.user, id: toBytes(options.user.id) },
      excludeCredentials: (options.excludeCredentials || []).map((c) => ({ ...c, id: toBytes(c.id) })),
    };
    const cred = await navigator.credentials.create({ publicKey });
    return {
      id: cred.id,
      rawId: toB64url(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
      clientExtensionResults: cred.getClientExtensionResults(),
      response: {
        clientDataJSON: toB64url(cred.response.clientDataJSON),
        attestationObject: toB64url(cred.response.attestationObject),
        transports: cred.response.getTransports ? cred.response.getTransports() : [],
      },
    };
  };
  const get = async (options) => {
    const publicKey = {
      ...options,
      challenge: toBytes(options.challenge),
      allowCredentials: (options.allowCredentials || []).map((c) => ({ ...c, id: toBytes(c.id) })),
    };
    const cred = await navigator.credentials.get({ publicKey });
    return {
      id: cred.id,
      rawId: toB64url(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
      clientExtensionResults: cred.getClientExtensionResults(),
      response: {
        clientDataJSON: toB64url(cred.response.clientDataJSON),
        authenticatorData: toB64url(cred.response.authenticatorData),
        signature: toB64url(cred.response.signature),
        userHandle: cred.response.userHandle ? toB64url(cred.response.userHandle) : undefined,
      },
    };
  };
  return { api, create, get };
})();
`;

interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON from the page
  body: any;
}
type Json = Record<string, unknown>;

/** What PAGE_HELPERS puts on the page's window (no DOM types here: this is Node code). */
interface PageGlobal {
  __pk: {
    api(method: string, url: string, body?: unknown): Promise<ApiAnswer>;
    create(options: unknown): Promise<Json>;
    get(options: unknown): Promise<Json>;
  };
}
/** The page's window, as the functions below see it once they run there. */
declare const window: PageGlobal;
const api = (page: Page, method: string, url: string, body?: unknown) =>
  page.evaluate(([m, u, b]) => window.__pk.api(m as string, u as string, b), [method, url, body] as const);
const create = (page: Page, options: unknown) => page.evaluate((o) => window.__pk.create(o), options);
const get = (page: Page, options: unknown) => page.evaluate((o) => window.__pk.get(o), options);

async function launch(): Promise<Browser> {
  return launchChromium();
}

/** A fresh context on one of Usher's pages, with a virtual platform authenticator holding passkeys. */
async function openWithAuthenticator(
  browser: Browser,
  base: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.addInitScript(PAGE_HELPERS);
  await addVirtualAuthenticator(context, page);
  await page.goto(`${base}/verify-email`, { waitUntil: 'load' });
  return { context, page };
}

function assertSigninBody(profile: Profile, body: Json, user: { id: number; email: string; name: string }) {
  const shown = (profile === 'a' ? body : (body.user as Json)) as Json;
  if (profile === 'b') assert.deepEqual(Object.keys(body), ['user']);
  else assert.deepEqual(Object.keys(body).sort(), ['email', 'id', 'name']);
  assert.deepEqual({ id: shown.id, email: shown.email, name: shown.name }, user);
}

function assertSigninFailed(profile: Profile, answer: ApiAnswer, what: string) {
  assert.equal(answer.status, 401, `${what}: ${JSON.stringify(answer.body)}`);
  if (profile === 'a') assert.deepEqual(answer.body, { error: 'SIGNIN_FAILED' }, what);
  else assert.equal(answer.body.error, 'SIGNIN_FAILED', what);
}

/** An app listening at http://localhost:<port>, with PUBLIC_URL naming it (or `publicUrl`). */
async function listening(store: Store, profile: Profile, publicUrl?: string) {
  const port = await freePort();
  const base = `http://localhost:${port}`;
  const t = await startApp(store, profile, { publicUrl: publicUrl ?? base });
  await t.app.listen({ port, host: '127.0.0.1' });
  return { t, base, direct: `http://127.0.0.1:${port}` };
}

describeUnless(skip, 'Passkeys in Chromium', () => {
  // One Chromium for both stores: each test opens a context of its own, with its own authenticator.
  let browser: Browser;
  before(async () => {
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
  });

  describeEachStore('Chromium passkeys', (store) => {
    const apps: Array<{ t: TestApp; base: string }> = [];
    const byProfile: Partial<Record<Profile, { t: TestApp; base: string }>> = {};

    before(async () => {
      for (const profile of ['a', 'b'] as const) {
        const app = await listening(store, profile);
        apps.push(app);
        byProfile[profile] = app;
      }
    });
    after(async () => {
      for (const app of apps) await app.t.close();
    });

    for (const profile of ['a', 'b'] as const) {
      test(`ISSUE 14 (${profile}): register a passkey after a password sign-in, sign out, sign in with it; a replay and a deleted passkey are refused`, async () => {
        const { base } = byProfile[profile] as { base: string };
        const { context, page } = await openWithAuthenticator(browser, base);
        try {
          const body = newUser();
          const created = await api(page, 'POST', '/api/users', body);
          assert.equal(created.status, 201);
          const user = { id: created.body.id as number, email: body.email, name: body.name };
          assert.equal(
            (await api(page, 'POST', '/api/signin', { email: body.email, password: body.password })).status,
            200,
          );

          const options = await api(page, 'POST', '/api/passkeys/register/options');
          assert.equal(options.status, 200);
          assert.equal(options.body.rp.id, 'localhost');
          const credential = await create(page, options.body);
          const registered = await api(page, 'POST', '/api/passkeys/register', {
            credential,
            name: 'Chromium',
          });
          assert.equal(registered.status, 201, JSON.stringify(registered.body));
          assert.equal(registered.body.name, 'Chromium');
          const listed = await api(page, 'GET', '/api/passkeys');
          assert.deepEqual(listed.body, [registered.body]);

          assert.equal((await api(page, 'POST', '/api/signout')).status, 204);
          assert.equal((await api(page, 'GET', '/api/session')).status, 401);

          const request = await api(page, 'POST', '/api/signin/passkey/options');
          assert.equal(request.status, 200);
          assert.deepEqual(request.body.allowCredentials, []);
          const assertion = await get(page, request.body);
          const signedIn = await api(page, 'POST', '/api/signin/passkey', { credential: assertion });
          assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
          assertSigninBody(profile, signedIn.body, user);
          const session = await api(page, 'GET', '/api/session');
          assert.equal(session.status, 200);
          assert.equal(session.body.user.id, user.id);
          // The cookie works for writes too.
          const product = await api(page, 'POST', '/api/products', {
            name: 'Signed in by passkey',
            price: 1,
          });
          assert.equal(product.status, 201);

          assertSigninFailed(
            profile,
            await api(page, 'POST', '/api/signin/passkey', { credential: assertion }),
            'replay',
          );

          assert.equal((await api(page, 'DELETE', `/api/passkeys/${registered.body.id}`)).status, 204);
          assert.equal((await api(page, 'POST', '/api/signout')).status, 204);
          // The virtual authenticator still holds the credential; Usher no longer knows it.
          const again = await api(page, 'POST', '/api/signin/passkey/options');
          const orphan = await get(page, again.body);
          assertSigninFailed(
            profile,
            await api(page, 'POST', '/api/signin/passkey', { credential: orphan }),
            'deleted',
          );
          assert.equal((await api(page, 'GET', '/api/session')).status, 401);
        } finally {
          await context.close();
        }
      });
    }

    // Several instances share a database only on PostgreSQL.
    if (store.kind === 'postgres') {
      test('ISSUE 14: two instances on one database: a passkey registered through one signs in through the other, with options from either', async () => {
        const one = byProfile.b as { t: TestApp; base: string };
        // The second instance serves the same public URL: behind a load balancer both would.
        const two = await listening(store, 'b', one.base);
        const { context, page } = await openWithAuthenticator(browser, one.base);
        const viaTwo = async (method: string, url: string, body?: unknown, token?: string) => {
          const res = await fetch(`${two.direct}${url}`, {
            method,
            headers: {
              ...(body === undefined ? {} : { 'content-type': 'application/json' }),
              ...(token ? { authorization: `Bearer ${token}` } : {}),
            },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          const text = await res.text();
          return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
        };
        try {
          const body = newUser();
          assert.equal((await api(page, 'POST', '/api/users', body)).status, 201);
          assert.equal(
            (await api(page, 'POST', '/api/signin', { email: body.email, password: body.password })).status,
            200,
          );
          const token = (await context.cookies()).find((ck) => ck.name === 'usher_session')?.value;
          assert.ok(token);

          // Options from instance one, the credential registered through instance two.
          const options = await api(page, 'POST', '/api/passkeys/register/options');
          const credential = await create(page, options.body);
          const registered = await viaTwo('POST', '/api/passkeys/register', { credential }, token);
          assert.equal(registered.status, 201, JSON.stringify(registered.body));
          assert.deepEqual((await api(page, 'GET', '/api/passkeys')).body, [registered.body]);

          // Options from instance two, verified by instance one.
          const request = await viaTwo('POST', '/api/signin/passkey/options');
          const assertion = await get(page, request.body);
          const signedIn = await api(page, 'POST', '/api/signin/passkey', { credential: assertion });
          assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));

          // Options from instance one, verified by instance two; then the replay on one is refused.
          const request2 = await api(page, 'POST', '/api/signin/passkey/options');
          const assertion2 = await get(page, request2.body);
          const signedIn2 = await viaTwo('POST', '/api/signin/passkey', { credential: assertion2 });
          assert.equal(signedIn2.status, 200, JSON.stringify(signedIn2.body));
          assert.ok(sessionToken(signedIn2.headers.getSetCookie()));
          assertSigninFailed(
            'b',
            await api(page, 'POST', '/api/signin/passkey', { credential: assertion2 }),
            'replay on the other instance',
          );
        } finally {
          await context.close();
          await two.t.close();
        }
      });
    }
  });
});
