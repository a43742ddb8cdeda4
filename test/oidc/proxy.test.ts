// Behind a proxy: the provider believes X-Forwarded-Proto only from TRUST_PROXY's addresses, as
// Fastify does. Seen in its cookies: Secure when the request came over https, through a trusted
// proxy; not when a client that reaches Usher directly claims https.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import {
  addClient,
  authorizationRequest,
  type OidcTestApp,
  relyingParty,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

async function interactionCookies(t: OidcTestApp): Promise<string[]> {
  const config = await relyingParty(t, await addClient(t));
  const { url } = await authorizationRequest(config);
  const res = await fetch(url, { redirect: 'manual', headers: { 'x-forwarded-proto': 'https' } });
  assert.equal(res.status, 303);
  return res.headers.getSetCookie().filter((c) => c.startsWith('_interaction'));
}

describeEachStore('OpenID Connect behind a proxy', (store) => {
  let direct: OidcTestApp;
  let proxied: OidcTestApp;
  before(async () => {
    direct = await startOidcApp(store, 'b', { trustProxy: ['10.9.8.7'] });
    proxied = await startOidcApp(store, 'b', { trustProxy: ['127.0.0.1'] });
  });
  after(async () => {
    await direct.close();
    await proxied.close();
  });

  test('a client not among TRUST_PROXY cannot claim https: its cookies are not Secure', async () => {
    const cookies = await interactionCookies(direct);
    assert.ok(cookies.length > 0);
    for (const cookie of cookies) assert.doesNotMatch(cookie, /;\s*secure/i, cookie);
  });

  test('through a trusted proxy that says https, the cookies are Secure', async () => {
    const cookies = await interactionCookies(proxied);
    assert.ok(cookies.length > 0);
    for (const cookie of cookies) assert.match(cookie, /;\s*secure/i, cookie);
  });

  test("discovery names PUBLIC_URL's host whatever Host the request carries", async () => {
    // fetch() does not let a caller set Host; node:http does, as any client on the network can.
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${direct.base}/oidc/.well-known/openid-configuration`,
        { headers: { host: 'evil.example' } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 200);
    const doc = JSON.parse(body) as Record<string, unknown>;
    assert.equal(doc.issuer, direct.issuer);
    for (const name of ['authorization_endpoint', 'token_endpoint', 'jwks_uri', 'userinfo_endpoint'])
      assert.equal(new URL(String(doc[name])).origin, new URL(direct.base).origin, name);
  });
});
