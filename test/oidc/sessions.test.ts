// The provider and the browser's Usher session: an existing session stands for the login (no login
// page), none gets the login page, prompt=login and max_age want a sign-in made during the
// interaction, prompt=none never shows a page, signing out of Usher signs out of the provider, and
// RP-initiated logout (openid-client's end-session URL, the provider's confirm form) ends both.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as client from 'openid-client';
import type { Profile } from '../../src/config.ts';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  addClient,
  answerConsent,
  authorizationRequest,
  authorize,
  autoSubmit,
  backToApp,
  CookieBrowser,
  exchange,
  interactionDetails,
  logoutForm,
  type OidcTestApp,
  POST_LOGOUT_URI,
  relyingParty,
  SkewedClock,
  type Stop,
  signedInBrowser,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

/** How long ago the "earlier" sign-ins of these tests were made (the app's clock set back for them). */
const EARLIER_MS = 60_000;

describeEachStore('OpenID Connect sessions', (store) => {
  const clock = new SkewedClock();
  const apps = {} as Record<Profile, OidcTestApp>;
  before(async () => {
    apps.a = await startOidcApp(store, 'a', {}, { clock: clock.now });
    apps.b = await startOidcApp(store, 'b', {}, { clock: clock.now });
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  /** A person, a third-party client they already agreed to, and a browser signed in EARLIER_MS ago. */
  async function signedInEarlier(t: OidcTestApp) {
    const user = newUser();
    const { id } = await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    clock.skewMs = -EARLIER_MS;
    let browser: CookieBrowser;
    try {
      browser = await signedInBrowser(t, user);
    } finally {
      clock.skewMs = 0;
    }
    const first = await authorize(browser, config);
    return { user, sub: id.toString(), config, browser, earlierAuthTime: first.claims()!.auth_time! };
  }

  const isLoginPage = async (browser: CookieBrowser, stop: Stop) => {
    assert.equal(stop.leftTo, undefined, `expected the login page, went back to ${stop.leftTo}`);
    assert.equal(stop.status, 200, stop.body);
    assert.match(stop.url, /\/oidc\/interaction\/[A-Za-z0-9_-]+$/);
    assert.match(stop.body, /<form id="signin"/);
    assert.equal((await interactionDetails(browser, stop)).prompt, 'login');
  };

  test('an existing Usher session is reused: no login page, straight back to the app', async () => {
    const t = apps.b;
    const user = newUser();
    const { id } = await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    const authorization = await authorizationRequest(config);
    const page = await browser.navigate(authorization.url.href);
    const details = await interactionDetails(browser, page);
    assert.equal(details.prompt, 'consent', 'the only page is the consent: the login was the session');
    assert.equal(details.signedInAs, user.email);
    const landed = await answerConsent(browser, page, 'allow');
    assert.ok(landed.leftTo);
    assert.equal((await exchange(config, authorization, landed.leftTo)).claims()!.sub, id.toString());

    const again = await authorizationRequest(config);
    const straight = await browser.navigate(again.url.href);
    assert.ok(straight.leftTo, `no page at all the second time (${straight.status})`);
    assert.ok(straight.leftTo.searchParams.get('code'));
    assert.equal((await exchange(config, again, straight.leftTo)).claims()!.sub, id.toString());
  });

  for (const profile of ['a', 'b'] as const) {
    test(`profile ${profile}: without a session the login page is served; signing in finishes the flow`, async () => {
      const t = apps[profile];
      const user = newUser();
      const { id } = await register(t, user);
      const config = await relyingParty(t, await addClient(t, { name: 'Bookshelf' }));
      const browser = new CookieBrowser(t.base);
      const authorization = await authorizationRequest(config, { login_hint: user.email });
      const page = await browser.navigate(authorization.url.href);
      await isLoginPage(browser, page);
      const response = await browser.fetch(page.url);
      assert.match(String(response.headers.get('content-type')), /^text\/html/);
      await response.body?.cancel();
      const details = await interactionDetails(browser, page);
      assert.equal(details.client.name, 'Bookshelf');
      assert.equal(details.loginHint, user.email);
      assert.equal(details.signedInAs, undefined);

      assert.equal((await browser.signIn(user)).status, 200);
      const callback = await backToApp(browser, await browser.navigate(page.url));
      const tokens = await exchange(config, authorization, callback);
      assert.equal(tokens.claims()!.sub, id.toString());
      assert.deepEqual(tokens.claims()!.amr, ['pwd']);
    });
  }

  test('prompt=login with a session: the login page; only a new sign-in finishes it, and auth_time is its', async () => {
    const t = apps.b;
    const { user, sub, config, browser, earlierAuthTime } = await signedInEarlier(t);
    const authorization = await authorizationRequest(config, { prompt: 'login' });
    const page = await browser.navigate(authorization.url.href);
    await isLoginPage(browser, page);
    assert.equal((await interactionDetails(browser, page)).signedInAs, user.email);
    await isLoginPage(browser, await browser.navigate(page.url)); // the earlier session does not do

    const signedInAt = Math.floor(Date.now() / 1000);
    assert.equal((await browser.signIn(user)).status, 200);
    const landed = await browser.navigate(page.url);
    assert.ok(landed.leftTo, `back to the app after the new sign-in (${landed.status})`);
    const claims = (await exchange(config, authorization, landed.leftTo)).claims()!;
    assert.equal(claims.sub, sub);
    assert.ok(claims.auth_time! >= signedInAt, `auth_time ${claims.auth_time} is the new sign-in's`);
    assert.ok(claims.auth_time! >= earlierAuthTime + EARLIER_MS / 1000 - 1);
  });

  test('max_age: an older sign-in stands within it; past it, the login page and a new sign-in', async () => {
    const t = apps.b;
    const { user, sub, config, browser, earlierAuthTime } = await signedInEarlier(t);

    const within = await authorizationRequest(config, { max_age: '3600' });
    const straight = await browser.navigate(within.url.href);
    assert.ok(straight.leftTo, 'a sign-in a minute old is within an hour');
    const old = (await exchange(config, within, straight.leftTo, { maxAge: 3600 })).claims()!;
    assert.equal(old.auth_time, earlierAuthTime);

    const fresh = await authorizationRequest(config, { max_age: '0' });
    const page = await browser.navigate(fresh.url.href);
    await isLoginPage(browser, page);
    const signedInAt = Math.floor(Date.now() / 1000);
    assert.equal((await browser.signIn(user)).status, 200);
    const landed = await browser.navigate(page.url);
    assert.ok(landed.leftTo, `back to the app after the new sign-in (${landed.status})`);
    const claims = (await exchange(config, fresh, landed.leftTo)).claims()!;
    assert.equal(claims.sub, sub);
    assert.ok(claims.auth_time! >= signedInAt, `auth_time ${claims.auth_time} is the new sign-in's`);
  });

  test('prompt=none without a session: the app gets login_required with its state and the issuer', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t));
    const authorization = await authorizationRequest(config, { prompt: 'none' });
    const refused = await new CookieBrowser(t.base).navigate(authorization.url.href);
    assert.ok(refused.leftTo, 'prompt=none never shows a page');
    assert.equal(refused.leftTo.searchParams.get('error'), 'login_required');
    assert.equal(refused.leftTo.searchParams.get('state'), authorization.state);
    assert.equal(refused.leftTo.searchParams.get('iss'), t.issuer);
    assert.equal(refused.leftTo.searchParams.get('code'), null);
  });

  test('prompt=none once signed in through the provider: consent_required for a client not agreed to, a code for one agreed to', async () => {
    const t = apps.b;
    const user = newUser();
    const { id } = await register(t, user);
    const agreed = await relyingParty(t, await addClient(t));
    const unknown = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    await authorize(browser, agreed);

    const unasked = await browser.navigate(
      (await authorizationRequest(unknown, { prompt: 'none' })).url.href,
    );
    assert.ok(unasked.leftTo);
    assert.equal(unasked.leftTo.searchParams.get('error'), 'consent_required');

    const silent = await authorizationRequest(agreed, { prompt: 'none' });
    const landed = await browser.navigate(silent.url.href);
    assert.ok(landed.leftTo);
    assert.equal((await exchange(agreed, silent, landed.leftTo)).claims()!.sub, id.toString());
  });

  test('prompt=none with a Usher session the provider has not seen yet: the session stands, as it does for a page', async () => {
    const t = apps.b;
    const user = newUser();
    const { id } = await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    // Consent given from another browser of the same person: only the login is in question here.
    await authorize(await signedInBrowser(t, user), config);
    const silent = await authorizationRequest(config, { prompt: 'none' });
    const landed = await browser.navigate(silent.url.href);
    assert.ok(landed.leftTo);
    assert.equal(
      landed.leftTo.searchParams.get('error'),
      null,
      'the person is signed in to Usher in this browser',
    );
    assert.equal((await exchange(config, silent, landed.leftTo)).claims()!.sub, id.toString());
  });

  test("signing out of Usher ends the provider's session: the next authorization shows the login page", async () => {
    const t = apps.b;
    const user = newUser();
    await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    await authorize(browser, config);
    assert.equal((await browser.postJson('/api/signout', {})).status, 204);

    const silent = await browser.navigate((await authorizationRequest(config, { prompt: 'none' })).url.href);
    assert.equal(silent.leftTo?.searchParams.get('error'), 'login_required');
    await isLoginPage(browser, await browser.navigate((await authorizationRequest(config)).url.href));
  });

  test("the provider's session follows the Usher session's person: another person signed in is not signed out and gets their own tokens", async () => {
    const t = apps.b;
    const first = newUser();
    await register(t, first);
    const second = newUser();
    const { id: secondId } = await register(t, second);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, first);
    await authorize(browser, config);
    assert.equal((await browser.postJson('/api/signout', {})).status, 204);
    assert.equal((await browser.signIn(second)).status, 200);

    const authorization = await authorizationRequest(config);
    // The provider ends its session of the first person (its own self-submitting form) and goes on.
    const page = await autoSubmit(browser, await browser.navigate(authorization.url.href));
    assert.equal(
      (await browser.fetch('/api/session')).status,
      200,
      "the second person's Usher session goes on",
    );
    assert.equal(page.status, 200, page.body);
    const details = await interactionDetails(browser, page);
    assert.equal(
      details.prompt,
      'consent',
      "the second person has not agreed to this client; the first's grant is not theirs",
    );
    assert.equal(details.signedInAs, second.email);
    const landed = await answerConsent(browser, page, 'allow');
    assert.ok(landed.leftTo);
    assert.equal((await exchange(config, authorization, landed.leftTo)).claims()!.sub, secondId.toString());
  });

  test('RP-initiated logout: the confirm form signs out of the provider and of Usher, back to the post-logout URI', async () => {
    const t = apps.b;
    const user = newUser();
    await register(t, user);
    const config = await relyingParty(t, await addClient(t, { name: 'Notes' }));
    const browser = await signedInBrowser(t, user);
    const usherCookie = browser.jar.get('usher_session')!;
    const tokens = await authorize(browser, config);
    const state = client.randomState();
    const endSession = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: POST_LOGOUT_URI,
      state,
    });

    const confirm = await browser.navigate(endSession.href);
    assert.equal(confirm.status, 200, confirm.body);
    assert.match(confirm.body, /Sign out of Notes\?/);
    const form = logoutForm(confirm.body);
    assert.equal(new URL(form.action).pathname, '/oidc/session/end/confirm');
    const out = await browser.submitForm(form.action, { xsrf: form.xsrf, logout: 'yes' });
    assert.ok(out.leftTo, `sent on to the app (${out.status})`);
    assert.equal(`${out.leftTo.origin}${out.leftTo.pathname}`, POST_LOGOUT_URI);
    assert.equal(out.leftTo.searchParams.get('state'), state);

    const old = await fetch(`${t.base}/api/session`, { headers: { cookie: `usher_session=${usherCookie}` } });
    assert.equal(old.status, 401, 'the Usher session itself ended, not only its cookie');
    assert.equal(browser.jar.has('usher_session'), false, 'and the cookie is cleared');
    await isLoginPage(browser, await browser.navigate((await authorizationRequest(config)).url.href));
  });

  test('RP-initiated logout answered "stay signed in": back to the app, the Usher session goes on', async () => {
    const t = apps.b;
    const user = newUser();
    await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    const tokens = await authorize(browser, config);
    const endSession = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: POST_LOGOUT_URI,
    });
    const form = logoutForm((await browser.navigate(endSession.href)).body);
    const out = await browser.submitForm(form.action, { xsrf: form.xsrf });
    assert.equal(out.leftTo && `${out.leftTo.origin}${out.leftTo.pathname}`, POST_LOGOUT_URI);
    assert.equal((await browser.fetch('/api/session')).status, 200);
  });

  test('the confirm form needs its xsrf token: without it nobody is signed out', async () => {
    const t = apps.b;
    const user = newUser();
    await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    const tokens = await authorize(browser, config);
    const endSession = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: POST_LOGOUT_URI,
    });
    const form = logoutForm((await browser.navigate(endSession.href)).body);
    const forged = await browser.submitForm(form.action, { xsrf: 'forged', logout: 'yes' });
    assert.equal(forged.leftTo, undefined);
    assert.equal(forged.status, 400);
    assert.equal((await browser.fetch('/api/session')).status, 200);
  });
});
