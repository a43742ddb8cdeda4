// Two instances of Usher behind one PUBLIC_URL, on one PostgreSQL database: whatever one issued,
// the other honours (codes, refresh tokens, interactions, access tokens, the first visit of a
// prompt=login), and both publish the same keys, before and after a rotation. openid-client
// discovers through instance 1 and, where a test says so, sends its requests to instance 2
// instead (a load balancer's choice).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import * as jose from 'jose';
import * as client from 'openid-client';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import { newUser, register } from '../helpers/app.ts';
import { describeUnless } from '../helpers/skip.ts';
import { freshDatabaseUrl, postgresAvailable, type Store } from '../helpers/stores.ts';
import {
  API,
  addClient,
  answerConsent,
  authorizationRequest,
  CookieBrowser,
  exchange,
  type OidcTestApp,
  relyingParty,
  startOidcApp,
} from '../helpers/usher-oidc.ts';

/** A GET with the Host header a proxy in front would send (fetch does not let a caller set Host). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { host } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
}

const TITLE = 'OpenID Connect on two instances of one database';

describeUnless(
  "several instances share a database only on PostgreSQL: a SQLite database is one instance's file",
  `${TITLE} [sqlite]`,
  () => {},
);

describeUnless(postgresAvailable ? false : 'TEST_DATABASE_URL is not set', `${TITLE} [postgres]`, () => {
  let now = Date.now();
  const clock = () => now;
  let store: Store & { drop(): Promise<void> };
  let one: OidcTestApp;
  let two: OidcTestApp;
  before(async () => {
    const fresh = await freshDatabaseUrl('postgres');
    store = { kind: 'postgres', url: fresh.url, drop: fresh.drop };
    one = await startOidcApp(store, 'a', {}, { clock });
    // Its own port, the same PUBLIC_URL: the same issuer.
    two = await startOidcApp(store, 'a', {}, { clock, publicUrl: one.base });
  });
  after(async () => {
    await one?.close();
    await two?.close();
    await store?.drop();
  });

  /** openid-client's configuration (discovered through instance 1) sending every request to `to`. */
  async function relyingPartyAt(to: OidcTestApp, registered: { clientId: string; clientSecret?: string }) {
    const config = await relyingParty(one, registered);
    const sent: string[] = [];
    config[client.customFetch] = (url, options) => {
      const target = url.replace(one.base, to.base);
      sent.push(target);
      return fetch(target, options as RequestInit);
    };
    return { config, sent };
  }

  const logged = (t: OidcTestApp, path: string) =>
    t.logs.filter((line) => line.includes(`"url":"${path}"`) && line.includes('"statusCode":200')).length;

  async function jwksOf(t: OidcTestApp) {
    const response = await fetch(`${t.base}/oidc/jwks`);
    assert.equal(response.status, 200);
    return (await response.json()) as jose.JSONWebKeySet;
  }

  test('the same issuer, discovery and JWKS on both instances', async () => {
    assert.equal(two.issuer, one.issuer);
    assert.notEqual(two.base, one.base);
    // Instance 1 first makes the new database's keys (instances starting together are the next test's).
    await jwksOf(one);
    // Behind a load balancer both instances see the public Host: the same document from both.
    const publicHost = new URL(one.base).host;
    const path = '/oidc/.well-known/openid-configuration';
    const [discovery1, discovery2] = await Promise.all([
      getWithHost(`${one.base}${path}`, publicHost),
      getWithHost(`${two.base}${path}`, publicHost),
    ]);
    assert.equal(discovery1.status, 200);
    assert.equal(discovery2.status, 200);
    const document = JSON.parse(discovery1.body) as { issuer: string; token_endpoint: string };
    assert.equal(document.issuer, one.issuer);
    assert.equal(document.token_endpoint, `${one.issuer}/token`);
    assert.deepEqual(JSON.parse(discovery2.body), document);
    const [jwks1, jwks2] = [await jwksOf(one), await jwksOf(two)];
    assert.ok(jwks1.keys.length >= 2);
    assert.deepEqual(jwks2, jwks1);
  });

  test('on a new database, instances answering their first requests at once agree on one set of keys', async () => {
    // Every instance of a new deployment makes the first keys when it finds none; started together
    // they must not each make their own (the JWKS would differ between them until a refresh, and
    // what one signed would not verify with the other's JWKS).
    // A race: several rounds, each on a new database (it shows in most rounds when it is there).
    for (let round = 0; round < 10; round++) {
      const fresh = await freshDatabaseUrl('postgres');
      const own: Store = { kind: 'postgres', url: fresh.url };
      const first = await startOidcApp(own, 'a');
      const second = await startOidcApp(own, 'a', {}, { publicUrl: first.base });
      try {
        const [jwks1, jwks2] = await Promise.all([jwksOf(first), jwksOf(second)]);
        const kids = (set: jose.JSONWebKeySet) => set.keys.map((key) => `${key.alg} ${key.kid}`).sort();
        assert.deepEqual(
          kids(jwks2),
          kids(jwks1),
          `round ${round}: the two instances publish different keys`,
        );
        assert.deepEqual(
          jwks1.keys.map((key) => key.alg).sort(),
          ['ES256', 'RS256'],
          `round ${round}: one first key per algorithm, not one per instance (${kids(jwks1).join(', ')})`,
        );
      } finally {
        await first.close();
        await second.close();
        await fresh.drop();
      }
    }
  });

  test('a code issued by one instance is exchanged at the other; the refresh at the other again', async () => {
    const registered = await addClient(one, { firstParty: true });
    const config1 = await relyingParty(one, registered);
    const { config: config2, sent } = await relyingPartyAt(two, registered);
    const user = newUser();
    const { id } = await register(one, user);
    const browser = new CookieBrowser(one.base);
    assert.equal((await browser.signIn(user)).status, 200);

    const authorization = await authorizationRequest(config1, {
      scope: 'openid email offline_access',
      prompt: 'consent',
      resource: API,
    });
    let stop = await browser.navigate(authorization.url.href);
    if (!stop.leftTo && stop.status === 200) stop = await answerConsent(browser, stop, 'allow');
    assert.ok(stop.leftTo, `instance 1 sends the browser back to the app (${stop.status})`);

    const before2 = logged(two, '/oidc/token');
    const tokens = await exchange(config2, authorization, stop.leftTo);
    assert.ok(
      sent.some((url) => url.startsWith(`${two.base}/oidc/token`)),
      'sent to instance 2',
    );
    assert.equal(logged(two, '/oidc/token'), before2 + 1, 'instance 2 answered the token request');
    assert.equal(tokens.claims()!.sub, id.toString());
    assert.ok(tokens.refresh_token);
    // Instance 1's JWKS verifies what instance 2 signed.
    const jwks1 = jose.createLocalJWKSet(await jwksOf(one));
    await jose.jwtVerify(tokens.id_token!, jwks1, { issuer: one.issuer, audience: registered.clientId });
    await jose.jwtVerify(tokens.access_token, jwks1, { issuer: one.issuer, audience: API, typ: 'at+jwt' });

    // The refresh on instance 1, then the rotated refresh token on instance 2.
    const refreshed = await client.refreshTokenGrant(config1, tokens.refresh_token);
    assert.ok(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token);
    const again = await client.refreshTokenGrant(config2, refreshed.refresh_token);
    assert.ok(again.access_token);
    // A used refresh token is refused on either instance (it was spent on the other).
    await assert.rejects(client.refreshTokenGrant(config2, tokens.refresh_token), { error: 'invalid_grant' });
  });

  test('an interaction started on one instance is answered on the other; an opaque token works at both', async () => {
    const registered = await addClient(one);
    const config1 = await relyingParty(one, registered);
    const { config: config2 } = await relyingPartyAt(two, registered);
    const user = newUser();
    const { id } = await register(one, user);
    const browser1 = new CookieBrowser(one.base);
    assert.equal((await browser1.signIn(user)).status, 200);
    const authorization = await authorizationRequest(config1, { scope: 'openid email' });
    const page = await browser1.navigate(authorization.url.href);
    assert.equal(page.status, 200, page.body);
    const path = new URL(page.url).pathname;

    // The same browser, its next request sent to instance 2 (its cookies, signed by instance 1).
    const browser2 = new CookieBrowser(two.base);
    for (const [name, value] of browser1.jar) browser2.jar.set(name, value);
    const details = await browser2.fetch(`${path}/details`);
    assert.equal(details.status, 200);
    assert.equal(((await details.json()) as { prompt: string }).prompt, 'consent');
    const consent = await browser2.postJson(`${path}/consent`, { decision: 'allow' });
    assert.equal(consent.status, 200);
    const { location } = (await consent.json()) as { location: string };
    assert.ok(location.startsWith(one.issuer), 'the provider resumes at the public address');
    for (const [name, value] of browser2.jar) browser1.jar.set(name, value);
    const landed = await browser1.navigate(location);
    assert.ok(landed.leftTo, `the app gets its answer (${landed.status})`);
    assert.ok(landed.leftTo.searchParams.get('code'), 'a code');

    const tokens = await exchange(config1, authorization, landed.leftTo);
    for (const config of [config1, config2]) {
      assert.equal(
        (await client.fetchUserInfo(config, tokens.access_token, id.toString())).email,
        user.email,
      );
      assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true);
    }
    // Revoked on instance 2: inactive on instance 1.
    await client.tokenRevocation(config2, tokens.access_token);
    assert.equal((await client.tokenIntrospection(config1, tokens.access_token)).active, false);
  });

  test('prompt=login: the first visit noted by one instance holds on the other; only a new sign-in there finishes it', async () => {
    const registered = await addClient(one, { firstParty: true });
    const config = await relyingParty(one, registered);
    const user = newUser();
    const { id } = await register(one, user);
    const browser1 = new CookieBrowser(one.base);
    assert.equal((await browser1.signIn(user)).status, 200);
    now += 1000;
    const authorization = await authorizationRequest(config, { prompt: 'login' });
    const page = await browser1.navigate(authorization.url.href);
    assert.equal(page.leftTo, undefined, 'the login page on instance 1');
    const path = new URL(page.url).pathname;

    // The same browser on instance 2, with the old session and a forged note of the first visit.
    const browser2 = new CookieBrowser(two.base);
    for (const [name, value] of browser1.jar) browser2.jar.set(name, value);
    browser2.jar.set('usher_reauth', `${path.split('/').pop()}.-`);
    const again = await browser2.navigate(path);
    assert.equal(again.leftTo, undefined, `instance 2 took the old session (${again.leftTo})`);
    assert.match(again.body, /<form id="signin"/);

    now += 1000;
    assert.equal((await browser2.signIn(user)).status, 200);
    const resume = await browser2.navigate(path);
    assert.ok(resume.leftTo, `sent on after the new sign-in (${resume.status})`);
    assert.ok(resume.leftTo.href.startsWith(one.issuer), 'resumed at the public address');
    for (const [name, value] of browser2.jar) browser1.jar.set(name, value);
    const landed = await browser1.navigate(resume.leftTo.href);
    assert.ok(landed.leftTo?.searchParams.get('code'), `the app gets its code (${landed.status})`);
    assert.ok(landed.leftTo);
    const claims = (await exchange(config, authorization, landed.leftTo)).claims()!;
    assert.equal(claims.sub, id.toString());
    assert.equal(claims.auth_time, Math.floor(now / 1000), "the new sign-in's time");
    assert.deepEqual(claims.amr, ['pwd']);
  });

  test('a rotation is picked up by both instances: the same JWKS, the same signing keys', async () => {
    const database = openDatabase(one.config.databaseUrl, one.config.database);
    let rotated: string[];
    try {
      const ring = compose(one.config, database, { now: clock }).oidc.keys;
      rotated = (await ring.rotate()).map((key) => key.kid);
    } finally {
      await database.close();
    }
    now += 31_000;
    const [jwks1, jwks2] = [await jwksOf(one), await jwksOf(two)];
    assert.deepEqual(jwks2, jwks1);
    for (const kid of rotated)
      assert.ok(
        jwks1.keys.some((key) => key.kid === kid),
        `${kid} is published`,
      );

    now += 31_000;
    const registered = await addClient(one, { firstParty: true });
    const user = newUser();
    await register(one, user);
    for (const [name, t] of [
      ['instance 1', one],
      ['instance 2', two],
    ] as const) {
      const { config } = await relyingPartyAt(t, registered);
      const browser = new CookieBrowser(t.base);
      assert.equal((await browser.signIn(user)).status, 200);
      // The whole flow on this instance: the provider's links name the public address (instance
      // 1), so the browser's requests are sent to this instance's port instead.
      const onThis = (url: URL | string) => String(url).replace(one.base, t.base);
      const authorization = await authorizationRequest(config, { scope: 'openid', resource: API });
      let stop = await browser.navigate(onThis(authorization.url));
      for (let hops = 0; stop.leftTo?.origin === one.base && t === two && hops < 5; hops++)
        stop = await browser.navigate(onThis(stop.leftTo));
      if (!stop.leftTo && stop.status === 200) stop = await answerConsent(browser, stop, 'allow');
      for (let hops = 0; stop.leftTo?.origin === one.base && t === two && hops < 5; hops++)
        stop = await browser.navigate(onThis(stop.leftTo));
      assert.ok(stop.leftTo, `${name} sends the browser back (${stop.status})`);
      const tokens = await exchange(config, authorization, stop.leftTo);
      assert.ok(
        rotated.includes(jose.decodeProtectedHeader(tokens.id_token!).kid!),
        `${name}: new RS256 key`,
      );
      assert.ok(
        rotated.includes(jose.decodeProtectedHeader(tokens.access_token).kid!),
        `${name}: new ES256 key`,
      );
    }
    assert.ok(logged(two, '/oidc/token') > 0);
  });
});
