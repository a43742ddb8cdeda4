// What every answer of the provider under /oidc carries, though oidc-provider writes it past
// Fastify's reply (issue 48): the request's X-Request-Id (the caller's, or a new one), the
// provider's security headers (HSTS when the request came over https through a trusted proxy),
// one access line with the id, the status and the path only, and the metrics under the endpoint's
// route label. Black-box, over HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { waitUntil } from '../helpers/mail.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  API,
  addClient,
  authorizationRequest,
  type OidcTestApp,
  relyingParty,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PROVIDER_CSP =
  /^default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'$/;

/** The access lines (msg "request") the app wrote with request id `id`. */
function accessLines(t: OidcTestApp, id: string): Array<Record<string, unknown>> {
  return t.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.reqId === id);
}

/** The one access line of request `id`, once it is written (after the answer is sent). */
async function accessLine(t: OidcTestApp, id: string): Promise<Record<string, unknown>> {
  await waitUntil(() => accessLines(t, id).length > 0, 10_000, `the access line of ${id}`);
  const lines = accessLines(t, id);
  assert.equal(lines.length, 1, `one access line for ${id}`);
  return lines[0]!;
}

/** usher_http_requests_total of one method, route and status. */
async function counted(t: OidcTestApp, method: string, route: string, status: number): Promise<number> {
  const text = (await t.get('/metrics')).body;
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('usher_http_requests_total{') &&
        l.includes(`method="${method}"`) &&
        l.includes(`route="${route}"`) &&
        l.includes(`status="${status}"`),
    );
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

let seq = 0;
const freshId = () => `oidc-answer-${process.pid}-${++seq}`;

