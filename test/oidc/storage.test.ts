// What the OpenID Connect provider stores for requests anyone can send (issue 40): nothing for a
// sign-out without a session, one session and one grant for a signed-in browser however often it
// asks without the provider's cookie, interactions and pushed requests within a budget per address,
// no parameter beyond its size, and every /oidc endpoint under its own route label in the metrics.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import { openDatabase } from '../../src/db/database.ts';
import { PARAMETER_MAX } from '../../src/oidc/bounds.ts';
import { newUser, register } from '../helpers/app.ts';
import { describeEachStore, freshDatabaseUrl, type Store } from '../helpers/stores.ts';
import {
  addClient,
  authorizationRequest,
  CookieBrowser,
  exchange,
  type OidcTestApp,
  POST_LOGOUT_URI,
  REDIRECT_URI,
  relyingParty,
  signedInBrowser,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

/** Rows of the provider's `model`, for `accountId` when given. */
async function rows(t: OidcTestApp, model: string, accountId?: string): Promise<number> {
  const database = openDatabase(t.config.databaseUrl, t.config.database);
  try {
    let query = database.db
      .selectFrom('oidc_models')
      .select((eb) => eb.fn.countAll<bigint | number>().as('n'))
      .where('model', '=', model);
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    return Number((await query.executeTakeFirstOrThrow()).n);
  } finally {
    await database.close();
  }
}

/** A pushed authorization request (RFC 9126) with client_secret_basic, as any client could send it. */
function pushedRequest(
  t: OidcTestApp,
  registered: { clientId: string; clientSecret?: string },
  params: Record<string, string> = {},
  path = '/request',
): Promise<Response> {
  const basic = Buffer.from(`${registered.clientId}:${registered.clientSecret}`).toString('base64');
  return fetch(`${t.issuer}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: new URLSearchParams({
      response_type: 'code',
      client_id: registered.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: client.randomState(),
      ...params,
    }),
  });
}

describeEachStore('OpenID Connect storage', (store) => {
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'a');
  });
  after(() => t.close());

  describe('sign-out without a session', () => {
    test('ISSUE 40: 50 GET /oidc/session/end without a cookie store no provider session; each goes straight to the signed-out page', async () => {
      const before = await rows(t, 'Session');
      for (let i = 0; i < 50; i++) {
        const response = await fetch(`${t.issuer}/session/end`, { redirect: 'manual' });
        assert.equal(response.status, 303);
        assert.equal(response.headers.get('location'), `${t.issuer}/session/end/success`);
        assert.deepEqual(response.headers.getSetCookie(), [], 'no cookie naming a session');
        await response.body?.cancel();
      }
      assert.equal(await rows(t, 'Session'), before, 'no session row added');
      const page = await fetch(`${t.issuer}/session/end/success`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /signed out/i);
    });

    test("ISSUE 40: with a client's registered post-logout URI and a state, straight back to the app with that state, nothing stored", async () => {
      const registered = await addClient(t, { public: true });
      const before = await rows(t, 'Session');
      for (let i = 0; i < 10; i++) {
        const state = client.randomState();
        const url = new URL(`${t.issuer}/session/end`);
        url.searchParams.set('client_id', registered.clientId);
        url.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_URI);
        url.searchParams.set('state', state);
        const response = await fetch(url, { redirect: 'manual' });
        assert.equal(response.status, 303);
        const to = new URL(response.headers.get('location')!);
        assert.equal(`${to.origin}${to.pathname}`, POST_LOGOUT_URI);
        assert.equal(to.searchParams.get('state'), state);
        await response.body?.cancel();
      }
      // An unregistered URI is still refused by the library's check.
      const refused = await fetch(
        `${t.issuer}/session/end?client_id=${registered.clientId}&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/')}`,
        { redirect: 'manual' },
      );
      assert.equal(refused.status, 400);
      await refused.body?.cancel();
      assert.equal(await rows(t, 'Session'), before);
    });
  });

  test('ISSUE 40: 20 authorization requests of a signed-in browser that keeps no provider cookie leave one provider session and one grant, and every code works', async () => {
    const user = newUser();
    const { id } = await register(t, user);
    const config = await relyingParty(t, await addClient(t, { firstParty: true }));
    const browser = await signedInBrowser(t, user);
    const usher = `usher_session=${browser.jar.get('usher_session')}`;
    const issued: Array<{ authorization: Awaited<ReturnType<typeof authorizationRequest>>; back: URL }> = [];
    for (let i = 0; i < 20; i++) {
      const authorization = await authorizationRequest(config);
      // Only the Usher session's cookie, never the provider's it was given the last time.
      const response = await fetch(authorization.url, { redirect: 'manual', headers: { cookie: usher } });
      assert.equal(response.status, 303, await response.text());
      const back = new URL(response.headers.get('location')!);
      assert.ok(back.searchParams.get('code'), back.href);
      issued.push({ authorization, back });
    }
    assert.equal(await rows(t, 'Session', id.toString()), 1, 'one provider session');
    assert.equal(await rows(t, 'Grant', id.toString()), 1, 'one grant');
    // The first code and the last both redeem: they name the one session and grant that remain.
    for (const { authorization, back } of [issued[0]!, issued.at(-1)!]) {
      const tokens = await exchange(config, authorization, back);
      assert.equal(tokens.claims()!.sub, id.toString());
    }
    // A browser that does keep the cookie goes on with that same session.
    const keeping = new CookieBrowser(t.base);
    keeping.jar.set('usher_session', browser.jar.get('usher_session')!);
    const first = await keeping.navigate((await authorizationRequest(config)).url.href);
    assert.ok(first.leftTo?.searchParams.get('code'));
    const second = await keeping.navigate((await authorizationRequest(config)).url.href);
    assert.ok(second.leftTo?.searchParams.get('code'));
    assert.equal(await rows(t, 'Session', id.toString()), 1);
    assert.equal(await rows(t, 'Grant', id.toString()), 1);
  });

  describe('parameter sizes', () => {
    test(`ISSUE 40: an authorization request whose state or nonce is over ${PARAMETER_MAX} characters is refused with invalid_request, and no interaction is stored`, async () => {
      const config = await relyingParty(t, await addClient(t));
      const before = await rows(t, 'Interaction');
      for (const name of ['state', 'nonce', 'login_hint'] as const) {
        const authorization = await authorizationRequest(config, { [name]: 'x'.repeat(PARAMETER_MAX + 1) });
        const response = await fetch(authorization.url, { redirect: 'manual' });
        const location = response.headers.get('location');
        const refused = location ? new URL(location) : undefined;
        assert.equal(
          refused?.searchParams.get('error'),
          'invalid_request',
          `${name}: ${response.status} ${location}`,
        );
        assert.match(refused!.searchParams.get('error_description')!, new RegExp(name));
        await response.body?.cancel();
      }
      assert.equal(await rows(t, 'Interaction'), before);
      // At the limit, the request goes on to the sign-in page.
      const fits = await authorizationRequest(config, { state: 'x'.repeat(PARAMETER_MAX) });
      const ok = await fetch(fits.url, { redirect: 'manual' });
      assert.equal(ok.status, 303);
      assert.match(ok.headers.get('location')!, /\/oidc\/interaction\//);
      await ok.body?.cancel();
      assert.equal(await rows(t, 'Interaction'), before + 1);
    });

    test('ISSUE 40: a pushed request with an oversize state is refused with invalid_request, nothing stored', async () => {
      const registered = await addClient(t);
      const before = await rows(t, 'PushedAuthorizationRequest');
      const refused = await pushedRequest(t, registered, { state: 'x'.repeat(PARAMETER_MAX + 1) });
      assert.equal(refused.status, 400);
      assert.equal(((await refused.json()) as { error: string }).error, 'invalid_request');
      assert.equal(await rows(t, 'PushedAuthorizationRequest'), before);
      const fits = await pushedRequest(t, registered);
      assert.equal(fits.status, 201, await fits.text());
      assert.equal(await rows(t, 'PushedAuthorizationRequest'), before + 1);
    });

    test("ISSUE 40: a signed-in person's sign-out with an oversize state is refused, their session row unchanged", async () => {
      const user = newUser();
      const { id } = await register(t, user);
      const registered = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, registered);
      const browser = await signedInBrowser(t, user);
      const stop = await browser.navigate((await authorizationRequest(config)).url.href);
      assert.ok(stop.leftTo?.searchParams.get('code'));
      const sessionRow = async () => {
        const database = openDatabase(t.config.databaseUrl, t.config.database);
        try {
          return await database.db
            .selectFrom('oidc_models')
            .select('payload')
            .where('model', '=', 'Session')
            .where('account_id', '=', id.toString())
            .execute();
        } finally {
          await database.close();
        }
      };
      const before = await sessionRow();
      assert.equal(before.length, 1);
      const url = new URL(`${t.issuer}/session/end`);
      url.searchParams.set('client_id', registered.clientId);
      url.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_URI);
      url.searchParams.set('state', 'x'.repeat(PARAMETER_MAX + 1));
      const refused = await browser.fetch(url.href);
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /invalid_request/);
      assert.deepEqual(await sessionRow(), before);
      // Without a session the same request is refused too, nothing stored.
      const anonymous = await fetch(url, { redirect: 'manual' });
      assert.equal(anonymous.status, 400);
      await anonymous.body?.cancel();
    });
  });

  test('ISSUE 40: every /oidc endpoint is counted under its route template in /metrics, unknown paths under one label', async () => {
    const registered = await addClient(t, { firstParty: true });
    const config = await relyingParty(t, registered);
    await (await fetch(`${t.issuer}/jwks`)).text();
    await (await fetch(`${t.issuer}/session/end`, { redirect: 'manual' })).text();
    await (await fetch((await authorizationRequest(config)).url, { redirect: 'manual' })).text();
    await (await fetch(`${t.issuer}/token`, { method: 'POST' })).text();
    for (const path of ['/nope', '/nope/2', '/auth/x/y'])
      await (await fetch(`${t.issuer}${path}`, { redirect: 'manual' })).text();
    const text = (await t.get('/metrics')).body;
    const routes = new Set(
      [...text.matchAll(/^usher_http_requests_total\{[^}]*route="([^"]+)"/gm)].map((m) => m[1]!),
    );
    for (const route of [
      '/oidc/.well-known/openid-configuration',
      '/oidc/jwks',
      '/oidc/session/end',
      '/oidc/auth',
      '/oidc/token',
      '/oidc/*',
    ])
      assert.ok(routes.has(route), `${route} in ${[...routes].join(', ')}`);
    assert.ok(![...routes].some((route) => route.includes('nope')), 'no raw path as a label');
    assert.doesNotMatch(text, /usher_http_requests_total\{[^}]*route="unmatched"[^}]*\} [1-9]/);
  });

  test("ISSUE 40: a path spelled as the provider's router reads it (any case, one trailing slash) is counted under the route it reaches", async () => {
    const config = await relyingParty(t, await addClient(t));
    /** Requests counted under `route`, whatever their method and status. */
    const counted = async (route: string) => {
      let sum = 0;
      for (const m of (await t.get('/metrics')).body.matchAll(
        /^usher_http_requests_total\{([^}]*)\} ([0-9.]+)$/gm,
      ))
        if (m[1]!.includes(`route="${route}"`)) sum += Number(m[2]);
      return sum;
    };
    const jwks = await counted('/oidc/jwks');
    const auth = await counted('/oidc/auth');
    for (const path of ['/JWKS', '/Jwks/']) {
      const response = await fetch(`${t.issuer}${path}`);
      assert.equal(response.status, 200, path);
      await response.body?.cancel();
    }
    for (const path of ['/AUTH/', '/Auth']) {
      const url = (await authorizationRequest(config)).url;
      url.pathname = `/oidc${path}`;
      const response = await fetch(url, { redirect: 'manual' });
      assert.equal(response.status, 303, path);
      await response.body?.cancel();
    }
    assert.equal(await counted('/oidc/jwks'), jwks + 2);
    assert.equal(await counted('/oidc/auth'), auth + 2);
    const text = (await t.get('/metrics')).body;
    assert.doesNotMatch(text, /route="[^"]*(JWKS|Jwks|AUTH|Auth)/);
  });
});

