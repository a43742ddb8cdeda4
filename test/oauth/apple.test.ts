// The Apple preset end to end, against the real test provider standing in for Apple (Apple itself
// cannot run here): `OAUTH_APPLE_ISSUER` points the preset at panva's oidc-provider on 127.0.0.2,
// which checks the client secret Usher makes (an ES256 JWT signed with the .p8 key, as Apple
// requires) and answers with response_mode=form_post, a cross-site form POST that carries no
// SameSite=Lax cookie; Usher turns it into a same-origin GET where the binding cookie comes back.
import assert from 'node:assert/strict';
import { generateKeyPairSync, verify } from 'node:crypto';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { NO_THROTTLE, startApp } from '../helpers/app.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { assertSignedIn, Browser, getAs, providerPerson, type Usher } from './support.ts';

const CLIENT = 'com.example.web';
const TEAM = 'TEAM123456';
const KEY_ID = 'KEY1234567';

describeEachStore('Sign in with Apple (the preset, against a stand-in provider)', (store) => {
  let provider: TestOidcProvider;
  let usher: Usher;
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const secrets: string[] = [];

  /** Apple's rules for the client secret: ES256 under the key id, from the team, for the client, an hour at most. */
  function isAppleSecret(secret: string): boolean {
    secrets.push(secret);
    const [header, payload, signature] = secret.split('.');
    if (!header || !payload || !signature) return false;
    const head = JSON.parse(Buffer.from(header, 'base64url').toString());
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const now = Math.floor(Date.now() / 1000);
    return (
      head.alg === 'ES256' &&
      head.kid === KEY_ID &&
      claims.iss === TEAM &&
      claims.sub === CLIENT &&
      claims.aud === 'https://appleid.apple.com' &&
      claims.exp > now &&
      claims.exp - claims.iat <= 3600 &&
      verify(
        'sha256',
        Buffer.from(`${header}.${payload}`),
        { key: publicKey, dsaEncoding: 'ieee-p1363' },
        Buffer.from(signature, 'base64url'),
      )
    );
  }

  before(async () => {
    provider = await startOidcProvider();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const callback = `${base}/api/oauth/apple/callback`;
    await provider.addClient({
      client_id: CLIENT,
      client_secret: 'registered-at-the-stand-in',
      redirect_uris: [callback],
    });
    provider.acceptClientSecret(CLIENT, isAppleSecret);
    const oauth = loadConfig({
      OAUTH_PROVIDERS: 'apple',
      OAUTH_APPLE_CLIENT_ID: CLIENT,
      OAUTH_APPLE_TEAM_ID: TEAM,
      OAUTH_APPLE_KEY_ID: KEY_ID,
      OAUTH_APPLE_PRIVATE_KEY: String(privateKey.export({ type: 'pkcs8', format: 'pem' })),
      OAUTH_APPLE_ISSUER: provider.issuer,
      // The stand-in knows `name` as no scope: Apple's own default asks for it.
      OAUTH_APPLE_SCOPES: 'openid email',
    }).oauth;
    const t = await startApp(store, 'b', { oauth, publicUrl: base, throttle: { ...NO_THROTTLE } });
    await t.app.listen({ host: '127.0.0.1', port });
    usher = { t, base, callback };
  });
  after(async () => {
    await usher?.t.close();
    await provider?.close();
  });

  test('a form-POST answer, an ES256 client secret made from the key: the person is signed in, and Apple is linked', async () => {
    const browser = new Browser();
    const person = providerPerson(provider);
    const start = await browser.start(usher, {}, 'apple');
    assert.equal(
      start.status,
      302,
      `${await start.text()} ${usher.t.logs.filter((l) => l.includes('could not')).join('')}`,
    );
    const authorization = new URL(String(start.headers.get('location')));
    assert.equal(authorization.searchParams.get('response_mode'), 'form_post');
    const result = await provider.authorize(authorization.href, { login: person.login, jar: browser.jar });
    assert.ok(result.form, 'the provider answers with a form that posts itself');
    assert.equal(result.location, usher.callback);
    // Cross-site: none of Usher's cookies come with the POST.
    const posted = await fetch(result.location, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(result.form).toString(),
    });
    assert.equal(posted.status, 303, await posted.text());
    const landed = await browser.callback(usher, String(posted.headers.get('location')));
    const refused = usher.t.logs.filter((l) => l.includes('refused')).join('');
    const token = await assertSignedIn(usher, landed).catch((error: Error) => {
      throw new Error(`${error.message} ${refused}`);
    });
    assert.ok(
      secrets.length > 0 && secrets.every(isAppleSecret),
      'every secret sent was an Apple client secret',
    );
    const identities = (await getAs(usher.t, token, '/api/identities')).json();
    assert.deepEqual(
      identities.map((i: { provider: string; email: string }) => [i.provider, i.email]),
      [['apple', person.email]],
    );
  });
});
