// Silent sign-in (prompt=none) from a browser that has a Usher session but has never been through
// the provider: the Usher session stands for the provider's login at once, for a first-party
// client, and for a third-party one only once its consent is remembered.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  addClient,
  answerConsent,
  authorizationRequest,
  CookieBrowser,
  exchange,
  type OidcTestApp,
  relyingParty,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

describeEachStore('OpenID Connect: prompt=none with a Usher session', (store) => {
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'b');
  });
  after(() => t.close());
  test('prompt=none with a Usher session, first-party: silent', async () => {
    const registered = await addClient(t, { firstParty: true });
    const config = await relyingParty(t, registered);
    const user = newUser();
    await register(t, user);
    const browser = new CookieBrowser(t.base);
    await browser.signIn(user);
    const authorization = await authorizationRequest(config, { prompt: 'none' });
    const landed = await browser.navigate(authorization.url.href);
    assert.ok(landed.leftTo, landed.body);
    assert.equal(landed.leftTo.searchParams.get('error'), null, landed.leftTo.href);
    const tokens = await exchange(config, authorization, landed.leftTo);
    assert.deepEqual(tokens.claims()!.amr, ['pwd']);
  });
  test('third party: consent once, then prompt=none silent', async () => {
    const registered = await addClient(t);
    const config = await relyingParty(t, registered);
    const user = newUser();
    await register(t, user);
    const browser = new CookieBrowser(t.base);
    await browser.signIn(user);
    const a1 = await authorizationRequest(config, { prompt: 'none' });
    const l1 = await browser.navigate(a1.url.href);
    assert.equal(l1.leftTo?.searchParams.get('error'), 'consent_required');
    const a2 = await authorizationRequest(config);
    const page = await browser.navigate(a2.url.href);
    const l2 = await answerConsent(browser, page, 'allow');
    await exchange(config, a2, l2.leftTo!);
    const browser2 = new CookieBrowser(t.base);
    await browser2.signIn(user);
    const a3 = await authorizationRequest(config, { prompt: 'none' });
    const l3 = await browser2.navigate(a3.url.href);
    assert.equal(l3.leftTo?.searchParams.get('error'), null, l3.leftTo?.href);
    await exchange(config, a3, l3.leftTo!);
  });
});
