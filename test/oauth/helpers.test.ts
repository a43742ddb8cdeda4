// The test providers on their own, before any suite trusts them: the real OpenID Connect provider
// (panva's oidc-provider, test/helpers/oidc-provider.ts) driven by an independent relying party
// (openid-client) through its login and consent pages over HTTP, with PKCE required, Cancel,
// the hang, and ID tokens signed with its key or a foreign one; and the GitHub stand-in
// (test/helpers/github-standin.ts; GitHub itself cannot be reached here) checking client, code,
// redirect URI and PKCE verifier as GitHub does. No Usher here.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { type GithubStandin, startGithubStandin } from '../helpers/github-standin.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';

describe('the test OpenID Connect provider (oidc-provider)', () => {
  let provider: TestOidcProvider;
  let config: client.Configuration;
  before(async () => {
    provider = await startOidcProvider({
      clients: [{ client_id: 'rp', client_secret: 'rp-secret', redirect_uris: [REDIRECT] }],
    });
    config = await client.discovery(new URL(provider.issuer), 'rp', 'rp-secret', undefined, {
      execute: [client.allowInsecureRequests],
    });
  });
  after(() => provider.close());

  async function authorizationUrl(extra: Record<string, string> = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email profile',
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    });
    return { url, verifier, state, nonce };
  }

  test('discovery, the login and consent pages, and a code flow give the account’s claims in the ID token', async () => {
    assert.equal(config.serverMetadata().issuer, provider.issuer);
    assert.equal(config.serverMetadata().authorization_response_iss_parameter_supported, true);
    const login = `alice.${randomBytes(3).toString('hex')}`;
    const person = provider.setAccount(login, {
      email: 'alice@provider.example',
      email_verified: true,
      name: 'Alice',
    });
    const { url, verifier, state, nonce } = await authorizationUrl();
    const { location, pages } = await provider.authorize(url.href, { login });
    assert.deepEqual(pages, ['login', 'consent']);
    const back = new URL(location);
    assert.equal(back.searchParams.get('iss'), provider.issuer, 'RFC 9207 iss in the answer');
    const tokens = await client.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    const claims = tokens.claims();
    assert.equal(claims?.sub, person.sub);
    assert.equal(claims?.email, 'alice@provider.example');
    assert.equal(claims?.email_verified, true);
    assert.equal(claims?.name, 'Alice');
    assert.equal(provider.issued.at(-1)?.id_token, tokens.id_token, 'the answer is recorded');
    assert.equal(provider.tokenRequests.at(-1)?.params.code_verifier, verifier);
  });

  test('PKCE is required of every client: an authorization request without it is refused', async () => {
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      state: 'x',
    });
    const res = await fetch(url, { redirect: 'manual' });
    const back = new URL(res.headers.get('location') ?? '');
    assert.equal(back.searchParams.get('error'), 'invalid_request');
    assert.match(back.searchParams.get('error_description') ?? '', /PKCE/);
  });

  test('Cancel on the consent page ends with access_denied', async () => {
    provider.setAccount('bob-cancel', { email: 'bob@provider.example', email_verified: true });
    const { url } = await authorizationUrl();
    const { location } = await provider.authorize(url.href, { login: 'bob-cancel', consent: 'cancel' });
    assert.equal(new URL(location).searchParams.get('error'), 'access_denied');
  });

  test('hang("token") leaves the token endpoint unanswered until hang(false)', async () => {
    provider.hang('token');
    try {
      await assert.rejects(
        fetch(`${provider.issuer}/token`, { method: 'POST', signal: AbortSignal.timeout(300) }),
        /abort|timeout/i,
      );
      assert.equal((await fetch(`${provider.issuer}/.well-known/openid-configuration`)).status, 200);
    } finally {
      provider.hang(false);
    }
  });

  test('signIdToken: verifies with the JWKS of the provider; a foreign key or alg none does not', async () => {
    const jwks = (await (await fetch(`${provider.issuer}/jwks`)).json()) as { keys: [] };
    const keys = createLocalJWKSet(jwks);
    const good = await provider.signIdToken({ sub: 's', aud: 'rp', nonce: 'n' });
    const { payload } = await jwtVerify(good, keys, { issuer: provider.issuer, audience: 'rp' });
    assert.equal(payload.nonce, 'n');
    for (const bad of [
      await provider.signIdToken({ sub: 's', aud: 'rp' }, { key: 'foreign' }),
      await provider.signIdToken({ sub: 's', aud: 'rp' }, { alg: 'none' }),
    ])
      await assert.rejects(jwtVerify(bad, keys, { issuer: provider.issuer, audience: 'rp' }));
  });

  test('genuineIdToken: a real code flow for another client id (a native app)', async () => {
    provider.setAccount('carol-native', { email: 'carol@provider.example', email_verified: false });
    const token = await provider.genuineIdToken('carol-native', 'native-app', { nonce: 'abc' });
    const jwks = createLocalJWKSet((await (await fetch(`${provider.issuer}/jwks`)).json()) as { keys: [] });
    const { payload } = await jwtVerify(token, jwks, { issuer: provider.issuer, audience: 'native-app' });
    assert.equal(payload.nonce, 'abc');
    assert.equal(payload.email_verified, false);
  });
});

