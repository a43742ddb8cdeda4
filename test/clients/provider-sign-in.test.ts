// @usher/client's provider sign-in helpers against a real Usher and a real OpenID Connect provider
// (panva's oidc-provider on 127.0.0.2, test/helpers/oidc-provider.ts): the start address a page
// navigates to, reading the landing (error or second-factor ticket), finishing with a code, and a
// native app's sign-in with an ID token, in both profiles.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUsherClient } from '../../clients/typescript/src/index.ts';
import type { Profile } from '../../src/config.ts';
import { newUser, register } from '../helpers/app.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt } from '../helpers/totp.ts';
import {
  Browser,
  CLIENT_ID,
  listeningUsher,
  PROFILES,
  PROVIDER,
  providerPerson,
  type Usher,
} from '../oauth/support.ts';

describeEachStore('@usher/client: provider sign-in', (store) => {
  let provider: TestOidcProvider;
  const apps = {} as Record<Profile, Usher>;
  before(async () => {
    provider = await startOidcProvider();
    for (const profile of PROFILES) apps[profile] = await listeningUsher(store, profile, provider);
  });
  after(async () => {
    for (const profile of PROFILES) await apps[profile]?.t.close();
    await provider?.close();
  });

  test('providerSignInUrl is the start route a page navigates to; it answers 302 to the provider', async () => {
    const usher = apps.b;
    const client = createUsherClient({ profile: 'b', baseUrl: usher.base });
    const url = client.providerSignInUrl(PROVIDER, { redirectTo: '/account', intent: 'signin' });
    assert.equal(url, `${usher.base}/api/oauth/${PROVIDER}/start?redirectTo=%2Faccount&intent=signin`);
    assert.equal(client.providerSignInUrl(PROVIDER), `${usher.base}/api/oauth/${PROVIDER}/start`);
    const res = await fetch(url, { redirect: 'manual' });
    assert.equal(res.status, 302);
    assert.equal(new URL(String(res.headers.get('location'))).origin, provider.issuer);
  });

  test('readProviderLanding reads ?error= and #second-factor=, and nothing from a plain address', () => {
    const client = createUsherClient({ profile: 'a' });
    assert.deepEqual(client.readProviderLanding('https://app.example/account?error=ACCOUNT_EXISTS'), {
      error: 'ACCOUNT_EXISTS',
    });
    assert.deepEqual(client.readProviderLanding('/account#second-factor=abc_DEF-1'), { ticket: 'abc_DEF-1' });
    assert.deepEqual(client.readProviderLanding(new URL('https://app.example/account')), {});
  });

  for (const profile of PROFILES) {
    test(`[${profile}] signInWithIdToken keeps the token (whoAmI answers); a bad token is 401 SIGNIN_FAILED and a refusal its 409 code`, async () => {
      const usher = apps[profile];
      const client = createUsherClient({ profile, baseUrl: usher.base, session: 'token' });
      const person = providerPerson(provider);
      const idToken = await provider.signIdToken({
        sub: person.sub,
        aud: CLIENT_ID,
        email: person.email,
        email_verified: true,
        name: person.name,
      });
      const signedIn = await client.signInWithIdToken({ provider: PROVIDER, idToken });
      assert.ok(signedIn.ok, JSON.stringify(signedIn.ok ? '' : signedIn.error));
      assert.equal(signedIn.data.email, person.email);
      assert.ok(client.token, 'the token is kept');
      const me = await client.whoAmI();
      assert.ok(me.ok);
      assert.equal(me.data.user.email, person.email);

      const forged = await createUsherClient({
        profile,
        baseUrl: usher.base,
        session: 'token',
      }).signInWithIdToken({
        provider: PROVIDER,
        idToken: await provider.signIdToken({ sub: person.sub, aud: 'someone-else' }),
      });
      assert.ok(!forged.ok);
      assert.equal(forged.status, 401);
      assert.equal(forged.error, 'SIGNIN_FAILED');

      const owner = await register(usher.t, newUser()); // unverified: no link by email
      const taken = await createUsherClient({
        profile,
        baseUrl: usher.base,
        session: 'token',
      }).signInWithIdToken({
        provider: PROVIDER,
        idToken: await provider.signIdToken({
          sub: providerPerson(provider).sub,
          aud: CLIENT_ID,
          email: owner.email,
          email_verified: true,
        }),
      });
      assert.ok(!taken.ok);
      assert.equal(taken.status, 409);
      assert.equal(taken.error, 'ACCOUNT_EXISTS');
    });

    test(`[${profile}] a ticket from a provider sign-in (TOTP in force) is finished with finishSignIn and a code`, async () => {
      const usher = apps[profile];
      const person = providerPerson(provider);
      const browser = new Browser();
      const first = await browser.flow(usher, provider, { login: person.login });
      assert.equal(first.callback.status, 303);
      const session = browser.session(usher)!;
      const auth = { authorization: `Bearer ${session}`, 'content-type': 'application/json' };
      // An account made by a provider has no password: TOTP set-up asks for none then.
      const setup = await usher.t.inject({
        method: 'POST',
        url: '/api/mfa/totp',
        headers: auth,
        payload: '{}',
      });
      assert.equal(setup.statusCode, 200, setup.body);
      const { secret } = setup.json() as { secret: string };
      const confirm = await usher.t.inject({
        method: 'POST',
        url: '/api/mfa/totp/confirm',
        headers: auth,
        payload: JSON.stringify({ code: totpAt(secret, Date.now()) }),
      });
      assert.equal(confirm.statusCode, 200, confirm.body);

      const again = await new Browser().flow(usher, provider, { login: person.login });
      const client = createUsherClient({ profile, baseUrl: usher.base });
      const landing = client.readProviderLanding(String(again.location));
      assert.ok(landing.ticket, `a ticket: ${again.location}`);
      const done = await client.finishSignIn(landing.ticket, totpAt(secret, Date.now() + STEP_MS));
      assert.ok(done.ok, JSON.stringify(done.ok ? '' : done.error));
      assert.equal(done.data.email, person.email);
    });
  }
});
