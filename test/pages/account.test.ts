// The account page (GET /account, issue 14) and its QR code route over HTTP, without a browser: the
// page's headers (the pages' CSP plus blob: images, on this page alone), same-origin assets, no
// inline code, and POST /account/qr (for a session only). What the page does in a browser:
// account-browser.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { profileApps, register, signIn, type TestApp } from '../helpers/app.ts';
import { assertScriptsAreFiles } from '../helpers/pages.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const ACCOUNT_CSP = PAGE_CSP.replace("img-src 'self';", "img-src 'self' blob:;");
const ASSETS: Record<string, string> = {
  '/pages/account.js': 'text/javascript; charset=utf-8',
  '/pages/account.css': 'text/css; charset=utf-8',
};
const URI =
  'otpauth://totp/Usher:someone%40example.com?issuer=Usher&secret=JBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30';

describeEachStore('Account page', (store) => {
  const apps = profileApps(store);

  /** A signed-in user's session cookie, as the account page sends it. */
  async function sessionCookie(t: TestApp): Promise<Record<string, string>> {
    return { cookie: `usher_session=${await signIn(t, await register(t))}` };
  }

  test('ISSUE 14: GET /account answers the page with the pages CSP plus blob: images, no Referer, no-store, nosniff', async () => {
    for (const t of [apps.a, apps.b]) {
      const res = await t.get('/account');
      assert.equal(res.statusCode, 200, t.profile);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(res.headers['content-security-policy'], ACCOUNT_CSP);
      assert.equal(res.headers['referrer-policy'], 'no-referrer');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.match(res.body, /^<!doctype html>/i);
      assert.match(res.body, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
    }
  });

  test("ISSUE 14: the account page's own assets have its CSP; the shared assets and the other pages keep theirs exactly", async () => {
    for (const [path, type] of Object.entries(ASSETS)) {
      const res = await apps.b.get(path);
      assert.equal(res.statusCode, 200, path);
      assert.equal(res.headers['content-type'], type, path);
      assert.equal(res.headers['content-security-policy'], ACCOUNT_CSP, path);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', path);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
      assert.equal(res.headers['cache-control'], 'no-cache', path);
      assert.match(String(res.headers.etag), /^"[A-Za-z0-9_-]{22}"$/, path);
    }
    for (const path of [
      '/reset-password',
      '/verify-email',
      '/pages/pages.css',
      '/pages/link.js',
      '/pages/icon.svg',
    ]) {
      assert.equal((await apps.b.get(path)).headers['content-security-policy'], PAGE_CSP, path);
    }
  });

  test('ISSUE 14: the page names only its own same-origin assets, with no inline code; its script writes no HTML', async () => {
    const html = (await apps.b.get('/account')).body;
    const refs = [...html.matchAll(/\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1]!);
    assert.ok(refs.includes('/pages/account.js') && refs.includes('/pages/account.css'));
    for (const ref of refs) {
      // The links between the page's own forms (sign in, create an account, forgot password).
      if (ref.startsWith('#')) {
        assert.ok(['#signin', '#signup', '#forgot'].includes(ref), `${ref} is one of the page's own views`);
        continue;
      }
      assert.ok(ref.startsWith('/pages/'), `${ref} is one of the pages' assets`);
      assert.equal((await apps.b.get(ref)).statusCode, 200, `${ref} is served`);
    }
    assert.doesNotMatch(html, /https?:\/\//);
    assertScriptsAreFiles(html, '/account');
    assert.doesNotMatch(html, /<style\b/i);
    assert.doesNotMatch(html, /\sstyle\s*=/i);
    assert.doesNotMatch(html, /\son[a-z]+\s*=/i);
    const js = (await apps.b.get('/pages/account.js')).body;
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(']) {
      assert.ok(!js.includes(sink), `account.js uses ${sink}`);
    }
    assert.match(js, /\.textContent = /);
  });

  test('ISSUE 14: POST /account/qr draws the text as an SVG QR code, not stored, with the pages CSP', async () => {
    const session = await sessionCookie(apps.b);
    const res = await apps.b.post('/account/qr', { text: URI }, session);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'image/svg+xml');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['content-security-policy'], PAGE_CSP);
    assert.match(res.body, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*viewBox="0 0 \d+ \d+"/);
    assert.match(res.body, /<path [^>]*d="M/);
    assert.doesNotMatch(res.body, /<script|JBSWY3DPEHPK3PXP/i, 'only the drawing: no script, no text');
    const longest = await apps.b.post('/account/qr', { text: 'x'.repeat(512) }, session);
    assert.equal(longest.statusCode, 200);
  });

  test('ISSUE 14: POST /account/qr refuses text over 512 characters, an empty text, other fields and other bodies with 400', async () => {
    const session = await sessionCookie(apps.b);
    for (const body of [{ text: 'x'.repeat(513) }, { text: '' }, {}, { text: URI, extra: 1 }, { text: 5 }]) {
      const res = await apps.b.post('/account/qr', body, session);
      assert.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 40));
      assert.equal(res.json().error, 'VALIDATION_FAILED');
    }
    const form = await apps.b.post('/account/qr', `text=${URI}`, {
      ...session,
      'content-type': 'application/x-www-form-urlencoded',
    });
    assert.equal(form.statusCode, 415, 'JSON only');
  });

  test('ISSUE 25: POST /account/qr needs a session: 401 UNAUTHENTICATED without one or with an ended one, 403 for a cookie sent cross-site', async () => {
    for (const t of [apps.a, apps.b]) {
      const session = await sessionCookie(t);
      for (const [what, headers] of [
        ['no session', {}],
        ['a made-up token', { authorization: `Bearer ${'x'.repeat(43)}` }],
      ] as const) {
        const res = await t.post('/account/qr', { text: URI }, headers);
        assert.equal(res.statusCode, 401, `${t.profile} ${what}: ${res.body}`);
        assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
        assert.equal(res.json().error, 'UNAUTHENTICATED');
        assert.doesNotMatch(res.body, /<svg/);
      }
      // Anonymous callers learn nothing from validation either: refused before the body is read.
      assert.equal((await t.post('/account/qr', { text: '' })).statusCode, 401);
      const crossSite = await t.post(
        '/account/qr',
        { text: URI },
        { ...session, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      );
      assert.equal(crossSite.statusCode, 403, crossSite.body);
      assert.equal(crossSite.json().error, 'FORBIDDEN');
      assert.equal((await t.post('/account/qr', { text: URI }, session)).statusCode, 200);
      assert.equal((await t.post('/api/signout', {}, session)).statusCode, 204);
      const ended = await t.post('/account/qr', { text: URI }, session);
      assert.equal(ended.statusCode, 401, `${t.profile} a session that was signed out`);
    }
  });

  test('ISSUE 14: the account page and its QR route are not operations of the API', async () => {
    const doc = (await apps.b.get('/openapi.json')).json() as { paths: Record<string, unknown> };
    for (const path of ['/account', '/account/qr', ...Object.keys(ASSETS)])
      assert.equal(doc.paths[path], undefined, path);
  });
});