/** The budgets, on an app and a database of their own: the counts are per address, across tests. */
describeEachStore('OpenID Connect budgets per address', (store) => {
  let own: Store & { drop(): Promise<void> };
  let t: OidcTestApp;
  before(async () => {
    const fresh = await freshDatabaseUrl(store.kind);
    own = { kind: store.kind, url: fresh.url, drop: fresh.drop };
    t = await startOidcApp(own, 'a', {
      oidcLimits: {
        authorizations: { perAddress: 5, windowMs: 15 * 60 * 1000 },
        pushed: { perAddress: 3, windowMs: 15 * 60 * 1000 },
      },
    });
  });
  after(async () => {
    await t.close();
    await own.drop();
  });

  test('ISSUE 40: past OIDC_AUTHORIZATIONS_MAX_PER_ADDRESS authorization requests, 429 with Retry-After and a page; no interaction stored', async () => {
    const config = await relyingParty(t, await addClient(t));
    for (let i = 0; i < 5; i++) {
      const response = await fetch((await authorizationRequest(config)).url, { redirect: 'manual' });
      assert.equal(response.status, 303);
      await response.body?.cancel();
    }
    const stored = await rows(t, 'Interaction');
    assert.equal(stored, 5);
    const refused = await fetch((await authorizationRequest(config)).url, {
      redirect: 'manual',
      headers: { 'accept-language': 'fr' },
    });
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > 0 && retryAfter <= 15 * 60, String(retryAfter));
    assert.match(refused.headers.get('content-type')!, /text\/html/);
    assert.equal(refused.headers.get('content-language'), 'fr');
    assert.match(await refused.text(), /too_many_requests/);
    assert.equal(await rows(t, 'Interaction'), stored);
    // A signed-in browser's request stores a code instead of an interaction: the same budget.
    const user = newUser();
    await register(t, user);
    const firstParty = await relyingParty(t, await addClient(t, { firstParty: true }));
    const browser = await signedInBrowser(t, user);
    const codes = await rows(t, 'AuthorizationCode');
    const signedIn = await browser.fetch((await authorizationRequest(firstParty)).url.href);
    assert.equal(signedIn.status, 429);
    assert.ok(Number(signedIn.headers.get('retry-after')) > 0);
    assert.match(await signedIn.text(), /too_many_requests/);
    assert.equal(await rows(t, 'AuthorizationCode'), codes);
  });

  test('ISSUE 40: past OIDC_PUSHED_REQUESTS_MAX_PER_ADDRESS pushed requests, 429 with Retry-After in JSON; nothing stored', async () => {
    const registered = await addClient(t);
    for (let i = 0; i < 3; i++) {
      const response = await pushedRequest(t, registered);
      assert.equal(response.status, 201, await response.text());
    }
    assert.equal(await rows(t, 'PushedAuthorizationRequest'), 3);
    const refused = await pushedRequest(t, registered);
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    const body = (await refused.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'too_many_requests');
    assert.ok(body.error_description);
    assert.equal(await rows(t, 'PushedAuthorizationRequest'), 3);
  });
});

