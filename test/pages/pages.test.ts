// The pages a mail link opens (GET /reset-password, GET /verify-email) and their assets, over HTTP:
// content types, the pages' own security headers (and the JSON ones everywhere else), same-origin
// assets only, no inline code. What the pages do in a browser: browser.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { profileApps } from '../helpers/app.ts';
import { assertScriptsAreFiles } from '../helpers/pages.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

const PAGES = ['/reset-password', '/verify-email'];
const ASSETS: Record<string, string> = {
  '/pages/pages.css': 'text/css; charset=utf-8',
  '/pages/link.js': 'text/javascript; charset=utf-8',
  '/pages/reset-password.js': 'text/javascript; charset=utf-8',
  '/pages/verify-email.js': 'text/javascript; charset=utf-8',
  '/pages/icon.svg': 'image/svg+xml',
};

/** Every src and href value in an HTML document. */
function references(html: string): string[] {
  return [...html.matchAll(/\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1]!);
}

describeEachStore('Pages for mail links', (store) => {
  const apps = profileApps(store);

  test('ISSUE 13: both pages answer 200 text/html in either profile, with the pages CSP, no Referer, no-store and nosniff', async () => {
    for (const t of [apps.a, apps.b]) {
      for (const path of PAGES) {
        const res = await t.get(path);
        assert.equal(res.statusCode, 200, `${t.profile} ${path}`);
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal(res.headers['content-security-policy'], PAGE_CSP, path);
        assert.equal(res.headers['referrer-policy'], 'no-referrer', path);
        assert.equal(res.headers['cache-control'], 'no-store', path);
        assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
        assert.match(res.body, /^<!doctype html>/i);
        assert.match(res.body, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
        assert.match(res.body, /<title>[^<]+<\/title>/);
        assert.match(res.body, /<h1[^>]*>[^<]+<\/h1>/);
      }
    }
  });

  test('ISSUE 13: the assets answer 200 with their content types, the pages CSP, no Referer, nosniff, and an ETag to revalidate', async () => {
    for (const [path, type] of Object.entries(ASSETS)) {
      const res = await apps.b.get(path);
      assert.equal(res.statusCode, 200, path);
      assert.equal(res.headers['content-type'], type, path);
      assert.equal(res.headers['content-security-policy'], PAGE_CSP, path);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', path);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
      assert.equal(res.headers['cache-control'], 'no-cache', path);
      const etag = String(res.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/, path);
      assert.ok(res.body.length > 0);

      const again = await apps.b.inject({ method: 'GET', url: path, headers: { 'if-none-match': etag } });
      assert.equal(again.statusCode, 304, `${path}: unchanged, so not sent again`);
      assert.equal(again.body, '');
      assert.equal(again.headers.etag, etag);
      assert.equal(again.headers['content-security-policy'], PAGE_CSP);
      const weakInList = await apps.b.inject({
        method: 'GET',
        url: path,
        headers: { 'if-none-match': `"old", W/${etag}` },
      });
      assert.equal(weakInList.statusCode, 304);
      const stale = await apps.b.inject({ method: 'GET', url: path, headers: { 'if-none-match': '"old"' } });
      assert.equal(stale.statusCode, 200, `${path}: a different version is sent whole`);
    }
  });

  test('ISSUE 13: the HTML names only same-origin assets that Usher serves, and holds no inline script or style', async () => {
    for (const path of PAGES) {
      const html = (await apps.b.get(path)).body;
      const refs = references(html);
      assert.ok(refs.length >= 3, `${path} links its script, style and icon (found ${refs.join(', ')})`);
      for (const ref of refs) {
        assert.doesNotMatch(ref, /^[a-z][a-z0-9+.-]*:/i, `${path}: ${ref} names a scheme`);
        assert.doesNotMatch(ref, /^\/\//, `${path}: ${ref} names another host`);
        // The way on from a finished reset: the account page, one of Usher's own pages.
        if (ref === '/account') {
          assert.match(
            (await apps.b.get(ref)).headers['content-type'] ?? '',
            /^text\/html/,
            `${path}: ${ref}`,
          );
          continue;
        }
        assert.ok(ref.startsWith('/pages/'), `${path}: ${ref} is one of the pages' assets`);
        assert.equal((await apps.b.get(ref)).statusCode, 200, `${path}: ${ref} is served`);
      }
      assert.doesNotMatch(html, /https?:\/\//, `${path} holds no http(s) URL`);
      // The CSP would block inline code anyway; the page must not need any (its texts are data).
      assertScriptsAreFiles(html, path);
      assert.doesNotMatch(html, /<style\b/i, `${path}: no style element`);
      assert.doesNotMatch(html, /\sstyle\s*=/i, `${path}: no style attribute`);
      assert.doesNotMatch(html, /\son[a-z]+\s*=/i, `${path}: no event-handler attribute`);
    }
  });

  test('ISSUE 13: the scripts never write HTML: API text reaches the page through textContent only', async () => {
    for (const path of Object.keys(ASSETS).filter((p) => p.endsWith('.js'))) {
      const js = (await apps.b.get(path)).body;
      for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(']) {
        assert.ok(!js.includes(sink), `${path} uses ${sink}`);
      }
    }
    const link = (await apps.b.get('/pages/link.js')).body;
    assert.match(link, /\.textContent = /);
    assert.match(link, /history\.replaceState\(/);
  });

  test('ISSUE 13: JSON routes keep the deny-all JSON CSP and send no Referrer-Policy', async () => {
    const answers = {
      'GET /healthz': await apps.b.get('/healthz'),
      'GET /api/users/1': await apps.b.get('/api/users/1'),
      'GET /api/products': await apps.b.get('/api/products'),
      'POST /api/signin': await apps.b.post('/api/signin', {
        email: 'x@example.com',
        password: 'whatever-1',
      }),
      'GET /pages/missing.js': await apps.b.get('/pages/missing.js'),
      'GET /reset-password/extra': await apps.b.get('/reset-password/extra'),
      'GET /openapi.json': await apps.b.get('/openapi.json'),
    };
    for (const [request, res] of Object.entries(answers)) {
      assert.equal(res.headers['content-security-policy'], JSON_CSP, request);
      assert.equal(res.headers['referrer-policy'], undefined, request);
      assert.match(String(res.headers['content-type']), /^application\/json/, request);
    }
  });

  test('ISSUE 13: the pages are not operations of the API: absent from the OpenAPI document', async () => {
    const doc = (await apps.b.get('/openapi.json')).json() as { paths: Record<string, unknown> };
    for (const path of [...PAGES, ...Object.keys(ASSETS)]) assert.equal(doc.paths[path], undefined, path);
  });

  test('ISSUE 13: a page linked with ?token= is logged by its path alone: the token stays out of the log', async () => {
    const secret = 'Zt0kenNeverLogged0123456789abcdefghijklmnopq';
    for (const path of PAGES) {
      const res = await apps.b.get(`${path}?token=${secret}`);
      assert.equal(res.statusCode, 200);
    }
    const logs = apps.b.logs.join('');
    assert.ok(!logs.includes(secret), 'the token is in a log line');
    for (const path of PAGES) assert.ok(logs.includes(`"url":"${path}"`), `${path} is logged`);
  });

  test('the assets served are the files in src/pages/assets, byte for byte; the pages are their templates with every text in', async () => {
    for (const path of Object.keys(ASSETS)) {
      const file = path.slice('/pages/'.length);
      const disk = readFileSync(new URL(`../../src/pages/assets/${file}`, import.meta.url), 'utf8');
      assert.equal((await apps.b.get(path)).body, disk, path);
    }
    for (const [path, file] of [
      ['/reset-password', 'reset-password.html'],
      ['/verify-email', 'verify-email.html'],
    ] as const) {
      const template = readFileSync(new URL(`../../src/pages/assets/${file}`, import.meta.url), 'utf8');
      const page = (await apps.b.get(path)).body;
      assert.match(template, /\{\{\w+\}\}/, `${file} is a template`);
      assert.doesNotMatch(page, /\{\{|\}\}/, `${path}: every place of the template is filled`);
      // Outside its {{…}} places and its texts block (empty in the template), the page is the template as it stands.
      const pieces = template
        .replace('<script type="application/json" id="texts">{}</script>', '{{texts}}')
        .split(/\{\{\w+\}\}/);
      let at = 0;
      for (const piece of pieces) {
        const found = page.indexOf(piece, at);
        assert.ok(
          found >= at,
          `${path}: the template's text ${JSON.stringify(piece.slice(0, 40))} is in the page`,
        );
        at = found + piece.length;
      }
    }
  });
});
