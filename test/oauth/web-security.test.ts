// The callback's security controls, each with a test that fails if the control goes (CONTRACT
// "Sign in with a provider"): the state (single-use, server-side, 10 minutes), its binding to the
// browser (the usher_oauth cookie: login CSRF and session fixation), RFC 9207's iss (mix-up), the
// PKCE verifier and redirect URI sent at the code exchange, and the ID token's checks (signature,
// alg, aud, exp, nonce, iss), each broken on purpose on the token's way out of the provider; a
// hanging or unreachable provider costs an OAUTH_FAILED redirect within OAUTH_TIMEOUT_SECONDS.
// The provider is real (panva's oidc-provider), driven over HTTP; Usher listens at its PUBLIC_URL.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { startApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/mail.ts';
import { type IdTokenTamper, startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  assertInvalidState,
  assertRefused,
  assertSignedIn,
  Browser,
  listeningUsher,
  oauthSettings,
  PROVIDER,
  providerPerson,
  TIMEOUT_SECONDS,
  type Usher,
} from './support.ts';

const MINUTE = 60_000;

describeEachStore('Provider sign-in: the callback’s checks', (store) => {
  let provider: TestOidcProvider;
  let usher: Usher;
  /** An app whose clock the test moves (the state's 10 minutes). */
  let aged: Usher;
  let offset = 0;
  before(async () => {
    provider = await startOidcProvider();
    usher = await listeningUsher(store, 'b', provider);
    aged = await listeningUsher(store, 'a', provider, { options: { clock: () => Date.now() + offset } });
  });
  after(async () => {
    await usher?.t.close();
    await aged?.t.close();
    await provider?.close();
  });

  const userCount = async () => Number((await usher.t.get('/api/users?size=1')).headers['x-total-count']);

  /** Start and the provider's pages in `browser`; the callback URL is not visited yet. */
  async function upToCallback(browser: Browser, at: Usher = usher, login = providerPerson(provider).login) {
    const start = await browser.start(at, { redirectTo: '/account' });
    assert.equal(start.status, 302, await start.text());
    const authorization = new URL(start.headers.get('location')!);
    const { location } = await provider.authorize(authorization.href, { login, jar: browser.jar });
    return { authorization, callbackUrl: new URL(location) };
  }

  test('the state is single-use: the same callback URL a second time is 400 INVALID_TOKEN, no redirect', async () => {
    const browser = new Browser();
    const { callbackUrl } = await upToCallback(browser);
    const first = await browser.callback(usher, callbackUrl);
    assert.equal(first.callback.status, 303);
    assert.ok(first.session);
    await assertInvalidState(await browser.get(callbackUrl.href));
  });

  test('unknown, missing or made-up state: 400 INVALID_TOKEN, also with an error from the provider', async () => {
    const browser = new Browser();
    await browser.start(usher); // the browser has a binding cookie: the state itself is what is wrong
    for (const query of [
      'code=abc&state=not-a-state',
      'code=abc',
      '',
      'error=access_denied&state=not-a-state',
      `code=abc&state=${'A'.repeat(43)}`,
    ])
      await assertInvalidState(await browser.get(`${usher.callback}?${query}`));
  });

  test('the browser binding: a callback URL taken to a browser without the usher_oauth cookie is 400 INVALID_TOKEN, and the state is spent', async () => {
    const victim = new Browser();
    const { callbackUrl } = await upToCallback(victim);
    const stranger = new Browser();
    await assertInvalidState(await stranger.get(callbackUrl.href));
    assert.equal(stranger.session(usher), undefined);
    // The state was spent by that try: the right browser cannot use it after.
    await assertInvalidState(await victim.get(callbackUrl.href));
  });

  test('login CSRF: an attacker’s callback URL in a victim browser that has its own usher_oauth cookie is 400 INVALID_TOKEN', async () => {
    const attacker = new Browser();
    const attackerPerson = providerPerson(provider);
    const { callbackUrl } = await upToCallback(attacker, usher, attackerPerson.login);
    const victim = new Browser();
    const ownStart = await victim.start(usher);
    assert.equal(ownStart.status, 302, 'the victim has a binding cookie of its own');
    await assertInvalidState(await victim.get(callbackUrl.href));
    assert.equal(victim.session(usher), undefined, 'the victim is not signed in as the attacker');
    // That try spent the state: not even the attacker's own browser can use it now.
    await assertInvalidState(await attacker.get(callbackUrl.href));
  });

  test('the state lives 10 minutes: a callback 11 minutes after the start is 400 INVALID_TOKEN', async () => {
    const browser = new Browser();
    const { callbackUrl } = await upToCallback(browser, aged);
    offset += 11 * MINUTE;
    try {
      await assertInvalidState(await browser.get(callbackUrl.href));
    } finally {
      offset -= 11 * MINUTE;
    }
  });

  test('RFC 9207: an iss that is not the provider’s is OAUTH_FAILED, and the code is never sent to the token endpoint', async () => {
    const browser = new Browser();
    const { callbackUrl } = await upToCallback(browser);
    assert.equal(callbackUrl.searchParams.get('iss'), provider.issuer, 'the provider sends iss');
    const before = provider.tokenRequests.length;
    callbackUrl.searchParams.set('iss', 'http://127.0.0.2:1/evil');
    await assertRefused(usher, await browser.callback(usher, callbackUrl), 'OAUTH_FAILED');
    assert.equal(provider.tokenRequests.length, before, 'no code exchange for a mixed-up answer');
  });

  test('the code exchange sends the PKCE verifier of this state and the exact redirect URI', async () => {
    const browser = new Browser();
    const { authorization, callbackUrl } = await upToCallback(browser);
    const before = provider.tokenRequests.length;
    await assertSignedIn(usher, await browser.callback(usher, callbackUrl));
    const exchange = provider.tokenRequests.slice(before);
    assert.equal(exchange.length, 1);
    const params = exchange[0]!.params;
    assert.equal(params.grant_type, 'authorization_code');
    assert.equal(params.code, callbackUrl.searchParams.get('code'));
    assert.equal(params.redirect_uri, usher.callback);
    assert.equal(
      createHash('sha256')
        .update(params.code_verifier ?? '')
        .digest('base64url'),
      authorization.searchParams.get('code_challenge'),
      'the verifier matches the challenge sent at the start',
    );
    assert.notEqual(exchange[0]!.auth, 'none', 'the client authenticates');
  });

  test('code injection: a code from another flow, brought with this browser’s state, is OAUTH_FAILED (PKCE and nonce)', async () => {
    const victim = new Browser();
    const { callbackUrl: victims } = await upToCallback(victim);
    const attacker = new Browser();
    const { callbackUrl: attackers } = await upToCallback(attacker);
    const before = await userCount();
    const injected = new URL(victims);
    injected.searchParams.set('code', attackers.searchParams.get('code')!);
    await assertRefused(usher, await victim.callback(usher, injected), 'OAUTH_FAILED');
    assert.equal(await userCount(), before);
  });

  test('an error other than access_denied from the provider is OAUTH_FAILED', async () => {
    const browser = new Browser();
    const { callbackUrl } = await upToCallback(browser);
    callbackUrl.searchParams.delete('code');
    callbackUrl.searchParams.set('error', 'temporarily_unavailable');
    await assertRefused(usher, await browser.callback(usher, callbackUrl), 'OAUTH_FAILED');
  });

  /** A whole flow with the ID token rewritten by `tamper` on its way out of the provider. */
  async function withIdToken(tamper: IdTokenTamper, login = providerPerson(provider).login) {
    provider.tamperIdToken(tamper);
    try {
      return await new Browser().flow(usher, provider, { login });
    } finally {
      provider.tamperIdToken(undefined);
    }
  }
  const now = () => Math.floor(Date.now() / 1000);

  test('the ID token re-signed unchanged by the provider’s key still signs in (the tampering below is all that differs)', async () => {
    await assertSignedIn(usher, await withIdToken((claims) => ({ claims })));
  });

  test('an ID token without the email: the email comes from the provider’s userinfo, and the account is made with it', async () => {
    const person = providerPerson(provider, { email_verified: true });
    const flow = await withIdToken(
      ({ email: _e, email_verified: _v, ...claims }) => ({ claims }),
      person.login,
    );
    const token = await assertSignedIn(usher, flow);
    const me = await usher.t.inject({
      method: 'GET',
      url: '/api/session',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(me.json().user.email, person.email);
    assert.equal(me.json().user.emailVerified, true, 'email_verified from userinfo');
  });

  const broken: [string, IdTokenTamper][] = [
    [
      'signed with a foreign key under the provider’s kid',
      (claims) => ({ claims, sign: { key: 'foreign' } }),
    ],
    ['unsigned (alg none)', (claims) => ({ claims, sign: { alg: 'none' } })],
    ['for another audience', (claims) => ({ claims: { ...claims, aud: 'someone-else' } })],
    ['expired', (claims) => ({ claims: { ...claims, iat: now() - 7200, exp: now() - 3600 } })],
    ['with another nonce', (claims) => ({ claims: { ...claims, nonce: 'not-the-nonce-usher-sent' } })],
    ['without the nonce', (claims) => ({ claims: { ...claims, nonce: undefined } })],
    ['from another issuer', (claims) => ({ claims: { ...claims, iss: 'http://127.0.0.2:1' } })],
  ];
  for (const [what, tamper] of broken) {
    test(`an ID token ${what}: OAUTH_FAILED, no session, no account`, async () => {
      const before = await userCount();
      const flow = await withIdToken((claims) => {
        const out = tamper(claims);
        const cleaned = { ...out.claims };
        for (const k of Object.keys(cleaned)) if (cleaned[k] === undefined) delete cleaned[k];
        return { ...out, claims: cleaned };
      });
      await assertRefused(usher, flow, 'OAUTH_FAILED');
      assert.equal(await userCount(), before);
    });
  }

  test(`a provider that hangs at the token endpoint: OAUTH_FAILED within about OAUTH_TIMEOUT_SECONDS (${TIMEOUT_SECONDS} s), not a stuck request`, async () => {
    const browser = new Browser();
    const { callbackUrl } = await upToCallback(browser);
    provider.hang('token');
    try {
      const started = Date.now();
      const result = await browser.callback(usher, callbackUrl);
      const took = Date.now() - started;
      await assertRefused(usher, result, 'OAUTH_FAILED');
      assert.ok(took >= TIMEOUT_SECONDS * 1000 - 200, `it waited for the provider (${took} ms)`);
      // Bounded far above the setting, so a loaded machine cannot fail it, and far below the
      // library's own 30 s default, which is what an unapplied setting would leave.
      assert.ok(took < 20_000, `it gave up on the setting's time, not the library's 30 s (${took} ms)`);
    } finally {
      provider.hang(false);
    }
  });

  test('a provider that went away after the start: the callback is OAUTH_FAILED, quickly', async () => {
    const gone = await startOidcProvider();
    const app = await listeningUsher(store, 'b', gone);
    try {
      const browser = new Browser();
      const start = await browser.start(app);
      const { location } = await gone.authorize(start.headers.get('location')!, {
        login: providerPerson(gone).login,
        jar: browser.jar,
      });
      await gone.close();
      const started = Date.now();
      await assertRefused(app, await browser.callback(app, location), 'OAUTH_FAILED');
      // A refused connection fails at once; the bound only tells it from the library's 30 s.
      assert.ok(Date.now() - started < 20_000);
    } finally {
      await app.t.close();
    }
  });

  test('an issuer that does not answer at start: the app starts (with a warning naming the provider) and the start sends the browser back with OAUTH_FAILED', async () => {
    const port = await freePort();
    const app = await startApp(store, 'b', {
      oauth: oauthSettings(`http://127.0.0.2:${port}`),
      publicUrl: 'http://127.0.0.1:9',
    });
    try {
      const res = await app.get('/api/oauth/test/start?redirectTo=%2Fhere');
      assert.equal(res.statusCode, 303, res.body);
      assert.equal(
        new URL(String(res.headers.location), 'http://127.0.0.1:9').href,
        'http://127.0.0.1:9/here?error=OAUTH_FAILED',
      );
      // The discovery at start runs in the background: its warning comes when it gives up.
      await waitUntil(
        () =>
          app.logs.some(
            (l) =>
              /"level":40/.test(l) &&
              l.includes(`"provider":"${PROVIDER}"`) &&
              l.includes(`127.0.0.2:${port}`),
          ),
        (TIMEOUT_SECONDS + 3) * 1000,
        'a warning naming the provider and its issuer',
      );
    } finally {
      await app.close();
    }
  });
});
