// Key rotation never breaks a valid token: a rotated key is published before it signs (instances
// pick the key set up at most every 30 s of the app clock, and a new key signs 60 s after it was
// made), old keys stay published until retired, and only a key that no longer signs can be retired.
// The app's clock is moved instead of waiting; the rotation runs through the service the CLI uses.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as jose from 'jose';
import type * as client from 'openid-client';
import { openDatabase } from '../../src/db/database.ts';
import { type Built, compose } from '../../src/features.ts';
import type { KeyView } from '../../src/oidc/keys.ts';
import { asUser, newUser, register, signIn } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
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

interface Tokens {
  idToken: string;
  accessToken: string;
  sessionToken: string;
}

const kidOf = (token: string) => jose.decodeProtectedHeader(token).kid;

describeEachStore('OpenID Connect signing key rotation', (store) => {
  let now = Date.now();
  const clock = () => now;
  let t: OidcTestApp;
  let config: client.Configuration;
  let clientId: string;
  let browser: CookieBrowser;
  let session: string;

  before(async () => {
    t = await startOidcApp(store, 'a', {}, { clock });
    const registered = await addClient(t, { firstParty: true });
    clientId = registered.clientId;
    config = await relyingParty(t, registered);
    const user = newUser();
    await register(t, user);
    browser = new CookieBrowser(t.base);
    assert.equal((await browser.signIn(user)).status, 200);
    session = await signIn(t, user);
  });
  after(() => t.close());

  /** The key service the CLI runs (`usher keys …`), on the app's database and clock. */
  async function keys<T>(use: (ring: Built['oidc']['keys']) => Promise<T>) {
    const database = openDatabase(t.config.databaseUrl, t.config.database);
    try {
      return await use(compose(t.config, database, { now: clock }).oidc.keys);
    } finally {
      await database.close();
    }
  }

  const statuses = async () =>
    Object.fromEntries((await keys((ring) => ring.list())).map((key) => [key.kid, key.status]));

  /** An ID token and a JWT access token from the code flow, and a session's JWT access token. */
  async function tokens(): Promise<Tokens> {
    const authorization = await authorizationRequest(config, { scope: 'openid email', resource: API });
    let stop = await browser.navigate(authorization.url.href);
    // A first-party client asks no consent; should a page ask anyway, it is answered (not this test's subject).
    if (!stop.leftTo && stop.status === 200) stop = await answerConsent(browser, stop, 'allow');
    assert.ok(stop.leftTo, `the browser is sent back to the app (${stop.status} ${stop.body.slice(0, 200)})`);
    const answer = await exchange(config, authorization, stop.leftTo);
    const fromSession = await asUser(t, session).post('/api/session/token', { audience: API });
    assert.equal(fromSession.statusCode, 200, fromSession.body);
    return {
      idToken: answer.id_token!,
      accessToken: answer.access_token,
      sessionToken: fromSession.json().accessToken,
    };
  }

  /** The JWKS as published now (fetched afresh: no cache between the steps). */
  async function jwks(): Promise<jose.JSONWebKeySet> {
    const response = await fetch(`${t.issuer}/jwks`);
    assert.equal(response.status, 200);
    return (await response.json()) as jose.JSONWebKeySet;
  }

  /** Whether each token verifies with jose from the JWKS published now. */
  async function verify(all: Tokens): Promise<Record<keyof Tokens, boolean>> {
    const set = jose.createLocalJWKSet(await jwks());
    const ok = (promise: Promise<unknown>) =>
      promise.then(
        () => true,
        (error: Error) => {
          if (error instanceof jose.errors.JWKSNoMatchingKey) return false;
          throw error;
        },
      );
    return {
      idToken: await ok(jose.jwtVerify(all.idToken, set, { issuer: t.issuer, audience: clientId })),
      accessToken: await ok(
        jose.jwtVerify(all.accessToken, set, { issuer: t.issuer, audience: API, typ: 'at+jwt' }),
      ),
      sessionToken: await ok(
        jose.jwtVerify(all.sessionToken, set, { issuer: t.issuer, audience: API, typ: 'at+jwt' }),
      ),
    };
  }

  const ALL_VERIFY = { idToken: true, accessToken: true, sessionToken: true };

  test('rotate, publish, sign with the new keys, retire the old ones: no valid token ever fails', async () => {
    // Before: one signing key per algorithm, and the tokens signed with them.
    const before = await tokens();
    const oldRs = kidOf(before.idToken)!;
    const oldEs = kidOf(before.accessToken)!;
    assert.equal(jose.decodeProtectedHeader(before.idToken).alg, 'RS256');
    assert.equal(jose.decodeProtectedHeader(before.accessToken).alg, 'ES256');
    assert.equal(kidOf(before.sessionToken), oldEs, 'session tokens are signed with the access token key');
    assert.deepEqual(await statuses(), { [oldRs]: 'signing', [oldEs]: 'signing' });
    assert.deepEqual(await verify(before), ALL_VERIFY);

    // Rotate: a new key per algorithm, published now, signing from 60 s later.
    const rotated: KeyView[] = await keys((ring) => ring.rotate());
    assert.deepEqual(rotated.map((key) => key.alg).sort(), ['ES256', 'RS256']);
    const newRs = rotated.find((key) => key.alg === 'RS256')!.kid;
    const newEs = rotated.find((key) => key.alg === 'ES256')!.kid;
    for (const key of rotated) {
      assert.equal(key.status, 'next');
      assert.equal(key.signsFrom.getTime(), now + 60_000);
    }
    assert.deepEqual(await statuses(), {
      [oldRs]: 'signing',
      [oldEs]: 'signing',
      [newRs]: 'next',
      [newEs]: 'next',
    });
    // Neither a key that signs now nor one about to sign can be retired.
    for (const kid of [oldRs, oldEs, newRs, newEs])
      await assert.rejects(
        keys((ring) => ring.retire(kid)),
        { code: 'VALIDATION_FAILED' },
        kid,
      );

    // Past one refresh interval: the new keys are published, but the old ones still sign.
    now += 31_000;
    const published = (await jwks()).keys.map((key) => key.kid).sort();
    assert.deepEqual(published, [oldRs, oldEs, newRs, newEs].sort());
    for (const key of (await jwks()).keys)
      assert.equal((key as { d?: string }).d, undefined, 'public keys only');
    const during = await tokens();
    assert.equal(kidOf(during.idToken), oldRs);
    assert.equal(kidOf(during.accessToken), oldEs);
    assert.equal(kidOf(during.sessionToken), oldEs);
    assert.deepEqual(await verify(before), ALL_VERIFY);
    assert.deepEqual(await verify(during), ALL_VERIFY);

    // Past the new keys' time to sign (and another refresh): new tokens carry the new kids.
    now += 31_000;
    assert.deepEqual(await statuses(), {
      [oldRs]: 'published',
      [oldEs]: 'published',
      [newRs]: 'signing',
      [newEs]: 'signing',
    });
    const afterwards = await tokens();
    assert.equal(kidOf(afterwards.idToken), newRs);
    assert.equal(kidOf(afterwards.accessToken), newEs);
    assert.equal(kidOf(afterwards.sessionToken), newEs);
    // Every token ever issued verifies from the JWKS.
    for (const issued of [before, during, afterwards]) assert.deepEqual(await verify(issued), ALL_VERIFY);

    // The keys that sign now cannot be retired; the old ones can.
    for (const kid of [newRs, newEs])
      await assert.rejects(
        keys((ring) => ring.retire(kid)),
        /signs tokens now/,
        kid,
      );
    const retired = await keys((ring) => ring.retire(oldEs));
    assert.equal(retired.status, 'retired');
    await assert.rejects(
      keys((ring) => ring.retire(oldEs)),
      /already retired/,
    );
    await assert.rejects(
      keys((ring) => ring.retire('no-such-kid')),
      { code: 'NOT_FOUND' },
    );
    assert.equal((await statuses())[oldEs], 'retired');

    // After the next refresh the retired key is out of the JWKS: what it signed no longer verifies,
    // while the ID tokens of the old RS256 key (not retired) still do.
    now += 31_000;
    assert.ok(!(await jwks()).keys.some((key) => key.kid === oldEs), 'the retired key is out of the JWKS');
    for (const issued of [before, during])
      assert.deepEqual(await verify(issued), { idToken: true, accessToken: false, sessionToken: false });
    assert.deepEqual(await verify(afterwards), ALL_VERIFY);

    await keys((ring) => ring.retire(oldRs));
    now += 31_000;
    assert.deepEqual((await jwks()).keys.map((key) => key.kid).sort(), [newRs, newEs].sort());
    assert.deepEqual(await verify(before), { idToken: false, accessToken: false, sessionToken: false });
    const last = await tokens();
    assert.equal(kidOf(last.idToken), newRs);
    assert.deepEqual(await verify(last), ALL_VERIFY);
    assert.deepEqual(await statuses(), {
      [oldRs]: 'retired',
      [oldEs]: 'retired',
      [newRs]: 'signing',
      [newEs]: 'signing',
    });
  });
});
