// Two Usher instances on one PostgreSQL database behind one PUBLIC_URL (CONTRACT "Sign in with a
// provider": the state is kept server-side): a sign-in started on one instance finishes on the
// other, a state used on one is spent on both, and a link started on one lands on the other. The
// provider is real (panva's oidc-provider), driven over HTTP; the "load balancer" is the test,
// which sends the browser's callback to the other instance. Skipped, visibly, without
// TEST_DATABASE_URL.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { register, startApp } from '../helpers/app.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { freshDatabaseUrl, postgresAvailable } from '../helpers/stores.ts';
import {
  account,
  assertInvalidState,
  assertSignedIn,
  Browser,
  CLIENT_ID,
  CLIENT_SECRET,
  ENCRYPTION_KEY,
  oauthSettings,
  PROVIDER,
  providerPerson,
  type Usher,
} from './support.ts';

const skip = postgresAvailable ? false : 'TEST_DATABASE_URL is not set';

describeUnless(skip, 'Provider sign-in across two instances [postgres]', () => {
  let provider: TestOidcProvider;
  let one: Usher;
  let two: Usher;
  let drop: () => Promise<void> = async () => {};
  before(async () => {
    provider = await startOidcProvider();
    const fresh = await freshDatabaseUrl('postgres');
    drop = fresh.drop;
    const store = { kind: 'postgres' as const, url: fresh.url };
    // One PUBLIC_URL for both (instance one's address stands for the load balancer's).
    const ports = [await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${ports[0]}`;
    const callback = `${publicUrl}/api/oauth/${PROVIDER}/callback`;
    await provider.addClient({
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: [callback],
    });
    const started: Usher[] = [];
    for (const port of ports) {
      const t = await startApp(store, 'b', {
        oauth: oauthSettings(provider.issuer),
        publicUrl,
        encryptionKey: ENCRYPTION_KEY,
      });
      await t.app.listen({ host: '127.0.0.1', port });
      started.push({ t, base: publicUrl, address: `http://127.0.0.1:${port}`, callback });
    }
    [one, two] = started as [Usher, Usher];
  });
  after(async () => {
    await one?.t.close();
    await two?.t.close();
    await provider?.close();
    await drop();
  });

  /** The provider's answer, sent to `to` instead (the port is all that differs; cookies ignore ports). */
  const via = (to: Usher, callbackUrl: string) => {
    const url = new URL(callbackUrl);
    url.port = new URL(to.address!).port;
    return url;
  };

  async function upToCallback(browser: Browser, at: Usher, login: string, intent?: 'link') {
    const start = await browser.start(at, { intent });
    assert.equal(start.status, 302, await start.text());
    return (await provider.authorize(start.headers.get('location')!, { login, jar: browser.jar })).location;
  }

  test('started on one instance, finished on the other: signed in, the session good on both', async () => {
    const browser = new Browser();
    const person = providerPerson(provider);
    const location = await upToCallback(browser, one, person.login);
    const token = await assertSignedIn(two, await browser.callback(two, via(two, location)));
    for (const instance of [one, two]) {
      const me = await account(instance.t, token);
      assert.equal(me.user.email, person.email);
    }
  });

  test('a state used on one instance is spent on the other: 400 INVALID_TOKEN', async () => {
    const browser = new Browser();
    const location = await upToCallback(browser, two, providerPerson(provider).login);
    await assertSignedIn(one, await browser.callback(one, via(one, location)));
    await assertInvalidState(await browser.get(via(two, location).href));
  });

  test('a link started on one instance lands on the other, and shows on both', async () => {
    const user = await register(one.t);
    const browser = new Browser();
    const token = await browser.passwordSignIn(two, user);
    const location = await upToCallback(browser, one, providerPerson(provider).login, 'link');
    const result = await browser.callback(two, via(two, location));
    assert.equal(result.callback.status, 303);
    assert.equal(result.location?.pathname, '/account');
    assert.equal(result.location?.search, '', 'no error');
    for (const instance of [one, two]) assert.equal((await account(instance.t, token)).identities.length, 1);
  });
});
