// Usher's pages in the browser's language, over HTTP (CONTRACT "Languages"; issue 31): the page a
// request's Accept-Language picks (de-AT → de, nothing known → en), `<html lang>`, Content-Language
// and Vary, the pages' security headers as they were, the texts block inert and safe, the staff
// console English whatever is asked, and the provider's server-rendered pages (error, expired
// sign-in, sign-out) in the language too. In Chromium: pages-browser.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FEATURES, featuresOf } from '../../src/features.ts';
import { composePageTexts } from '../../src/pages/i18n.ts';
import type { TestApp } from '../helpers/app.ts';
import { assertScriptsAreFiles } from '../helpers/pages.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { type OidcTestApp, startOidcApp } from '../helpers/usher-oidc.ts';

/** Every page text group in every language, as the app composes them at start. */
const PAGE_TEXTS = composePageTexts(featuresOf(FEATURES));

const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const ACCOUNT_CSP = PAGE_CSP.replace("img-src 'self';", "img-src 'self' blob:;");

const PAGES = {
  '/reset-password': 'resetPassword',
  '/verify-email': 'verifyEmail',
  '/signin/email-link': 'signinEmailLink',
  '/account': 'account',
} as const;

const ASKED = [
  ['de-AT,de;q=0.9', 'de'],
  ['fr-CH, en;q=0.5', 'fr'],
  ['ja, es-419;q=0.8', 'es'],
  ['en-GB', 'en'],
  ['ja, zh;q=0.9', 'en'],
  ['', 'en'],
  ['%%%, *;q=0.1', 'en'],
] as const;

describeEachStore('Pages in the browser’s language (HTTP)', (store) => {
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'b');
  });
  after(() => t?.close());

  const get = (app: TestApp, url: string, acceptLanguage?: string) =>
    app.inject({ method: 'GET', url, headers: acceptLanguage ? { 'accept-language': acceptLanguage } : {} });

  test('each page in the language Accept-Language picks, saying which, with its security headers as they were', async () => {
    for (const [path, group] of Object.entries(PAGES)) {
      for (const [asked, lang] of ASKED) {
        const res = await get(t, path, asked);
        const what = `${path} for "${asked}"`;
        assert.equal(res.statusCode, 200, what);
        assert.equal(res.headers['content-language'], lang, what);
        assert.equal(res.headers.vary, 'Accept-Language', what);
        assert.equal(
          res.headers['content-security-policy'],
          path === '/account' ? ACCOUNT_CSP : PAGE_CSP,
          what,
        );
        assert.equal(res.headers['cache-control'], 'no-store', what);
        assert.equal(res.headers['referrer-policy'], 'no-referrer', what);
        assert.match(res.body, new RegExp(`^<!doctype html>\\n<html lang="${lang}">`), what);
        const texts = assertScriptsAreFiles(res.body, what);
        const own = PAGE_TEXTS[lang][group] as Record<string, string>;
        for (const [key, text] of Object.entries({ ...PAGE_TEXTS[lang].common, ...own }))
          assert.equal(texts[key], text, `${what}: ${key}`);
        assert.doesNotMatch(res.body, /\{\{/, `${what}: every place filled`);
      }
    }
  });

  test('the texts block cannot be closed by a text: every < in it is written \\u003c', async () => {
    const res = await get(t, '/account', 'fr');
    const block = /<script type="application\/json" id="texts">([\s\S]*?)<\/script>/.exec(res.body)![1]!;
    assert.doesNotMatch(block, /</);
    assert.equal(JSON.parse(block).yourAccount, 'Votre compte');
  });

  test('the staff console stays English whatever is asked, and does not say it varies', async () => {
    for (const asked of ['de', 'fr-FR', 'es']) {
      const res = await get(t, '/admin', asked);
      assert.equal(res.statusCode, 200);
      assert.match(res.body, /<html lang="en">/);
      assert.equal(res.headers['content-language'], undefined);
      assert.equal(res.headers.vary, undefined);
      assert.equal(assertScriptsAreFiles(res.body, '/admin').unreachable, PAGE_TEXTS.en.common.unreachable);
    }
  });

  test("the provider's own pages: an expired sign-in and a bad request are explained in the browser's language", async () => {
    const gone = await get(t, '/oidc/interaction/abc123', 'de-DE');
    assert.equal(gone.statusCode, 400);
    assert.equal(gone.headers['content-language'], 'de');
    assert.match(gone.body, /<html lang="de">/);
    assert.ok(gone.body.includes(`<h1>${PAGE_TEXTS.de.oidc.problemHeading}</h1>`), gone.body);
    assert.ok(gone.body.includes(PAGE_TEXTS.de.oidc.expired));
    assert.ok(gone.body.includes('(Fehlercode: interaction_expired)'));

    const bad = await get(t, '/oidc/auth?client_id=nobody&response_type=code&scope=openid', 'es-AR');
    assert.equal(bad.statusCode, 400, bad.body);
    assert.match(bad.body, /<html lang="es">/);
    assert.ok(bad.body.includes(`<h1>${PAGE_TEXTS.es.oidc.problemHeading}</h1>`), bad.body);
    assert.ok(bad.body.includes('(Código de error: invalid_client)'), bad.body);
    assert.match(String(bad.headers.vary), /Accept-Language/);
    assert.equal(bad.headers['content-language'], 'es');
  });

  test('the signed-out page, in French', async () => {
    // Without a session there is nobody to sign out: straight to the signed-out page, which is Usher's.
    const done = await fetch(`${t.base}/oidc/session/end`, {
      redirect: 'manual',
      headers: { 'accept-language': 'fr-FR' },
    });
    assert.equal(done.status, 303);
    const success = await fetch(new URL(done.headers.get('location')!, t.base), {
      headers: { 'accept-language': 'fr-FR' },
    });
    const page = await success.text();
    assert.equal(success.status, 200, page);
    assert.match(page, /<html lang="fr">/);
    assert.ok(page.includes(`<h1>${PAGE_TEXTS.fr.oidc.signedOutHeading}</h1>`), page);
    assert.ok(page.includes(PAGE_TEXTS.fr.oidc.closePage));
    assert.equal(success.headers.get('content-language'), 'fr');
  });
});
