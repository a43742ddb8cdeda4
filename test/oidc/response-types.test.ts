// RFC 9700 §2.1.2: no access token or ID token in a URL. Only the code flow is offered: discovery
// says so, and an implicit or hybrid request goes back to the app as an error, with no token.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import {
  addClient,
  CookieBrowser,
  type OidcTestApp,
  REDIRECT_URI,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

describeEachStore('OpenID Connect: the code flow only', (store) => {
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'b');
  });
  after(() => t.close());

  test('discovery offers response_type code only, and PKCE with S256 only', async () => {
    const doc = (await (await fetch(`${t.issuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    assert.deepEqual(doc.response_types_supported, ['code']);
    assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
    assert.equal(doc.authorization_response_iss_parameter_supported, true);
  });

  for (const responseType of ['token', 'id_token', 'id_token token', 'code id_token', 'code token']) {
    test(`response_type=${responseType}: an error for the app, and no token anywhere in the URL`, async () => {
      const { clientId } = await addClient(t, { firstParty: true });
      const url = new URL(`${t.issuer}/auth`);
      url.search = new URLSearchParams({
        client_id: clientId,
        response_type: responseType,
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        nonce: 'n-1',
        state: 's-1',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      }).toString();
      const stop = await new CookieBrowser(t.base).navigate(url.href);
      const to = stop.leftTo ?? new URL(stop.url);
      const everything = `${to.search}${to.hash}${stop.body}`;
      assert.doesNotMatch(everything, /access_token=|id_token=|[?&#]code=/);
      assert.ok(
        stop.leftTo ? /error=/.test(`${to.search}${to.hash}`) : stop.status === 400,
        `${stop.status} ${to.href}`,
      );
    });
  }
});
