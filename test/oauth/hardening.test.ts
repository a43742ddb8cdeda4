// Provider sign-in: the controls added after a review of the first version, against the real
// provider (panva's oidc-provider on 127.0.0.2): a reachable issuer that is not one stops the
// start; a malformed Apple key stops it too; a form-POST answer (Apple's response_mode) goes on as
// a same-origin GET, so the Lax cookies come back; two sign-ins in one browser both finish; a link
// cannot be started by another site; redirectTo's dot segments cannot make a `//host` path; a
// native ID token jose cannot process is a 401 like any bad token.
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { after, before, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { NO_THROTTLE, startApp, type TestApp } from '../helpers/app.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  assertSignedIn,
  Browser,
  CLIENT_ID,
  ENCRYPTION_KEY,
  listeningUsher,
  oauthSettings,
  PROVIDER,
  providerPerson,
  type Usher,
} from './support.ts';

test('OAUTH settings: an Apple key that cannot sign ES256 (not a key, an RSA key) stops the start naming OAUTH_APPLE_PRIVATE_KEY', () => {
  const base = {
    OAUTH_PROVIDERS: 'apple',
    OAUTH_APPLE_CLIENT_ID: 'com.example.web',
    OAUTH_APPLE_TEAM_ID: 'TEAM123456',
    OAUTH_APPLE_KEY_ID: 'KEY1234567',
  };
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  });
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  });
  const apple = loadConfig({ ...base, OAUTH_APPLE_PRIVATE_KEY: String(ec).replaceAll('\n', '\\n') }).oauth
    .providers[0]!;
  assert.equal(apple.issuer, 'https://appleid.apple.com');
  assert.equal(apple.clientSecret, undefined, 'Apple has no static secret');
  for (const bad of [
    String(rsa),
    '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
    'not a key',
  ]) {
    assert.throws(
      () => loadConfig({ ...base, OAUTH_APPLE_PRIVATE_KEY: bad }),
      (error: unknown) => error instanceof ConfigError && error.setting === 'OAUTH_APPLE_PRIVATE_KEY',
    );
  }
});