describeEachStore('The provider’s answers under /oidc', (store) => {
  let t: OidcTestApp;
  let proxied: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'a');
    proxied = await startOidcApp(store, 'a', { trustProxy: ['127.0.0.1'] });
  });
  after(async () => {
    await t?.close();
    await proxied?.close();
  });

  test('ISSUE 48: every answer of the provider carries the X-Request-Id it was sent, and its access line logs it', async () => {
    const worker = await addClient(t, { grants: ['client_credentials'], redirectUris: [] });
    const config = await relyingParty(t, await addClient(t));
    const basic = (secret: string) =>
      `Basic ${Buffer.from(`${worker.clientId}:${secret}`).toString('base64')}`;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const asks: Array<[string, string, RequestInit, number]> = [
      ['discovery', '/.well-known/openid-configuration', {}, 200],
      ['jwks', '/jwks', {}, 200],
      ['an unknown path', '/no-such-endpoint', {}, 404],
      [
        'a token',
        '/token',
        {
          method: 'POST',
          headers: { ...form, authorization: basic(worker.clientSecret!) },
          body: new URLSearchParams({ grant_type: 'client_credentials', resource: API }).toString(),
        },
        200,
      ],
      [
        'a refused token request',
        '/token',
        {
          method: 'POST',
          headers: { ...form, authorization: basic('not-the-secret') },
          body: new URLSearchParams({ grant_type: 'client_credentials', resource: API }).toString(),
        },
        401,
      ],
    ];
    for (const [what, path, init, status] of asks) {
      const id = freshId();
      const response = await fetch(`${t.issuer}${path}`, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), 'x-request-id': id },
      });
      await response.body?.cancel();
      assert.equal(response.status, status, what);
      assert.equal(response.headers.get('x-request-id'), id, `${what}: the id it was sent`);
      const line = await accessLine(t, id);
      assert.equal(line.statusCode, status, what);
      assert.equal(line.url, `/oidc${path}`, what);
    }
    // An authorization request: a redirect, logged as its path only (its query has the login_hint).
    const authorization = await authorizationRequest(config, { login_hint: 'someone@example.com' });
    const id = freshId();
    const redirect = await fetch(authorization.url, { redirect: 'manual', headers: { 'x-request-id': id } });
    await redirect.body?.cancel();
    assert.equal(redirect.status, 303);
    assert.equal(redirect.headers.get('x-request-id'), id);
    const line = await accessLine(t, id);
    assert.equal(line.url, '/oidc/auth');
    assert.doesNotMatch(JSON.stringify(line), /login_hint|someone@example\.com|code_challenge/);
  });

  test('ISSUE 48: without an X-Request-Id (or with an ill-formed one), each answer of the provider carries a new one of its own', async () => {
    const ids = new Set<string>();
    for (const given of [undefined, 'has space', 'x'.repeat(129)]) {
      const response = await fetch(`${t.issuer}/jwks`, {
        headers: given === undefined ? {} : { 'x-request-id': given },
      });
      await response.body?.cancel();
      const id = response.headers.get('x-request-id') ?? '';
      assert.match(id, UUID, String(given));
      ids.add(id);
      assert.equal((await accessLine(t, id)).url, '/oidc/jwks');
    }
    assert.equal(ids.size, 3);
  });

  test("ISSUE 48: the provider's security headers on its answers, and HSTS only when the request came over https through a trusted proxy", async () => {
    const over = async (app: OidcTestApp, headers: Record<string, string>) => {
      const response = await fetch(`${app.issuer}/.well-known/openid-configuration`, { headers });
      await response.body?.cancel();
      assert.equal(response.status, 200);
      return response.headers;
    };
    for (const headers of [
      await over(t, {}),
      await over(t, { 'x-forwarded-proto': 'https' }),
      await over(proxied, { 'x-forwarded-proto': 'https' }),
    ]) {
      assert.match(headers.get('content-security-policy') ?? '', PROVIDER_CSP);
      assert.equal(headers.get('x-content-type-options'), 'nosniff');
      assert.equal(headers.get('referrer-policy'), 'no-referrer');
      assert.equal(headers.get('cache-control'), 'no-store');
    }
    assert.equal((await over(t, {})).get('strict-transport-security'), null, 'plain http');
    assert.equal(
      (await over(t, { 'x-forwarded-proto': 'https' })).get('strict-transport-security'),
      null,
      'a client not among TRUST_PROXY cannot claim https',
    );
    assert.equal(
      (await over(proxied, { 'x-forwarded-proto': 'https' })).get('strict-transport-security'),
      'max-age=31536000; includeSubDomains',
      'https through a trusted proxy',
    );
  });

  test('ISSUE 48: each answer of the provider is counted once in /metrics, under its endpoint and status', async () => {
    const jwks = await counted(t, 'GET', '/oidc/jwks', 200);
    const refused = await counted(t, 'POST', '/oidc/token', 400);
    const jwksId = freshId();
    await (await fetch(`${t.issuer}/jwks`, { headers: { 'x-request-id': jwksId } })).text();
    const tokenId = freshId();
    const token = await fetch(`${t.issuer}/token`, { method: 'POST', headers: { 'x-request-id': tokenId } });
    await token.body?.cancel();
    assert.equal(token.status, 400);
    // Both are recorded when their answers are done, as their access lines are written.
    await accessLine(t, jwksId);
    await accessLine(t, tokenId);
    assert.equal(await counted(t, 'GET', '/oidc/jwks', 200), jwks + 1);
    assert.equal(await counted(t, 'POST', '/oidc/token', 400), refused + 1);
  });

  test('ISSUE 48: a path under the interaction pages that is no page is Usher’s 404; another spelling of /oidc is no route', async () => {
    for (const path of [
      '/oidc/interaction/abcdef/nothing',
      '/OIDC/jwks',
      '/Oidc/.well-known/openid-configuration',
    ]) {
      const id = freshId();
      const response = await fetch(`${t.base}${path}`, { headers: { 'x-request-id': id } });
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { error: 'NOT_FOUND', message: 'No such route.' }, path);
      assert.equal(response.headers.get('x-request-id'), id, path);
      assert.equal((await accessLine(t, id)).url, path);
    }
  });
});
