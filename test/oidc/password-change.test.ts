// A password change or reset revokes what apps hold for the person (refresh tokens, opaque access
// tokens, grants): whoever had the old password may have let an app in with it. Signing out of
// Usher does not: that is what offline_access is for.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as client from 'openid-client';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  addClient,
  authorize,
  type OidcTestApp,
  relyingParty,
  signedInBrowser,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

const OFFLINE = { scope: 'openid offline_access', prompt: 'consent' };

describeEachStore('OpenID Connect: a password change ends what apps hold', (store) => {
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'b');
  });
  after(() => t.close());

  async function appWithRefreshToken() {
    const user = newUser();
    const { id } = await register(t, user);
    const config = await relyingParty(t, await addClient(t));
    const browser = await signedInBrowser(t, user);
    const tokens = await authorize(browser, config, OFFLINE);
    assert.ok(tokens.refresh_token);
    return { user, id, config, browser, tokens };
  }

  test('signing out of Usher leaves the refresh token working', async () => {
    const { config, browser, tokens } = await appWithRefreshToken();
    assert.equal((await browser.postJson('/api/signout', {})).status, 204);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    assert.ok(refreshed.access_token);
  });

  test('changing the password revokes the refresh token and the access token', async () => {
    const { user, id, config, browser, tokens } = await appWithRefreshToken();
    const changed = await browser.fetch(`/api/users/${id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', origin: t.base, 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({
        name: user.name,
        email: user.email,
        password: 'a brand new passphrase 1',
        currentPassword: user.password,
      }),
    });
    assert.equal(changed.status, 200, await changed.text());
    await assert.rejects(
      client.refreshTokenGrant(config, tokens.refresh_token!),
      (error: { cause?: { error?: string } }) => {
        assert.equal(error.cause?.error, 'invalid_grant');
        return true;
      },
    );
    assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, false);
  });
});