describeEachStore('Provider sign-in: hardening', (store) => {
  let provider: TestOidcProvider;
  let usher: Usher;
  before(async () => {
    provider = await startOidcProvider();
    usher = await listeningUsher(store, 'b', provider);
  });
  after(async () => {
    await usher?.t.close();
    await provider?.close();
  });

  test('an issuer that answers, but not as one (its discovery is a 404), stops the start with a line naming OAUTH_TEST_ISSUER', async () => {
    await assert.rejects(
      startApp(store, 'b', {
        oauth: oauthSettings(`${provider.issuer}/not-an-issuer`),
        publicUrl: 'http://127.0.0.1:9',
      }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.setting === 'OAUTH_TEST_ISSUER' &&
        error.message.includes(`${provider.issuer}/not-an-issuer`),
    );
  });

  test('a form POST answer goes on as a same-origin GET with only code, state and iss; the sign-in then finishes', async () => {
    const browser = new Browser();
    const person = providerPerson(provider);
    const start = await browser.start(usher);
    const result = await provider.authorize(String(start.headers.get('location')), {
      login: person.login,
      jar: browser.jar,
    });
    const answer = new URL(result.location).searchParams;
    const form = new URLSearchParams(answer);
    form.set('id_token', 'not.kept.here');
    form.set('user', '{"name":{"firstName":"A"}}');
    // As Apple's cross-site form POST arrives: without Usher's Lax cookies.
    const posted = await fetch(usher.callback, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    assert.equal(posted.status, 303, await posted.text());
    const next = new URL(String(posted.headers.get('location')));
    assert.equal(`${next.origin}${next.pathname}`, usher.callback, 'to the GET callback');
    assert.deepEqual(
      [...next.searchParams.keys()].sort(),
      [...answer.keys()].sort(),
      'only the answer’s fields',
    );
    assert.equal(next.searchParams.get('code'), answer.get('code'));
    await assertSignedIn(usher, await browser.callback(usher, next));
  });

  test('two sign-ins started in one browser (two tabs) both finish: the first callback leaves the binding for the second', async () => {
    const browser = new Browser();
    const first = providerPerson(provider);
    const second = providerPerson(provider);
    const starts = [await browser.start(usher), await browser.start(usher)];
    const answers = [];
    for (const [i, person] of [first, second].entries())
      answers.push(
        (
          await provider.authorize(String(starts[i]!.headers.get('location')), {
            login: person.login,
            jar: new Browser().jar,
          })
        ).location,
      );
    await assertSignedIn(usher, await browser.callback(usher, answers[1]!));
    await assertSignedIn(usher, await browser.callback(usher, answers[0]!));
  });

  test('a link started by another site (Sec-Fetch-Site: cross-site or same-site) is 403 FORBIDDEN; from Usher’s own page it starts', async () => {
    const browser = new Browser();
    const person = providerPerson(provider);
    await assertSignedIn(usher, await browser.flow(usher, provider, { login: person.login }));
    const url = `${usher.base}/api/oauth/${PROVIDER}/start?intent=link`;
    for (const site of ['cross-site', 'same-site']) {
      const res = await browser.get(url, { 'sec-fetch-site': site });
      const text = await res.text();
      assert.equal(res.status, 403, `${site}: ${text}`);
      assert.equal(JSON.parse(text).error, 'FORBIDDEN');
      assert.equal(res.headers.get('location'), null);
    }
    for (const site of ['same-origin', 'none']) {
      const res = await browser.get(url, { 'sec-fetch-site': site });
      assert.equal(res.status, 302, `${site}: ${await res.text()}`);
    }
  });

  test('starts are limited per client address (each stores a state): past OAUTH_STARTS_MAX_PER_ADDRESS, 429 TOO_MANY_REQUESTS with Retry-After and nothing stored', async () => {
    const limited = await startApp(store, 'b', {
      oauth: oauthSettings(provider.issuer, { OAUTH_STARTS_MAX_PER_ADDRESS: '3' }),
      publicUrl: 'http://127.0.0.1:9',
    });
    try {
      const start = (address: string) =>
        limited.inject({ method: 'GET', url: `/api/oauth/${PROVIDER}/start`, remoteAddress: address });
      for (let i = 0; i < 3; i++) assert.equal((await start('192.0.2.10')).statusCode, 302);
      const refused = await start('192.0.2.10');
      assert.equal(refused.statusCode, 429, refused.body);
      assert.equal(refused.json().error, 'TOO_MANY_REQUESTS');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal(refused.headers.location, undefined);
      assert.equal((await start('192.0.2.11')).statusCode, 302, 'another address is not held');
    } finally {
      await limited.close();
    }
  });

  test('redirectTo with dot segments that would resolve to a `//host` path, or leave PUBLIC_URL, is 400 VALIDATION_FAILED', async () => {
    for (const redirectTo of ['/..//evil.example', '/%2e%2e//evil.example', '/a/..//evil.example']) {
      const res = await new Browser().start(usher, { redirectTo });
      const text = await res.text();
      assert.equal(res.status, 400, `${redirectTo}: ${text}`);
      assert.equal(JSON.parse(text).error, 'VALIDATION_FAILED');
    }
  });
});

describeEachStore('Unlinking: identities of a provider no longer configured', (store) => {
  let provider: TestOidcProvider;
  before(async () => {
    provider = await startOidcProvider();
  });
  after(() => provider?.close());

  test('an identity of a provider taken out of OAUTH_PROVIDERS cannot sign in, so it does not count: unlinking the last configured one is 409 LAST_SIGNIN_METHOD', async () => {
    const other = {
      OAUTH_PROVIDERS: `${PROVIDER},other`,
      OAUTH_OTHER_CLIENT_ID: CLIENT_ID,
      OAUTH_OTHER_CLIENT_SECRET: 'other-secret',
      OAUTH_OTHER_ISSUER: provider.issuer,
    };
    const settings = {
      publicUrl: 'http://127.0.0.1:9',
      throttle: { ...NO_THROTTLE },
      encryptionKey: ENCRYPTION_KEY,
    };
    const both = await startApp(store, 'b', { ...settings, oauth: oauthSettings(provider.issuer, other) });
    const one = await startApp(store, 'b', { ...settings, oauth: oauthSettings(provider.issuer) });
    try {
      const person = providerPerson(provider);
      const idToken = await provider.signIdToken({
        sub: person.sub,
        aud: CLIENT_ID,
        email: person.email,
        email_verified: true,
      });
      // The account is made through one provider and linked through the other (verified both sides).
      for (const id of [PROVIDER, 'other']) {
        const res = await both.post('/api/sessions/oauth', { provider: id, idToken });
        assert.equal(res.statusCode, 201, res.body);
      }
      const session = (await one.post('/api/sessions/oauth', { provider: PROVIDER, idToken })).json().token;
      const auth = { authorization: `Bearer ${session}` };
      const identities = (await one.inject({ method: 'GET', url: '/api/identities', headers: auth })).json();
      assert.deepEqual(identities.map((i: { provider: string }) => i.provider).sort(), ['other', PROVIDER]);
      const mine = identities.find((i: { provider: string }) => i.provider === PROVIDER);
      const refused = await one.inject({
        method: 'DELETE',
        url: `/api/identities/${mine.id}`,
        headers: auth,
      });
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(refused.json().error, 'LAST_SIGNIN_METHOD');
      // Where `other` is still configured, it is a way in: the unlink goes through.
      const allowed = await both.inject({
        method: 'DELETE',
        url: `/api/identities/${mine.id}`,
        headers: auth,
      });
      assert.equal(allowed.statusCode, 204, allowed.body);
    } finally {
      await both.close();
      await one.close();
    }
  });
});

describeEachStore('Two-step sign-in for an account without a password', (store) => {
  let provider: TestOidcProvider;
  let t: TestApp;
  let now = Date.now();
  before(async () => {
    provider = await startOidcProvider();
    t = await startApp(
      store,
      'b',
      {
        oauth: oauthSettings(provider.issuer),
        publicUrl: 'http://127.0.0.1:9',
        throttle: { ...NO_THROTTLE },
        encryptionKey: ENCRYPTION_KEY,
      },
      { clock: () => now },
    );
  });
  after(async () => {
    await t?.close();
    await provider?.close();
  });

  test('an account made through a provider sets TOTP up (and turns it off) with a sign-in of the last 10 minutes in place of a password; later, 401 REAUTHENTICATION_REQUIRED', async () => {
    now = Date.now();
    const person = providerPerson(provider);
    const idToken = await provider.signIdToken({
      sub: person.sub,
      aud: CLIENT_ID,
      email: person.email,
      email_verified: true,
    });
    const signedIn = await t.post('/api/sessions/oauth', { provider: PROVIDER, idToken });
    assert.equal(signedIn.statusCode, 201, signedIn.body);
    const headers = { authorization: `Bearer ${signedIn.json().token}`, 'content-type': 'application/json' };
    const begin = await t.inject({ method: 'POST', url: '/api/mfa/totp', headers, payload: '{}' });
    assert.equal(begin.statusCode, 200, begin.body);
    now += 11 * 60 * 1000;
    for (const [method, url] of [
      ['POST', '/api/mfa/totp'],
      ['DELETE', '/api/mfa/totp'],
    ] as const) {
      const stale = await t.inject({ method, url, headers, payload: '{}' });
      assert.equal(stale.statusCode, 401, `${method} ${url}: ${stale.body}`);
      assert.equal(stale.json().error, 'REAUTHENTICATION_REQUIRED');
    }
    // A password given for an account that has none is a wrong one, as at sign-in.
    const guessed = await t.inject({
      method: 'POST',
      url: '/api/mfa/totp',
      headers,
      payload: '{"password":"x"}',
    });
    assert.equal(guessed.statusCode, 400, guessed.body);
  });
});

describeEachStore('Native sign-in: tokens jose cannot process', (store) => {
  let provider: TestOidcProvider;
  let t: TestApp;
  before(async () => {
    provider = await startOidcProvider();
    t = await startApp(store, 'b', {
      oauth: oauthSettings(provider.issuer),
      publicUrl: 'http://127.0.0.1:9',
      throttle: { ...NO_THROTTLE },
      encryptionKey: ENCRYPTION_KEY,
    });
  });
  after(async () => {
    await t?.close();
    await provider?.close();
  });

  test('a token with a critical header parameter nobody understands, signed by the provider’s key: 401 SIGNIN_FAILED (the token’s fault, counted), not 409', async () => {
    // Put together by hand: jose refuses to sign a header with an extension it does not know.
    const jwk = provider.jwks.keys[0]!;
    const person = providerPerson(provider);
    const now = Math.floor(Date.now() / 1000);
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const signed = `${part({ alg: 'RS256', kid: jwk.kid, crit: ['zz'], zz: 1 })}.${part({
      iss: provider.issuer,
      sub: person.sub,
      aud: CLIENT_ID,
      iat: now,
      exp: now + 300,
      email: person.email,
      email_verified: true,
    })}`;
    const signature = sign(
      'sha256',
      Buffer.from(signed),
      createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }),
    );
    const idToken = `${signed}.${signature.toString('base64url')}`;
    const res = await t.post('/api/sessions/oauth', { provider: PROVIDER, idToken });
    assert.equal(res.statusCode, 401, res.body);
    assert.equal(res.json().error, 'SIGNIN_FAILED');
  });
});