describe('the GitHub stand-in', () => {
  let github: GithubStandin;
  before(async () => {
    github = await startGithubStandin();
    github.addApp({ client_id: 'gh-app', client_secret: 'gh-secret', redirect_uri: REDIRECT });
    github.signIn({
      id: 4242,
      login: 'octo',
      name: 'Octo Cat',
      emails: [
        { email: 'octo@public.example', primary: false, verified: true },
        { email: 'octo@primary.example', primary: true, verified: true },
      ],
    });
  });
  after(() => github.close());

  async function code(challenge: string, state = 'st') {
    const url = new URL(`${github.url}/login/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: 'gh-app',
      redirect_uri: REDIRECT,
      state,
      scope: 'read:user user:email',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }).toString();
    const back = new URL(await github.authorize(url.href));
    assert.equal(back.searchParams.get('state'), state);
    return back.searchParams.get('code')!;
  }
  const exchange = (params: Record<string, string>) =>
    fetch(`${github.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: 'gh-app',
        client_secret: 'gh-secret',
        redirect_uri: REDIRECT,
        ...params,
      }).toString(),
    }).then((r) => r.json() as Promise<Record<string, string>>);

  test('authorize, exchange with the PKCE verifier, then /user and /user/emails', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const token = await exchange({ code: await code(challenge), code_verifier: verifier });
    assert.match(token.access_token ?? '', /^gho_/);
    const headers = { authorization: `Bearer ${token.access_token}`, 'user-agent': 'test' };
    const user = (await (await fetch(`${github.apiUrl}/user`, { headers })).json()) as Record<
      string,
      unknown
    >;
    assert.equal(user.id, 4242);
    const emails = (await (await fetch(`${github.apiUrl}/user/emails`, { headers })).json()) as unknown[];
    assert.equal(emails.length, 2);
    // (fetch always sends one: node:http does not unless told.)
    const status = await new Promise<number>((resolve, reject) =>
      get(`${github.apiUrl}/user`, { headers: { authorization: headers.authorization } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject),
    );
    assert.equal(status, 403, 'no User-Agent');
  });

  test('a wrong or missing verifier, a used code and a wrong secret are refused as GitHub does (200 with error)', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    assert.equal(
      (await exchange({ code: await code(challenge), code_verifier: randomBytes(32).toString('base64url') }))
        .error,
      'bad_verification_code',
    );
    assert.equal((await exchange({ code: await code(challenge) })).error, 'bad_verification_code');
    const once = await code(challenge);
    assert.ok((await exchange({ code: once, code_verifier: verifier })).access_token);
    assert.equal((await exchange({ code: once, code_verifier: verifier })).error, 'bad_verification_code');
    assert.equal(
      (await exchange({ code: await code(challenge), code_verifier: verifier, client_secret: 'nope' })).error,
      'incorrect_client_credentials',
    );
  });

  test('Cancel redirects with error=access_denied and the state', async () => {
    const url = `${github.url}/login/oauth/authorize?client_id=gh-app&redirect_uri=${encodeURIComponent(REDIRECT)}&state=s1`;
    const back = new URL(await github.authorize(url, { cancel: true }));
    assert.equal(back.searchParams.get('error'), 'access_denied');
    assert.equal(back.searchParams.get('state'), 's1');
  });
});
