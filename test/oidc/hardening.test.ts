// Usher's OpenID Connect provider refusing what it must: requests without PKCE, unregistered
// redirect URIs, spent codes; what it must not keep (codes, tokens, secrets, private keys in clear,
// credentials in log lines); what it answers without ENCRYPTION_KEY; bad input to its own routes;
// and the headers that keep its pages out of frames and caches.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import { openDatabase } from '../../src/db/database.ts';
import { asUser, newUser, register, signIn } from '../helpers/app.ts';
import { assertScriptsAreFiles } from '../helpers/pages.ts';
import { describeEachStore, freshDatabaseUrl, type Store } from '../helpers/stores.ts';
import {
  API,
  addClient,
  answerConsent,
  authorizationRequest,
  CookieBrowser,
  exchange,
  type OidcTestApp,
  REDIRECT_URI,
  relyingParty,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

/** A refresh token is issued only with offline_access, which oidc-provider honours only with prompt=consent. */
const OFFLINE = { scope: 'openid email offline_access', prompt: 'consent' };

const digest = (value: string) => createHash('sha256').update(value).digest('base64url');

/** The log lines an app wrote at level 50 (error) or above: a 500, or a failure nobody answered. */
function errorLines(t: OidcTestApp): string[] {
  return t.logs
    .join('')
    .split('\n')
    .filter((line) => /"level":(5|6)\d/.test(line));
}

async function signedInBrowser(t: OidcTestApp) {
  const user = newUser();
  const { id } = await register(t, user);
  const browser = new CookieBrowser(t.base);
  assert.equal((await browser.signIn(user)).status, 200);
  return { user, id, browser };
}

/** An authorization request answered (consent given when a page asks): where the browser is sent back. */
async function authorize(
  config: client.Configuration,
  browser: CookieBrowser,
  params: Record<string, string> = {},
) {
  const authorization = await authorizationRequest(config, params);
  let stop = await browser.navigate(authorization.url.href);
  if (!stop.leftTo) {
    assert.equal(stop.status, 200, stop.body);
    stop = await answerConsent(browser, stop, 'allow');
  }
  assert.ok(stop.leftTo, 'the browser is sent back to the app');
  return { authorization, callback: stop.leftTo };
}

/** A raw token request with client_secret_basic, as any client could send it. */
function tokenRequest(
  t: OidcTestApp,
  registered: { clientId: string; clientSecret?: string },
  body: Record<string, string>,
): Promise<Response> {
  const basic = Buffer.from(`${registered.clientId}:${registered.clientSecret}`).toString('base64');
  return fetch(`${t.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: new URLSearchParams(body),
  });
}

/** The OAuth error code an openid-client call was refused with. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof client.ResponseBodyError) return error.error;
    throw error;
  }
  assert.fail('the request was expected to be refused');
}

/** Every row of a table, as text (bigints as digits). */
async function tableText(t: OidcTestApp, table: 'oidc_models' | 'oidc_clients' | 'oidc_keys') {
  const database = openDatabase(t.config.databaseUrl, t.config.database);
  try {
    const rows = await database.db.selectFrom(table).selectAll().execute();
    return {
      rows: rows as Record<string, unknown>[],
      text: JSON.stringify(rows, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)),
    };
  } finally {
    await database.close();
  }
}

const PROVIDER_CSP = /(^|;)\s*frame-ancestors 'none'/;

describeEachStore('OpenID Connect hardening', (store) => {
  let t: OidcTestApp;
  before(async () => {
    t = await startOidcApp(store, 'a');
  });
  after(() => t.close());

  describe('PKCE', () => {
    for (const kind of ['confidential', 'public'] as const) {
      test(`${kind} client: an authorization request without code_challenge is refused with invalid_request, never a code`, async () => {
        const config = await relyingParty(
          t,
          await addClient(t, { firstParty: true, public: kind === 'public' }),
        );
        const { browser } = await signedInBrowser(t);
        const state = client.randomState();
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT_URI,
          scope: 'openid',
          state,
          nonce: client.randomNonce(),
        });
        const stop = await browser.navigate(url.href);
        assert.ok(stop.leftTo, `the error goes back to the app (${stop.status} ${stop.body.slice(0, 200)})`);
        assert.equal(stop.leftTo.origin + stop.leftTo.pathname, REDIRECT_URI);
        assert.equal(stop.leftTo.searchParams.get('error'), 'invalid_request');
        assert.match(stop.leftTo.searchParams.get('error_description') ?? '', /PKCE|code_challenge/);
        assert.equal(stop.leftTo.searchParams.get('state'), state);
        assert.equal(stop.leftTo.searchParams.get('code'), null);
        // The same request with a challenge gets a code: the refusal above is PKCE's.
        const { callback } = await authorize(config, browser, { scope: 'openid' });
        assert.ok(callback.searchParams.get('code'));
      });
    }

    test('code_challenge_method=plain is refused: invalid_request, never a code', async () => {
      const config = await relyingParty(t, await addClient(t, { firstParty: true }));
      const { browser } = await signedInBrowser(t);
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        code_challenge: verifier,
        code_challenge_method: 'plain',
        state: client.randomState(),
      });
      const stop = await browser.navigate(url.href);
      assert.ok(stop.leftTo, `the error goes back to the app (${stop.status} ${stop.body.slice(0, 200)})`);
      assert.equal(stop.leftTo.searchParams.get('error'), 'invalid_request');
      assert.equal(stop.leftTo.searchParams.get('code'), null);
    });

    test('a code exchanged with the wrong verifier is refused with invalid_grant', async () => {
      const registered = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, registered);
      const { browser } = await signedInBrowser(t);
      const { authorization, callback } = await authorize(config, browser, { scope: 'openid' });
      const wrong = await refusal(
        client.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: client.randomPKCECodeVerifier(),
          expectedState: authorization.state,
          expectedNonce: authorization.nonce,
        }),
      );
      assert.equal(wrong, 'invalid_grant');
      // Without any verifier at all: refused too.
      const none = await tokenRequest(t, registered, {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: REDIRECT_URI,
      });
      assert.equal(none.status, 400);
      assert.match(((await none.json()) as { error: string }).error, /^invalid_(grant|request)$/);
    });
  });

  describe('redirect URIs', () => {
    for (const [what, uri] of [
      ['an unregistered redirect_uri', 'https://attacker.example/callback'],
      ['a redirect_uri differing by a trailing slash', `${REDIRECT_URI}/`],
      ['a redirect_uri differing by a query', `${REDIRECT_URI}?next=https://attacker.example`],
      ['a redirect_uri differing by its port', REDIRECT_URI.replace(':9/', ':10/')],
    ] as const) {
      test(`${what} gets Usher's error page (400 HTML), never a redirect`, async () => {
        const config = await relyingParty(t, await addClient(t, { firstParty: true }));
        const { browser } = await signedInBrowser(t);
        const authorization = await authorizationRequest(config, { scope: 'openid', redirect_uri: uri });
        const response = await browser.fetch(authorization.url.href);
        const body = await response.text();
        assert.equal(response.status, 400, body);
        assert.equal(response.headers.get('location'), null);
        assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
        assert.match(body, /This sign-in cannot go on/);
        assert.match(body, /redirect_uri/);
        // Usher's own files only: nothing from googleapis or any other host.
        assert.doesNotMatch(body, /googleapis|gstatic|fonts\.|cdn/i);
        for (const [, link] of body.matchAll(/(?:src|href|action)="([^"]*)"/g))
          assert.match(link!, /^\/[^/]/, `a link off Usher: ${link}`);
        assert.ok(!body.includes('attacker.example'), 'the bad address is not turned into a link');
      });
    }
  });

  describe('the error page', () => {
    test('what a request says is escaped on the error page (an unknown client, a hostile redirect_uri)', async () => {
      const hostile = '<img src=x onerror=alert(1)>';
      const registered = await addClient(t, { firstParty: true });
      for (const [what, params] of [
        ['an unknown client', { client_id: hostile, redirect_uri: REDIRECT_URI }],
        [
          'a hostile redirect_uri',
          { client_id: registered.clientId, redirect_uri: `https://x.example/${hostile}` },
        ],
        [
          'a hostile scope',
          { client_id: registered.clientId, redirect_uri: `${REDIRECT_URI}/${hostile}`, scope: hostile },
        ],
      ] as const) {
        const url = new URL(`${t.issuer}/auth`);
        const all: Record<string, string> = {
          response_type: 'code',
          scope: 'openid',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
          ...params,
        };
        for (const [name, value] of Object.entries(all)) url.searchParams.set(name, value);
        const response = await fetch(url, { redirect: 'manual' });
        const body = await response.text();
        assert.equal(response.status, 400, `${what}: ${body.slice(0, 300)}`);
        assert.equal(response.headers.get('location'), null, what);
        assert.ok(!body.includes(hostile), `${what}: markup from the request on the page`);
      }
    });
  });

  describe('codes are spent once', () => {
    test('a second exchange fails with invalid_grant and revokes the tokens of the first', async () => {
      const registered = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, registered);
      const { browser, id } = await signedInBrowser(t);
      const { authorization, callback } = await authorize(config, browser, OFFLINE);
      const tokens = await exchange(config, authorization, callback);
      assert.ok(tokens.refresh_token, 'offline_access gave a refresh token');
      assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true);
      assert.equal(
        (await client.fetchUserInfo(config, tokens.access_token, id.toString())).sub,
        id.toString(),
      );

      assert.equal(await refusal(exchange(config, authorization, callback)), 'invalid_grant');

      assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, false);
      assert.equal((await client.tokenIntrospection(config, tokens.refresh_token)).active, false);
      assert.equal(await refusal(client.refreshTokenGrant(config, tokens.refresh_token)), 'invalid_grant');
      await assert.rejects(client.fetchUserInfo(config, tokens.access_token, id.toString()));
    });

    test('two simultaneous exchanges of one code: exactly one gets tokens (several rounds)', async () => {
      const registered = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, registered);
      const { browser } = await signedInBrowser(t);
      for (let round = 0; round < 6; round++) {
        const { authorization, callback } = await authorize(config, browser, OFFLINE);
        const body = {
          grant_type: 'authorization_code',
          code: callback.searchParams.get('code')!,
          redirect_uri: REDIRECT_URI,
          code_verifier: authorization.verifier,
        };
        const answers = await Promise.all([
          tokenRequest(t, registered, body),
          tokenRequest(t, registered, body),
        ]);
        const statuses = answers.map((a) => a.status).sort();
        const bodies = (await Promise.all(answers.map((a) => a.json()))) as Record<string, unknown>[];
        assert.deepEqual(statuses, [200, 400], `round ${round}: ${JSON.stringify(bodies)}`);
        const refused = bodies.find((b) => b.error !== undefined)!;
        assert.equal(refused.error, 'invalid_grant', `round ${round}`);
        const issued = bodies.find((b) => b.access_token !== undefined)!;
        assert.equal(typeof issued.id_token, 'string');
        // The second use revoked the grant, whichever finished first: the winner's tokens go too.
        const introspected = await client.tokenIntrospection(config, issued.access_token as string);
        assert.equal(introspected.active, false, `round ${round}: the winner's access token is revoked`);
        assert.equal(
          await refusal(client.refreshTokenGrant(config, issued.refresh_token as string)),
          'invalid_grant',
        );
      }
    });
  });

  describe('refresh tokens and clients', () => {
    test('a refresh token used twice: refused, and the grant it belongs to is revoked', async () => {
      const config = await relyingParty(t, await addClient(t, { firstParty: true }));
      const { browser } = await signedInBrowser(t);
      const { authorization, callback } = await authorize(config, browser, OFFLINE);
      const first = await exchange(config, authorization, callback);
      const second = await client.refreshTokenGrant(config, first.refresh_token!);
      assert.ok(second.refresh_token && second.refresh_token !== first.refresh_token, 'rotated');
      assert.equal((await client.tokenIntrospection(config, second.access_token)).active, true);

      assert.equal(await refusal(client.refreshTokenGrant(config, first.refresh_token!)), 'invalid_grant');
      // The reuse looks like a stolen token: what was issued after it is revoked as well.
      assert.equal(await refusal(client.refreshTokenGrant(config, second.refresh_token!)), 'invalid_grant');
      assert.equal((await client.tokenIntrospection(config, second.access_token)).active, false);
    });

    test('two simultaneous refreshes with one refresh token: exactly one gets tokens (several rounds)', async () => {
      const registered = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, registered);
      const { browser } = await signedInBrowser(t);
      for (let round = 0; round < 6; round++) {
        const { authorization, callback } = await authorize(config, browser, OFFLINE);
        const tokens = await exchange(config, authorization, callback);
        const body = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! };
        const answers = await Promise.all([
          tokenRequest(t, registered, body),
          tokenRequest(t, registered, body),
        ]);
        const bodies = (await Promise.all(answers.map((a) => a.json()))) as Record<string, unknown>[];
        assert.deepEqual(
          answers.map((a) => a.status).sort(),
          [200, 400],
          `round ${round}: ${JSON.stringify(bodies)}`,
        );
        assert.equal(bodies.find((b) => b.error !== undefined)!.error, 'invalid_grant');
      }
    });

    test('a code is good only for the client it was issued to, authenticated', async () => {
      const mine = await addClient(t, { firstParty: true });
      const other = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, mine);
      const { browser } = await signedInBrowser(t);
      const { authorization, callback } = await authorize(config, browser, { scope: 'openid' });
      const body = {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: REDIRECT_URI,
        code_verifier: authorization.verifier,
      };
      const stolen = await tokenRequest(t, other, body);
      assert.equal(stolen.status, 400);
      assert.equal(((await stolen.json()) as { error: string }).error, 'invalid_grant');
      const wrongSecret = await tokenRequest(
        t,
        { clientId: mine.clientId, clientSecret: other.clientSecret },
        body,
      );
      assert.equal(wrongSecret.status, 401);
      assert.equal(((await wrongSecret.json()) as { error: string }).error, 'invalid_client');
      const noSecret = await fetch(`${t.issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...body, client_id: mine.clientId }),
      });
      assert.equal(noSecret.status, 401);
      await noSecret.body?.cancel();
      // Nothing above spent the code: its own client, authenticated, still gets the tokens.
      const own = await tokenRequest(t, mine, body);
      assert.equal(own.status, 200);
      await own.body?.cancel();
    });
  });

  describe('what is stored and logged', () => {
    test('no code, access token, refresh token, client secret or private key is kept in clear; no credential in the logs', async () => {
      const registered = await addClient(t, { firstParty: true });
      const config = await relyingParty(t, registered);
      const { browser } = await signedInBrowser(t);
      const loginHint = `hint-${digest(String(Math.random())).slice(0, 16)}@example.com`;
      // One flow with an opaque access token, one with a JWT access token for the API.
      const opaque = await authorize(config, browser, { ...OFFLINE, login_hint: loginHint });
      const code1 = opaque.callback.searchParams.get('code')!;
      const tokens1 = await exchange(config, opaque.authorization, opaque.callback);
      const jwt = await authorize(config, browser, { ...OFFLINE, resource: API });
      const code2 = jwt.callback.searchParams.get('code')!;
      const tokens2 = await exchange(config, jwt.authorization, jwt.callback);
      assert.match(tokens2.access_token, /^ey[^.]+\.[^.]+\.[^.]+$/, 'a JWT access token');
      const refreshed = await client.refreshTokenGrant(config, tokens1.refresh_token!);
      // An authorization request with an id_token_hint: a credential in a query string.
      const hinted = await authorize(config, browser, { scope: 'openid', id_token_hint: tokens1.id_token! });
      assert.ok(hinted.callback.searchParams.get('code'));

      const secrets = {
        code1,
        code2,
        access1: tokens1.access_token,
        access2: tokens2.access_token,
        refresh1: tokens1.refresh_token!,
        refresh2: tokens2.refresh_token!,
        refreshedAccess: refreshed.access_token,
        refreshedRefresh: refreshed.refresh_token!,
        idToken: tokens1.id_token!,
        clientSecret: registered.clientSecret!,
      };
      for (const [name, value] of Object.entries(secrets)) assert.ok(value && value.length >= 20, name);

      const models = await tableText(t, 'oidc_models');
      for (const [name, value] of Object.entries(secrets))
        assert.ok(!models.text.includes(value), `oidc_models holds ${name} in clear`);
      // The rows are there, found by digests of the values (so the check above is not vacuous).
      const digests = new Set(models.rows.map((row) => `${row.model} ${row.id_digest}`));
      assert.ok(digests.has(`AuthorizationCode ${digest(code1)}`), 'the code is kept as its digest');
      assert.ok(digests.has(`AccessToken ${digest(tokens1.access_token)}`), 'the access token as its digest');
      assert.ok(
        digests.has(`RefreshToken ${digest(refreshed.refresh_token!)}`),
        'the refresh token as its digest',
      );

      const clients = await tableText(t, 'oidc_clients');
      assert.ok(clients.text.includes(registered.clientId), 'the client is stored');
      assert.ok(
        !clients.text.includes(registered.clientSecret!),
        'oidc_clients holds a client secret in clear',
      );

      const keys = await tableText(t, 'oidc_keys');
      assert.ok(keys.rows.length >= 3, 'the signing keys and the cookie key are stored');
      assert.doesNotMatch(
        keys.text,
        /\\?"d\\?"\s*:|PRIVATE KEY|"kty"/,
        'oidc_keys holds private key material in clear',
      );
      for (const row of keys.rows) {
        assert.throws(() => JSON.parse(String(row.sealed)), `the key ${row.kid} is stored as JSON`);
      }

      const logs = t.logs.join('');
      assert.match(logs, /"url":"\/oidc\/auth"/, 'the authorization requests are logged, as their path');
      for (const [name, value] of Object.entries({ ...secrets, loginHint }))
        assert.ok(!logs.includes(value), `a log line holds ${name}`);
      assert.doesNotMatch(logs, /\/oidc\/auth\?|login_hint|id_token_hint|code_challenge/);
    });
  });

  describe("bad input to Usher's own routes", () => {
    for (const profile of ['a', 'b'] as const) {
      describe(`profile ${profile}`, () => {
        let p: OidcTestApp;
        before(async () => {
          p = profile === 'a' ? t : await startOidcApp(store, profile);
        });
        after(async () => {
          if (profile !== 'a') await p.close();
        });

        /** A browser with no Usher session at the login page of a new interaction: its uid. */
        async function atLoginPage() {
          const config = await relyingParty(p, await addClient(p));
          const browser = new CookieBrowser(p.base);
          const authorization = await authorizationRequest(config);
          const page = await browser.navigate(authorization.url.href);
          assert.equal(page.status, 200, page.body);
          const uid = /\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(page.url)?.[1];
          assert.ok(uid, page.url);
          return { browser, uid, page };
        }

        const sameSite = (browser: CookieBrowser) => ({
          'content-type': 'application/json',
          origin: p.base,
          'sec-fetch-site': 'same-origin',
          cookie: browser.cookieHeader,
        });

        test('an unknown uid, or one without the interaction cookie: the 400 page, or 400 INVALID_TOKEN', async () => {
          const { browser, uid } = await atLoginPage();
          // The interaction's own uid with its cookie works (the control).
          const details = await browser.fetch(`/oidc/interaction/${uid}/details`);
          assert.equal(details.status, 200);
          assert.equal(((await details.json()) as { prompt: string }).prompt, 'login');

          const other = `${uid.slice(0, -1)}${uid.endsWith('A') ? 'B' : 'A'}`;
          for (const [what, target, cookie] of [
            ['an unknown uid, with the cookie of another interaction', other, browser.cookieHeader],
            ['the uid without the interaction cookie', uid, ''],
          ] as const) {
            const page = await fetch(`${p.base}/oidc/interaction/${target}`, {
              headers: { cookie },
              redirect: 'manual',
            });
            const html = await page.text();
            assert.equal(page.status, 400, `${what}: ${html.slice(0, 200)}`);
            assert.match(page.headers.get('content-type') ?? '', /^text\/html/, what);
            assert.match(html, /interaction_expired/, what);
            assert.equal(page.headers.get('location'), null, what);
            for (const [path, method, body] of [
              ['details', 'GET', undefined],
              ['consent', 'POST', { decision: 'allow' }],
              ['cancel', 'POST', {}],
            ] as const) {
              const response = await fetch(`${p.base}/oidc/interaction/${target}/${path}`, {
                method,
                headers: { ...sameSite(browser), cookie },
                ...(body === undefined ? {} : { body: JSON.stringify(body) }),
              });
              assert.equal(response.status, 400, `${what} ${path}`);
              assert.equal(
                ((await response.json()) as { error: string }).error,
                'INVALID_TOKEN',
                `${what} ${path}`,
              );
            }
          }
          // The interaction was not spent by the refusals: its page still answers.
          assert.equal((await browser.fetch(`/oidc/interaction/${uid}/details`)).status, 200);
          assert.deepEqual(errorLines(p), []);
        });

        test('a uid no interaction can have (bad characters, too long): 404 NOT_FOUND, never a 500', async () => {
          const { browser } = await atLoginPage();
          // A path id that cannot name anything is a 404 throughout Usher (plugins/errors.ts).
          for (const bad of ['abc.def', 'abc%20def', "a'b", 'a'.repeat(65), 'abc%00def', 'a'.repeat(250)]) {
            for (const [suffix, method] of [
              ['', 'GET'],
              ['/details', 'GET'],
              ['/consent', 'POST'],
              ['/cancel', 'POST'],
            ] as const) {
              const what = `${method} ${bad.slice(0, 20)}${suffix}`;
              const response = await fetch(`${p.base}/oidc/interaction/${bad}${suffix}`, {
                method,
                headers: sameSite(browser),
                ...(method === 'POST' ? { body: JSON.stringify({ decision: 'allow' }) } : {}),
              });
              const text = await response.text();
              if (bad.length > 200) {
                // Longer than any path segment the router reads: refused one way or another.
                assert.ok(response.status === 400 || response.status === 404, `${what}: ${response.status}`);
              } else {
                assert.equal(response.status, 404, `${what}: ${text.slice(0, 200)}`);
                assert.equal((JSON.parse(text) as { error: string }).error, 'NOT_FOUND', what);
              }
            }
          }
          assert.deepEqual(errorLines(p), []);
        });

        test('consent: bad bodies 400 VALIDATION_FAILED, cross-site 403 FORBIDDEN, without the Usher session 401', async () => {
          const config = await relyingParty(p, await addClient(p));
          const { browser } = await signedInBrowser(p);
          const authorization = await authorizationRequest(config);
          const page = await browser.navigate(authorization.url.href);
          assert.equal(page.status, 200, page.body);
          const path = new URL(page.url).pathname;

          for (const body of [
            {},
            { decision: 'maybe' },
            { decision: 'ALLOW' },
            { decision: 'allow', scopes: ['openid'] },
            { decision: ['allow'] },
            [],
            'allow',
          ]) {
            const response = await browser.postJson(`${path}/consent`, body);
            assert.equal(response.status, 400, JSON.stringify(body));
            assert.equal(((await response.json()) as { error: string }).error, 'VALIDATION_FAILED');
          }
          const broken = await browser.fetch(`${path}/consent`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
            body: '{"decision":',
          });
          assert.equal(broken.status, 400);
          await broken.body?.cancel();

          for (const headers of [
            { 'sec-fetch-site': 'cross-site' },
            { 'sec-fetch-site': 'same-site' },
            { origin: 'https://attacker.example' },
            { origin: 'null' },
          ]) {
            for (const action of ['consent', 'cancel']) {
              const response = await browser.fetch(`${path}/${action}`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', ...headers },
                body: JSON.stringify({ decision: 'allow' }),
              });
              assert.equal(response.status, 403, `${action} ${JSON.stringify(headers)}`);
              assert.equal(((await response.json()) as { error: string }).error, 'FORBIDDEN');
            }
          }

          // The browser's Usher session gone (its cookie dropped): the consent is not taken.
          const session = browser.jar.get('usher_session');
          assert.ok(session);
          browser.jar.delete('usher_session');
          const anonymous = await browser.postJson(`${path}/consent`, { decision: 'allow' });
          assert.equal(anonymous.status, 401);
          assert.equal(((await anonymous.json()) as { error: string }).error, 'UNAUTHENTICATED');

          // With the session back, the same interaction is still answerable (nothing above spent it).
          browser.jar.set('usher_session', session);
          const landed = await answerConsent(browser, page, 'allow');
          assert.ok(landed.leftTo?.searchParams.get('code'));
          assert.deepEqual(errorLines(p), []);
        });

        test('POST /api/session/token: bad bodies 400, no session 401', async () => {
          const user = newUser();
          await register(p, user);
          const token = await signIn(p, user);
          const as = asUser(p, token);
          const ok = await as.post('/api/session/token', { audience: API });
          assert.equal(ok.statusCode, 200, ok.body);
          for (const body of [
            {},
            { audience: '' },
            { audience: 'https://attacker.example' },
            { audience: `${API}/` },
            { audience: API.toUpperCase() },
            { audience: 42 },
            { audience: [API] },
            { audience: API, scope: 'admin' },
            { audience: `${API}${'x'.repeat(600)}` },
            [],
            null,
          ]) {
            const response = await as.post('/api/session/token', body);
            assert.equal(response.statusCode, 400, `${JSON.stringify(body)}: ${response.body}`);
            assert.equal(response.json().error, 'VALIDATION_FAILED', JSON.stringify(body));
          }
          const broken = await p.inject({
            method: 'POST',
            url: '/api/session/token',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            payload: '{"audience":',
          });
          assert.equal(broken.statusCode, 400);
          const anonymous = await p.post('/api/session/token', { audience: API });
          assert.equal(anonymous.statusCode, 401);
          assert.equal(anonymous.json().error, 'UNAUTHENTICATED');
          const badBearer = await asUser(p, 'not-a-session').post('/api/session/token', { audience: API });
          assert.equal(badBearer.statusCode, 401);
          assert.deepEqual(errorLines(p), []);
        });
      });
    }
  });

  describe('security headers', () => {
    test("the provider's answers and the interaction page: no framing, nosniff, no inline script, not cached", async () => {
      const registered = await addClient(t);
      const config = await relyingParty(t, registered);

      const discovery = await fetch(`${t.issuer}/.well-known/openid-configuration`);
      await discovery.body?.cancel();
      const jwks = await fetch(`${t.issuer}/jwks`);
      await jwks.body?.cancel();
      const bad = await authorizationRequest(config, { redirect_uri: 'https://attacker.example/cb' });
      const errorPage = await fetch(bad.url.href, { redirect: 'manual' });
      assert.equal(errorPage.status, 400);
      await errorPage.body?.cancel();
      for (const [what, response] of [
        ['discovery', discovery],
        ['jwks', jwks],
        ['the error page', errorPage],
      ] as const) {
        assert.match(response.headers.get('content-security-policy') ?? '', PROVIDER_CSP, what);
        assert.doesNotMatch(response.headers.get('content-security-policy') ?? '', /unsafe-inline/, what);
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff', what);
      }
      assert.equal(errorPage.headers.get('cache-control'), 'no-store');

      const browser = new CookieBrowser(t.base);
      const authorization = await authorizationRequest(config);
      const start = await browser.fetch(authorization.url.href);
      assert.equal(start.status, 303);
      const pageResponse = await browser.fetch(start.headers.get('location')!);
      assert.equal(pageResponse.status, 200);
      assert.match(pageResponse.headers.get('content-type') ?? '', /^text\/html/);
      const html = await pageResponse.text();
      const csp = pageResponse.headers.get('content-security-policy') ?? '';
      assert.match(csp, PROVIDER_CSP);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.match(csp, /script-src 'self'/);
      assert.equal(pageResponse.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(pageResponse.headers.get('cache-control'), 'no-store');
      // No inline script: every script is a file, but the inert data block of the page's texts.
      assertScriptsAreFiles(html, 'the interaction page');
      assert.doesNotMatch(html, /\son[a-z]+=/i, 'no inline event handlers on the page');

      // The token endpoint, refusing and answering: never cacheable.
      const refused = await tokenRequest(t, registered, {
        grant_type: 'authorization_code',
        code: 'no-such-code',
        redirect_uri: REDIRECT_URI,
        code_verifier: client.randomPKCECodeVerifier(),
      });
      assert.equal(refused.status, 400);
      await refused.body?.cancel();
      assert.equal(refused.headers.get('cache-control'), 'no-store');
      const firstParty = await addClient(t, { firstParty: true });
      const fpConfig = await relyingParty(t, firstParty);
      const { browser: signedIn } = await signedInBrowser(t);
      const { authorization: a, callback } = await authorize(fpConfig, signedIn, { scope: 'openid' });
      const issued = await tokenRequest(t, firstParty, {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: REDIRECT_URI,
        code_verifier: a.verifier,
      });
      assert.equal(issued.status, 200);
      await issued.body?.cancel();
      assert.equal(issued.headers.get('cache-control'), 'no-store');
      assert.match(issued.headers.get('content-security-policy') ?? '', PROVIDER_CSP);
    });
  });
});

/** ENCRYPTION_KEY unset: on PostgreSQL the provider cannot open its keys (503); on SQLite a key file serves. */
describeEachStore('OpenID Connect without ENCRYPTION_KEY', (store) => {
  let own: Store & { drop(): Promise<void> };
  let t: OidcTestApp;
  before(async () => {
    // A database of its own: keys sealed under the test key elsewhere would not open with a key file.
    const fresh = await freshDatabaseUrl(store.kind);
    own = { kind: store.kind, url: fresh.url, drop: fresh.drop };
    t = await startOidcApp(own, 'a', { encryptionKey: undefined });
  });
  after(async () => {
    await t.close();
    await own.drop();
  });

  test(
    store.kind === 'postgres'
      ? 'PostgreSQL: discovery, JWKS and the interaction routes answer 503 UNAVAILABLE; session tokens 503; a warning is logged'
      : 'SQLite: the provider works with the key file beside the database',
    async () => {
      const user = newUser();
      await register(t, user);
      const session = await signIn(t, user);
      const token = await asUser(t, session).post('/api/session/token', { audience: API });
      const discovery = await fetch(`${t.issuer}/.well-known/openid-configuration`);
      const jwks = await fetch(`${t.issuer}/jwks`);
      if (store.kind === 'postgres') {
        for (const [what, response] of [
          ['discovery', discovery],
          ['jwks', jwks],
        ] as const) {
          assert.equal(response.status, 503, what);
          const body = (await response.json()) as { error: string; message: string };
          assert.equal(body.error, 'UNAVAILABLE', what);
          assert.match(body.message, /ENCRYPTION_KEY/, what);
        }
        const auth = await fetch(`${t.issuer}/auth?client_id=x&response_type=code&scope=openid`, {
          redirect: 'manual',
        });
        assert.equal(auth.status, 503);
        await auth.body?.cancel();
        const details = await fetch(`${t.base}/oidc/interaction/abcdef/details`);
        assert.equal(details.status, 503);
        assert.equal(((await details.json()) as { error: string }).error, 'UNAVAILABLE');
        assert.equal(token.statusCode, 503, token.body);
        assert.equal(token.json().error, 'UNAVAILABLE');
        const warnings = t.logs.filter((line) => /"level":40/.test(line));
        assert.ok(
          warnings.some((line) => /ENCRYPTION_KEY is not set: the OpenID Connect provider/.test(line)),
          warnings.join('\n'),
        );
        // 5xx answers are logged as errors (plugins/errors.ts); none of them is anything but this 503.
        assert.deepEqual(
          errorLines(t).filter((line) => !/"code":"UNAVAILABLE","statusCode":503/.test(line)),
          [],
        );
      } else {
        assert.equal(discovery.status, 200);
        assert.equal(((await discovery.json()) as { issuer: string }).issuer, t.issuer);
        assert.equal(jwks.status, 200);
        assert.ok(((await jwks.json()) as { keys: unknown[] }).keys.length >= 2);
        assert.equal(token.statusCode, 200, token.body);
        const path = own.url.slice('sqlite:'.length);
        assert.ok(existsSync(join(dirname(path), 'usher.key')), 'the key file beside the database');
        assert.ok(!t.logs.some((line) => /the OpenID Connect provider \(\/oidc\) answers 503/.test(line)));
      }
    },
  );
});