describeEachStore('Provider sign-in routes: bad input, in both profiles', (store) => {
  let provider: TestOidcProvider;
  const apps = {} as Record<'a' | 'b', TestApp>;
  before(async () => {
    provider = await startOidcProvider();
    for (const profile of ['a', 'b'] as const)
      apps[profile] = await startApp(store, profile, {
        oauth: oauthSettings(provider.issuer),
        publicUrl: 'http://127.0.0.1:9',
        throttle: { ...NO_THROTTLE },
        encryptionKey: ENCRYPTION_KEY,
      });
  });
  after(async () => {
    for (const t of Object.values(apps)) await t?.close();
    await provider?.close();
  });

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] each bad request is a 4xx {error, message}, never a 500`, async () => {
      const t = apps[profile];
      const expect = async (
        res: Awaited<ReturnType<TestApp['inject']>>,
        status: number,
        code: string,
        what: string,
      ) => {
        assert.equal(res.statusCode, status, `${what}: ${res.body}`);
        assert.equal(res.json().error, code, what);
        assert.equal(typeof res.json().message, 'string', what);
      };
      const callback = `/api/oauth/${PROVIDER}/callback`;
      await expect(
        await t.get(`/api/oauth/${PROVIDER}/start?redirectTo=/${'x'.repeat(3000)}`),
        400,
        'VALIDATION_FAILED',
        'a long redirectTo',
      );
      await expect(
        await t.get(`/api/oauth/${PROVIDER}/start?intent=bogus`),
        400,
        'INVALID_QUERY',
        'an unknown intent',
      );
      await expect(await t.get('/api/oauth/NOPE!/start'), 404, 'NOT_FOUND', 'a malformed provider id');
      await expect(await t.get(`${callback}?state=a&state=b&code=x`), 400, 'INVALID_TOKEN', 'two states');
      await expect(
        await t.get(`${callback}?state=${'A'.repeat(5000)}`),
        400,
        'INVALID_TOKEN',
        'a huge state',
      );
      await expect(await t.get('/api/oauth/nope/callback?state=x'), 404, 'NOT_FOUND', 'an unknown provider');
      await expect(
        await t.inject({
          method: 'POST',
          url: callback,
          headers: { 'content-type': 'text/plain' },
          payload: 'x',
        }),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        'a text body',
      );
      await expect(
        await t.inject({
          method: 'POST',
          url: callback,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: `code=${'c'.repeat(20_000)}`,
        }),
        413,
        'PAYLOAD_TOO_LARGE',
        'a form over 16 KiB',
      );
      // A JSON body carries no answer: on to the GET callback with nothing, which knows no state.
      const json = await t.post(callback, { code: 'x', state: 'y' });
      assert.equal(json.statusCode, 303, json.body);
      await expect(
        await t.get(String(json.headers.location).replace('http://127.0.0.1:9', '')),
        400,
        'INVALID_TOKEN',
        'the bridged GET',
      );
      await expect(
        await t.post('/api/sessions/oauth', { provider: PROVIDER, idToken: 5 }),
        400,
        'SIGNIN_FAILED',
        'a number for idToken',
      );
      await expect(
        await t.post('/api/sessions/oauth', { provider: PROVIDER, idToken: 'x', extra: 1 }),
        400,
        'SIGNIN_FAILED',
        'an unknown field',
      );

      const person = providerPerson(provider);
      const idToken = await provider.signIdToken({
        sub: person.sub,
        aud: CLIENT_ID,
        email: person.email,
        email_verified: true,
      });
      const token = (await t.post('/api/sessions/oauth', { provider: PROVIDER, idToken })).json().token;
      const auth = { authorization: `Bearer ${token}` };
      for (const id of ['not-hex', 'A'.repeat(32), '0'.repeat(70)])
        await expect(
          await t.inject({ method: 'DELETE', url: `/api/identities/${id}`, headers: auth }),
          404,
          'NOT_FOUND',
          `identity ${id}`,
        );
      await expect(
        await t.inject({ method: 'DELETE', url: `/api/identities/${'0'.repeat(32)}` }),
        401,
        'UNAUTHENTICATED',
        'no session',
      );
    });
  }
});
