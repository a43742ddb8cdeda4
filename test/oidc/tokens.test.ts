// The tokens Usher's provider issues, used as their receivers use them: refresh tokens rotated by
// openid-client (a reused one revokes the grant), revocation and introspection, client_credentials,
// JWT access tokens for OIDC_RESOURCES verified by jose from the JWKS alone (and told apart from ID
// tokens and from another API's tokens), and POST /api/session/token for first-party apps.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as jose from 'jose';
import * as client from 'openid-client';
import type { Profile } from '../../src/config.ts';
import { newUser, register, signIn } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  API,
  addClient,
  answerConsent,
  authorizationRequest,
  authorize,
  exchange,
  interactionDetails,
  type OidcTestApp,
  OTHER_API,
  relyingParty,
  remoteKeys,
  signedInBrowser,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

/** A resource no test app lists in OIDC_RESOURCES. */
const UNKNOWN_API = 'https://unknown.example.test';

describeEachStore('OpenID Connect tokens', (store) => {
  const apps = {} as Record<Profile, OidcTestApp>;
  before(async () => {
    apps.a = await startOidcApp(store, 'a');
    apps.b = await startOidcApp(store, 'b');
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  /** A person, a third-party client, and the tokens of one authorization (consent allowed). */
  async function signedInApp(t: OidcTestApp, params: Record<string, string> = {}) {
    const user = newUser();
    const { id } = await register(t, user);
    const registered = await addClient(t);
    const config = await relyingParty(t, registered);
    const browser = await signedInBrowser(t, user);
    const tokens = await authorize(browser, config, params);
    return { user, sub: id.toString(), clientId: registered.clientId, config, browser, tokens };
  }

  const offline = { scope: 'openid offline_access', prompt: 'consent' };

  describe('refresh tokens', () => {
    test('offline_access: the consent asks for it, a refresh token comes, and each use rotates it', async () => {
      const t = apps.b;
      const user = newUser();
      const { id } = await register(t, user);
      const config = await relyingParty(t, await addClient(t));
      const browser = await signedInBrowser(t, user);
      const authorization = await authorizationRequest(config, offline);
      const page = await browser.navigate(authorization.url.href);
      const details = await interactionDetails(browser, page);
      assert.equal(details.prompt, 'consent');
      assert.ok(details.scopes.includes('offline_access'), `asked: ${details.scopes}`);
      const landed = await answerConsent(browser, page, 'allow');
      assert.ok(landed.leftTo);
      const tokens = await exchange(config, authorization, landed.leftTo);
      assert.ok(tokens.refresh_token, 'offline_access granted: a refresh token');

      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
      assert.ok(refreshed.refresh_token);
      assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'rotated');
      assert.notEqual(refreshed.access_token, tokens.access_token);
      const info = await client.tokenIntrospection(config, refreshed.access_token);
      assert.equal(info.active, true);
      assert.equal(info.sub, id.toString());

      const again = await client.refreshTokenGrant(config, refreshed.refresh_token!);
      assert.ok(again.refresh_token);
      assert.notEqual(again.refresh_token, refreshed.refresh_token);
    });

    test('without offline_access there is no refresh token', async () => {
      const { tokens } = await signedInApp(apps.b, { scope: 'openid' });
      assert.equal(tokens.refresh_token, undefined);
    });

    test('a used refresh token used again fails, and revokes the grant: the newest refresh and access tokens die too', async () => {
      const { config, tokens } = await signedInApp(apps.b, offline);
      const first = tokens.refresh_token!;
      const rotated = await client.refreshTokenGrant(config, first);
      assert.equal((await client.tokenIntrospection(config, rotated.access_token)).active, true);

      await assert.rejects(client.refreshTokenGrant(config, first), { error: 'invalid_grant' });
      await assert.rejects(client.refreshTokenGrant(config, rotated.refresh_token!), {
        error: 'invalid_grant',
      });
      assert.equal((await client.tokenIntrospection(config, rotated.access_token)).active, false);
      assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, false);
    });

    test("a client cannot use another client's refresh token", async () => {
      const t = apps.b;
      const { config, tokens } = await signedInApp(t, offline);
      const other = await relyingParty(t, await addClient(t));
      await assert.rejects(client.refreshTokenGrant(other, tokens.refresh_token!), {
        error: 'invalid_grant',
      });
      assert.ok(
        (await client.refreshTokenGrant(config, tokens.refresh_token!)).access_token,
        'still good for its own',
      );
    });
  });

  describe('revocation and introspection', () => {
    test('introspection of a live access token: active, with sub, client_id and scope', async () => {
      const { sub, clientId, config, tokens } = await signedInApp(apps.b, { scope: 'openid email' });
      const info = await client.tokenIntrospection(config, tokens.access_token);
      assert.equal(info.active, true);
      assert.equal(info.sub, sub);
      assert.equal(info.client_id, clientId);
      assert.deepEqual(info.scope?.split(' ').sort(), ['email', 'openid']);
      assert.equal(info.token_type, 'Bearer');
      assert.equal(info.iss, apps.b.issuer);
    });

    test('a revoked access token is inactive at introspection and refused at userinfo', async () => {
      const { sub, config, tokens } = await signedInApp(apps.b);
      assert.equal((await client.fetchUserInfo(config, tokens.access_token, sub)).sub, sub);
      await client.tokenRevocation(config, tokens.access_token);
      assert.deepEqual(await client.tokenIntrospection(config, tokens.access_token), { active: false });
      await assert.rejects(client.fetchUserInfo(config, tokens.access_token, sub), { status: 401 });
    });

    test('a revoked refresh token is inactive and no longer refreshes', async () => {
      const { config, tokens } = await signedInApp(apps.b, offline);
      const refresh = tokens.refresh_token!;
      assert.equal((await client.tokenIntrospection(config, refresh)).active, true);
      await client.tokenRevocation(config, refresh);
      assert.deepEqual(await client.tokenIntrospection(config, refresh), { active: false });
      await assert.rejects(client.refreshTokenGrant(config, refresh), { error: 'invalid_grant' });
    });

    test("a client cannot revoke another client's token", async () => {
      const t = apps.b;
      const { config, tokens } = await signedInApp(t);
      const other = await relyingParty(t, await addClient(t));
      await client.tokenRevocation(other, tokens.access_token); // 200 as RFC 7009 has it, and nothing done
      assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true);
    });

    test('a public client introspects its own tokens only', async () => {
      const t = apps.b;
      const { tokens } = await signedInApp(t);
      const user = newUser();
      await register(t, user);
      const pub = await relyingParty(t, await addClient(t, { public: true }));
      const own = await authorize(await signedInBrowser(t, user), pub);
      assert.equal((await client.tokenIntrospection(pub, own.access_token)).active, true);
      assert.equal((await client.tokenIntrospection(pub, tokens.access_token)).active, false);
    });
  });

  describe('client_credentials', () => {
    test('client_credentials with resource=API: a JWT an API verifies from the JWKS alone', async () => {
      const t = apps.b;
      const registered = await addClient(t, {
        grants: ['client_credentials'],
        redirectUris: [],
        postLogoutRedirectUris: [],
      });
      const config = await relyingParty(t, registered);
      const tokens = await client.clientCredentialsGrant(config, { resource: API });
      assert.equal(tokens.refresh_token, undefined);
      assert.equal(tokens.expires_in, 300);
      const { payload, protectedHeader } = await jose.jwtVerify(tokens.access_token, remoteKeys(t), {
        issuer: t.issuer,
        audience: API,
        typ: 'at+jwt',
        algorithms: ['ES256'],
      });
      assert.equal(protectedHeader.typ, 'at+jwt');
      assert.equal(payload.client_id, registered.clientId);
      assert.equal(payload.sub, registered.clientId, 'no person: the client is the subject (RFC 9068)');
    });

    test('client_credentials is refused to a client registered without it, and for an unknown resource', async () => {
      const t = apps.b;
      const plain = await relyingParty(t, await addClient(t));
      // oidc-provider answers invalid_request ("requested grant type is not allowed for this
      // client") where RFC 6749 §5.2 has unauthorized_client; either refuses.
      await assert.rejects(client.clientCredentialsGrant(plain, { resource: API }), (error: unknown) => {
        const { error: code, error_description } = error as client.ResponseBodyError;
        assert.ok(['unauthorized_client', 'invalid_request'].includes(code), code);
        assert.match(String(error_description), /grant type/);
        return true;
      });
      const machine = await relyingParty(
        t,
        await addClient(t, { grants: ['client_credentials'], redirectUris: [], postLogoutRedirectUris: [] }),
      );
      await assert.rejects(client.clientCredentialsGrant(machine, { resource: UNKNOWN_API }), {
        error: 'invalid_target',
      });
    });
  });

  describe('JWT access tokens', () => {
    test('resource=API: the access token is a JWT (RFC 9068) jose verifies from the JWKS alone', async () => {
      const t = apps.b;
      const { sub, clientId, tokens } = await signedInApp(t, { resource: API });
      const { payload, protectedHeader } = await jose.jwtVerify(tokens.access_token, remoteKeys(t), {
        issuer: t.issuer,
        audience: API,
        typ: 'at+jwt',
        algorithms: ['ES256'],
        requiredClaims: ['iss', 'aud', 'sub', 'exp', 'iat', 'jti', 'client_id', 'scope'],
      });
      assert.equal(protectedHeader.alg, 'ES256');
      assert.equal(protectedHeader.typ, 'at+jwt');
      assert.ok(protectedHeader.kid);
      assert.equal(payload.sub, sub);
      assert.equal(payload.aud, API);
      assert.equal(payload.client_id, clientId);
      assert.equal(payload.exp! - payload.iat!, 300);
      assert.equal(typeof payload.jti, 'string');
      assert.deepEqual(String(payload.scope).split(' ').sort(), ['email', 'openid', 'profile']);
    });

    test('resource=OTHER_API: a token for the other API, which an API checking its own audience refuses', async () => {
      const t = apps.b;
      const { tokens } = await signedInApp(t, { resource: OTHER_API });
      const { payload } = await jose.jwtVerify(tokens.access_token, remoteKeys(t), {
        issuer: t.issuer,
        audience: OTHER_API,
        typ: 'at+jwt',
      });
      assert.equal(payload.aud, OTHER_API);
      await assert.rejects(
        jose.jwtVerify(tokens.access_token, remoteKeys(t), {
          issuer: t.issuer,
          audience: API,
          typ: 'at+jwt',
        }),
        { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' },
      );
    });

    test('a resource not in OIDC_RESOURCES: the app gets invalid_target', async () => {
      const t = apps.b;
      const user = newUser();
      await register(t, user);
      const config = await relyingParty(t, await addClient(t));
      const browser = await signedInBrowser(t, user);
      const authorization = await authorizationRequest(config, { resource: UNKNOWN_API });
      const stop = await browser.navigate(authorization.url.href);
      assert.ok(stop.leftTo, `back to the app (${stop.status})`);
      assert.equal(stop.leftTo.searchParams.get('error'), 'invalid_target');
      assert.equal(stop.leftTo.searchParams.get('state'), authorization.state);
      assert.equal(stop.leftTo.searchParams.get('code'), null);
    });

    test('an ID token is not an access token: its typ and audience tell an API to refuse it', async () => {
      const t = apps.b;
      const { clientId, tokens } = await signedInApp(t, { resource: API });
      const idToken = tokens.id_token!;
      await assert.rejects(jose.jwtVerify(idToken, remoteKeys(t), { issuer: t.issuer, typ: 'at+jwt' }), {
        code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
        claim: 'typ',
      });
      await assert.rejects(jose.jwtVerify(idToken, remoteKeys(t), { issuer: t.issuer, audience: API }), {
        code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
        claim: 'aud',
      });
      const { payload, protectedHeader } = await jose.jwtVerify(idToken, remoteKeys(t), {
        issuer: t.issuer,
        audience: clientId,
      });
      assert.equal(protectedHeader.alg, 'RS256');
      assert.notEqual(protectedHeader.typ, 'at+jwt');
      assert.equal(payload.aud, clientId);
    });
  });

  describe('POST /api/session/token', () => {
    for (const profile of ['a', 'b'] as const) {
      const tokenRequest = (t: OidcTestApp, body: unknown, headers: Record<string, string>) =>
        t.post('/api/session/token', body, headers);

      test(`profile ${profile}: POST /api/session/token with a Bearer session: a JWT for the audience`, async () => {
        const t = apps[profile];
        const user = newUser();
        const { id } = await register(t, user);
        const created = await t.post('/api/sessions', { email: user.email, password: user.password });
        assert.equal(created.statusCode, 201, created.body);
        const bearer = { authorization: `Bearer ${created.json().token}` };

        const res = await tokenRequest(t, { audience: API }, bearer);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.deepEqual(Object.keys(body).sort(), ['accessToken', 'expiresIn', 'tokenType']);
        assert.equal(body.tokenType, 'Bearer');
        assert.equal(body.expiresIn, 300);
        const { payload, protectedHeader } = await jose.jwtVerify(body.accessToken, remoteKeys(t), {
          issuer: t.issuer,
          audience: API,
          typ: 'at+jwt',
          algorithms: ['ES256'],
          requiredClaims: ['exp', 'iat', 'jti'],
        });
        assert.equal(protectedHeader.alg, 'ES256');
        assert.equal(payload.iss, `${t.base}/oidc`);
        assert.equal(payload.sub, id.toString());
        assert.equal(payload.client_id, 'usher');
        assert.equal(payload.exp! - payload.iat!, 300);
      });

      test(`profile ${profile}: POST /api/session/token with the session cookie, from Usher's origin only`, async () => {
        const t = apps[profile];
        const user = newUser();
        const { id } = await register(t, user);
        const cookie = `usher_session=${await signIn(t, user)}`;
        const fromPage = (origin: string) =>
          fetch(`${t.base}/api/session/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', cookie, origin },
            body: JSON.stringify({ audience: OTHER_API }),
          });
        const res = await fromPage(t.base);
        assert.equal(res.status, 200);
        const { payload } = await jose.jwtVerify(
          ((await res.json()) as { accessToken: string }).accessToken,
          remoteKeys(t),
          { issuer: t.issuer, audience: OTHER_API, typ: 'at+jwt' },
        );
        assert.equal(payload.sub, id.toString());

        const crossSite = await fromPage('https://evil.example');
        assert.equal(crossSite.status, 403);
        assert.equal(((await crossSite.json()) as { error: string }).error, 'FORBIDDEN');
      });

      test(`profile ${profile}: POST /api/session/token refuses an audience not configured, and bad bodies`, async () => {
        const t = apps[profile];
        const user = newUser();
        await register(t, user);
        const bearer = { authorization: `Bearer ${await signIn(t, user)}` };

        const unknown = await tokenRequest(t, { audience: UNKNOWN_API }, bearer);
        assert.equal(unknown.statusCode, 400);
        assert.deepEqual(Object.keys(unknown.json()).sort(), ['error', 'message']);
        assert.equal(unknown.json().error, 'VALIDATION_FAILED');

        for (const body of [{}, { audience: API, scope: 'admin' }, { audience: '' }, { audience: 7 }]) {
          const res = await tokenRequest(t, body, bearer);
          assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
          assert.equal(res.json().error, 'VALIDATION_FAILED', JSON.stringify(body));
        }
      });

      test(`profile ${profile}: POST /api/session/token without a session is 401, and its token is no session`, async () => {
        const t = apps[profile];
        const anonymous = await tokenRequest(t, { audience: API }, {});
        assert.equal(anonymous.statusCode, 401);
        assert.equal(anonymous.json().error, 'UNAUTHENTICATED');

        const user = newUser();
        await register(t, user);
        const bearer = { authorization: `Bearer ${await signIn(t, user)}` };
        const { accessToken } = (await tokenRequest(t, { audience: API }, bearer)).json();
        const asSession = await t.inject({
          method: 'GET',
          url: '/api/session',
          headers: { authorization: `Bearer ${accessToken}` },
        });
        assert.equal(asSession.statusCode, 401, 'an access token does not open the account');
      });
    }
  });
});
