// @usher/client's accessToken(audience): a first-party app that signs in with a password gets a
// JWT for its API from the session, and the API verifies it from Usher's JWKS alone (jose).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as jose from 'jose';
import { createUsherClient } from '../../clients/typescript/src/index.ts';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { API, type OidcTestApp, startOidcApp } from '../helpers/usher-oidc.ts';

describeEachStore('@usher/client: accessToken', (store) => {
  for (const profile of ['a', 'b'] as const) {
    let t: OidcTestApp;
    before(async () => {
      t = await startOidcApp(store, profile);
    });
    after(() => t.close());

    test(`[${profile}] token mode: a JWT for the API, verified from the JWKS; an unknown audience is a typed 400`, async () => {
      const user = newUser();
      const { id } = await register(t, user);
      const client = createUsherClient({ profile, baseUrl: t.base, session: 'token' });
      assert.equal((await client.signIn(user)).ok, true);
      const issued = await client.accessToken(API);
      assert.ok(issued.ok, JSON.stringify(issued));
      assert.equal(issued.data.tokenType, 'Bearer');
      assert.equal(issued.data.expiresIn, 300);
      const { payload } = await jose.jwtVerify(
        issued.data.accessToken,
        jose.createRemoteJWKSet(new URL(`${t.issuer}/jwks`)),
        { issuer: t.issuer, audience: API, typ: 'at+jwt', algorithms: ['ES256'] },
      );
      assert.equal(payload.sub, id.toString());
      assert.equal(payload.client_id, 'usher');

      const refused = await client.accessToken('https://not-configured.example');
      assert.equal(refused.ok, false);
      assert.equal(refused.status, 400);
      assert.equal(!refused.ok && refused.error, 'VALIDATION_FAILED');

      await client.signOut();
      const anonymous = await client.accessToken(API);
      assert.equal(anonymous.status, 401);
    });
  }
});