/**
 * The budgets whatever the path's spelling: oidc-provider's router reads letters in any case,
 * drops one trailing `/` and answers HEAD with the GET route, so each of these stores a row.
 */
describeEachStore('OpenID Connect budgets per address, however the path is spelled', (store) => {
  const AUTHORIZATIONS = ['/auth/', '/AUTH', '/Auth/', 'HEAD /auth'];
  const PUSHED = ['/request/', '/REQUEST'];
  let own: Store & { drop(): Promise<void> };
  let t: OidcTestApp;
  before(async () => {
    const fresh = await freshDatabaseUrl(store.kind);
    own = { kind: store.kind, url: fresh.url, drop: fresh.drop };
    t = await startOidcApp(own, 'a', {
      oidcLimits: {
        authorizations: { perAddress: AUTHORIZATIONS.length, windowMs: 15 * 60 * 1000 },
        pushed: { perAddress: PUSHED.length, windowMs: 15 * 60 * 1000 },
      },
    });
  });
  after(async () => {
    await t.close();
    await own.drop();
  });

  /** An authorization request sent as `variant` says: `[METHOD ]path` under /oidc. */
  async function authorize(config: client.Configuration, variant: string): Promise<Response> {
    const [method, path] = variant.includes(' ') ? variant.split(' ') : ['GET', variant];
    const url = (await authorizationRequest(config)).url;
    url.pathname = `/oidc${path}`;
    return fetch(url, { method, redirect: 'manual' });
  }

  test('ISSUE 40: /oidc/auth/, /oidc/AUTH, /oidc/Auth/ and HEAD /oidc/auth each take one from the authorization budget; past it, 429 and no interaction', async () => {
    const config = await relyingParty(t, await addClient(t));
    for (const [i, variant] of AUTHORIZATIONS.entries()) {
      const response = await authorize(config, variant);
      assert.equal(response.status, 303, variant);
      assert.match(response.headers.get('location')!, /\/oidc\/interaction\//, variant);
      await response.body?.cancel();
      assert.equal(await rows(t, 'Interaction'), i + 1, `${variant} stores one interaction`);
    }
    // They were all counted: the budget is spent for the plain path too.
    const plain = await authorize(config, '/auth');
    assert.equal(plain.status, 429);
    await plain.body?.cancel();
    for (const variant of AUTHORIZATIONS) {
      const refused = await authorize(config, variant);
      assert.equal(refused.status, 429, variant);
      assert.ok(Number(refused.headers.get('retry-after')) > 0, variant);
      assert.match(refused.headers.get('content-type')!, /text\/html/, variant);
      if (!variant.startsWith('HEAD')) assert.match(await refused.text(), /too_many_requests/, variant);
      else await refused.body?.cancel();
    }
    assert.equal(await rows(t, 'Interaction'), AUTHORIZATIONS.length, 'nothing stored past the budget');
  });

  test('ISSUE 40: /oidc/request/ and /oidc/REQUEST each take one from the pushed-request budget; past it, 429 in JSON and no row', async () => {
    const registered = await addClient(t);
    for (const [i, path] of PUSHED.entries()) {
      const response = await pushedRequest(t, registered, {}, path);
      assert.equal(response.status, 201, `${path}: ${await response.text()}`);
      assert.equal(await rows(t, 'PushedAuthorizationRequest'), i + 1, path);
    }
    for (const path of ['/request', ...PUSHED]) {
      const refused = await pushedRequest(t, registered, {}, path);
      assert.equal(refused.status, 429, path);
      assert.ok(Number(refused.headers.get('retry-after')) > 0, path);
      assert.equal(((await refused.json()) as { error: string }).error, 'too_many_requests', path);
    }
    assert.equal(
      await rows(t, 'PushedAuthorizationRequest'),
      PUSHED.length,
      'nothing stored past the budget',
    );
  });
});
