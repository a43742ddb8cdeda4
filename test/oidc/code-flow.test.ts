// The authorization code flow end to end: openid-client as the relying party, a browser made of
// fetch with Usher's session cookie, jose as the API that receives the access token. Confidential
// and public clients, PKCE, consent (remembered per scope set; never for a first-party client),
// amr and auth_time from how the person signed in, and userinfo with the opaque access token.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as jose from 'jose';
import * as client from 'openid-client';
import type { Profile } from '../../src/config.ts';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';
import {
  API,
  addClient,
  answerConsent,
  authorizationRequest,
  authorize,
  authorizeTo,
  CookieBrowser,
  exchange,
  interactionDetails,
  type OidcTestApp,
  REDIRECT_URI,
  relyingParty,
  remoteKeys,
  SkewedClock,
  signedInBrowser,
  startOidcApp,
  turnOnTotp,
} from '../helpers/usher-oidc.ts';

describeEachStore('OpenID Connect code flow', (store) => {
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

  for (const profile of ['a', 'b'] as const) {
    test(`profile ${profile}: a confidential third-party client, consent, ID token, JWT access token`, async () => {
      const t = apps[profile];
      const registered = await addClient(t);
      const config = await relyingParty(t, registered);
      const user = newUser();
      const { id } = await register(t, user);
      const browser = new CookieBrowser(t.base);
      assert.equal((await browser.signIn(user)).status, 200);
      const authorization = await authorizationRequest(config, { resource: API });
      const page = await browser.navigate(authorization.url.href);
      assert.equal(page.status, 200, page.body);
      assert.match(page.url, /\/oidc\/interaction\/[A-Za-z0-9_-]+$/);
      const landed = await answerConsent(browser, page, 'allow');
      assert.ok(landed.leftTo, 'the browser is sent back to the app');
      const tokens = await exchange(config, authorization, landed.leftTo);
      const claims = tokens.claims()!;
      assert.equal(claims.sub, id.toString());
      assert.equal(claims.email, user.email);
      assert.deepEqual(claims.amr, ['pwd']);
      assert.equal(typeof claims.auth_time, 'number');
      const { payload, protectedHeader } = await jose.jwtVerify(tokens.access_token, remoteKeys(t), {
        issuer: t.issuer,
        audience: API,
        typ: 'at+jwt',
      });
      assert.equal(protectedHeader.alg, 'ES256');
      assert.equal(payload.sub, id.toString());
      assert.equal(payload.client_id, registered.clientId);
    });

    test(`profile ${profile}: a public client (no secret, PKCE) signs in and gets its tokens`, async () => {
      const t = apps[profile];
      const registered = await addClient(t, { public: true });
      assert.equal(registered.clientSecret, undefined);
      const config = await relyingParty(t, registered);
      const user = newUser();
      const { id } = await register(t, user);
      const browser = await signedInBrowser(t, user);
      const authorization = await authorizationRequest(config);
      const page = await browser.navigate(authorization.url.href);
      assert.equal(page.status, 200, page.body);
      assert.equal((await interactionDetails(browser, page)).prompt, 'consent');
      const landed = await answerConsent(browser, page, 'allow');
      assert.ok(landed.leftTo);
      const tokens = await exchange(config, authorization, landed.leftTo);
      assert.equal(tokens.claims()!.sub, id.toString());
      assert.equal(tokens.claims()!.aud, registered.clientId);
      assert.equal(tokens.token_type.toLowerCase(), 'bearer');
      assert.equal(tokens.refresh_token, undefined, 'no offline_access, no refresh token');
    });
  }

  test('PKCE is required: an authorization without a code challenge goes back to the app as invalid_request', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t, { firstParty: true }));
    const user = newUser();
    await register(t, user);
    const browser = await signedInBrowser(t, user);
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid', state });
    const stop = await browser.navigate(url.href);
    assert.ok(stop.leftTo, stop.body);
    assert.equal(stop.leftTo.searchParams.get('error'), 'invalid_request');
    assert.equal(stop.leftTo.searchParams.get('state'), state);
    assert.equal(stop.leftTo.searchParams.get('code'), null);
  });

  test('PKCE: a code is redeemed only with its own verifier', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t, { public: true }));
    const user = newUser();
    await register(t, user);
    const browser = await signedInBrowser(t, user);
    const { authorization, callback } = await authorizeTo(browser, config);
    const wrong = { ...authorization, verifier: client.randomPKCECodeVerifier() };
    await assert.rejects(exchange(config, wrong, callback), { error: 'invalid_grant' });
  });

  test('consent for a third-party client: asked once per scope set, again for a new scope', async () => {
    const t = apps.b;
    const registered = await addClient(t, { name: 'Photo printer' });
    const config = await relyingParty(t, registered);
    const user = newUser();
    const { id } = await register(t, user);
    const browser = await signedInBrowser(t, user);

    const first = await authorizationRequest(config, { scope: 'openid email' });
    const page = await browser.navigate(first.url.href);
    assert.equal(page.status, 200, page.body);
    const details = await interactionDetails(browser, page);
    assert.equal(details.prompt, 'consent');
    assert.equal(details.client.name, 'Photo printer');
    assert.deepEqual([...details.scopes].sort(), ['email', 'openid']);
    assert.equal(details.signedInAs, user.email);
    const landed = await answerConsent(browser, page, 'allow');
    assert.ok(landed.leftTo);
    assert.equal((await exchange(config, first, landed.leftTo)).claims()!.sub, id.toString());

    const again = await authorizationRequest(config, { scope: 'openid email' });
    const straight = await browser.navigate(again.url.href);
    assert.ok(straight.leftTo, 'the same scopes again: no consent page');
    assert.equal((await exchange(config, again, straight.leftTo)).claims()!.sub, id.toString());

    // Remembered by Usher for the person, not only in this browser's provider session.
    const elsewhere = await signedInBrowser(t, user);
    const fromElsewhere = await authorizationRequest(config, { scope: 'email openid' });
    const notAsked = await elsewhere.navigate(fromElsewhere.url.href);
    assert.ok(notAsked.leftTo, 'another browser of the same person: no consent page either');
    assert.equal((await exchange(config, fromElsewhere, notAsked.leftTo)).claims()!.sub, id.toString());

    const more = await authorizationRequest(config, { scope: 'openid email profile' });
    const asked = await browser.navigate(more.url.href);
    assert.equal(asked.status, 200, 'a new scope: asked again');
    assert.equal(asked.leftTo, undefined);
    const moreDetails = await interactionDetails(browser, asked);
    assert.equal(moreDetails.prompt, 'consent');
    assert.deepEqual(moreDetails.scopes, ['profile'], 'only what was not agreed to before');
    const done = await answerConsent(browser, asked, 'allow');
    assert.ok(done.leftTo);
    const tokens = await exchange(config, more, done.leftTo);
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, id.toString())).name, user.name);
  });

  test('consent is per client: another third-party client is asked although the person agreed for the first', async () => {
    const t = apps.b;
    const user = newUser();
    await register(t, user);
    const browser = await signedInBrowser(t, user);
    const one = await relyingParty(t, await addClient(t));
    const first = await authorizationRequest(one);
    const landed = await answerConsent(browser, await browser.navigate(first.url.href), 'allow');
    assert.ok(landed.leftTo);
    const other = await relyingParty(t, await addClient(t));
    const page = await browser.navigate((await authorizationRequest(other)).url.href);
    assert.equal(page.status, 200);
    assert.equal((await interactionDetails(browser, page)).prompt, 'consent');
  });

  test('consent denied: the app gets error=access_denied with its state and the issuer, and no code', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t));
    const user = newUser();
    await register(t, user);
    const browser = await signedInBrowser(t, user);
    const authorization = await authorizationRequest(config);
    const page = await browser.navigate(authorization.url.href);
    assert.equal(page.status, 200);
    const denied = await answerConsent(browser, page, 'deny');
    assert.ok(denied.leftTo);
    assert.equal(`${denied.leftTo.origin}${denied.leftTo.pathname}`, REDIRECT_URI);
    assert.equal(denied.leftTo.searchParams.get('error'), 'access_denied');
    assert.equal(denied.leftTo.searchParams.get('state'), authorization.state);
    assert.equal(denied.leftTo.searchParams.get('iss'), t.issuer);
    assert.equal(denied.leftTo.searchParams.get('code'), null);
    await assert.rejects(exchange(config, authorization, denied.leftTo), { error: 'access_denied' });

    // Nothing was remembered: the next authorization asks again.
    const next = await browser.navigate((await authorizationRequest(config)).url.href);
    assert.equal(next.status, 200);
    assert.equal((await interactionDetails(browser, next)).prompt, 'consent');
  });

  test('a first-party client never asks consent, whatever the scopes', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t, { firstParty: true }));
    const user = newUser();
    const { id } = await register(t, user);
    const browser = await signedInBrowser(t, user);
    for (const scope of ['openid', 'openid email profile']) {
      const authorization = await authorizationRequest(config, { scope });
      const stop = await browser.navigate(authorization.url.href);
      assert.ok(stop.leftTo, `${scope}: straight back to the app (${stop.status})`);
      assert.equal((await exchange(config, authorization, stop.leftTo)).claims()!.sub, id.toString());
    }
  });

  test('amr and auth_time: a password sign-in is pwd, with auth_time the sign-in time', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t));
    const user = newUser();
    await register(t, user);
    const before = Math.floor(Date.now() / 1000);
    const browser = await signedInBrowser(t, user);
    const after = Math.ceil(Date.now() / 1000);
    const claims = (await authorize(browser, config)).claims()!;
    assert.deepEqual(claims.amr, ['pwd']);
    assert.ok(claims.auth_time! >= before && claims.auth_time! <= after, `auth_time ${claims.auth_time}`);
  });

  test('amr: a password and a TOTP code are pwd, otp and mfa', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t));
    const user = newUser();
    await register(t, user);
    const secret = await turnOnTotp(t, user, clock);
    const withoutCode = await new CookieBrowser(t.base).signIn(user);
    assert.equal(withoutCode.status, 401, 'TOTP is in force: the password alone is not enough');
    const browser = await signedInBrowser(t, user, totpAt(secret, clock.now()));
    const claims = (await authorize(browser, config)).claims()!;
    assert.deepEqual(claims.amr, ['pwd', 'otp', 'mfa']);
  });

  test('userinfo with the opaque access token: the claims of the scopes granted', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t));
    const user = newUser();
    const { id } = await register(t, user);
    const browser = await signedInBrowser(t, user);
    const sub = id.toString();
    const tokensFor = (scope: string) => authorize(browser, config, { scope });

    const all = await tokensFor('openid email profile');
    assert.throws(() => jose.decodeJwt(all.access_token), 'without a resource the access token is opaque');
    assert.deepEqual(await client.fetchUserInfo(config, all.access_token, sub), {
      sub,
      email: user.email,
      email_verified: false,
      name: user.name,
      roles: [],
    });

    const emailOnly = await tokensFor('openid email');
    assert.deepEqual(await client.fetchUserInfo(config, emailOnly.access_token, sub), {
      sub,
      email: user.email,
      email_verified: false,
      roles: [],
    });

    const bare = await tokensFor('openid');
    const info = await client.fetchUserInfo(config, bare.access_token, sub);
    // roles (the application's own, set by admins) come with openid itself.
    assert.deepEqual(info, { sub, roles: [] }, 'no email or profile scope: no email, no name');
  });

  test('userinfo refuses a token it did not issue for it: the ID token, or nothing', async () => {
    const t = apps.b;
    const config = await relyingParty(t, await addClient(t));
    const user = newUser();
    const { id } = await register(t, user);
    const tokens = await authorize(await signedInBrowser(t, user), config);
    await assert.rejects(client.fetchUserInfo(config, tokens.id_token!, id.toString()), (error: unknown) => {
      assert.equal((error as client.WWWAuthenticateChallengeError).status, 401);
      return true;
    });
    const anonymous = await fetch(`${t.issuer}/me`);
    assert.equal(anonymous.status, 401);
  });
});
