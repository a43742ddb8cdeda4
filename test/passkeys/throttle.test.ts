// Passkey sign-in passes the sign-in core's throttle with its own policy: failures count per client
// address (with every other method's failures from that network), never against an account, since
// a failed assertion guesses nothing and counting it per account would let anyone lock one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asUser, NO_THROTTLE, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://id.example.test:8443';
const PER_ADDRESS = 4;

describeEachStore('Passkey sign-in throttle', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b', {
      publicUrl: PUBLIC_URL,
      throttle: { ...NO_THROTTLE, perAddress: PER_ADDRESS, perAccount: 2, perAccountAddress: 2 },
    });
  });
  after(() => t.close());

  const post = (url: string, body: object, remoteAddress: string) =>
    t.inject({
      method: 'POST',
      url,
      remoteAddress,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  async function passkeyUser() {
    const user = await register(t);
    const me = asUser(t, await signIn(t, user));
    const authenticator = new SoftAuthenticator(PUBLIC_URL);
    const options = await me.post('/api/passkeys/register/options', {});
    const added = await me.post('/api/passkeys/register', {
      credential: authenticator.create(options.json()),
    });
    assert.equal(added.statusCode, 201, added.body);
    return { user, authenticator };
  }
  const passkeySignin = async (authenticator: SoftAuthenticator, address: string, bad = false) => {
    const options = await post('/api/signin/passkey/options', {}, address);
    const credential = authenticator.get(options.json(), bad ? { forge: true } : {});
    return post('/api/signin/passkey', { credential }, address);
  };

  test('ISSUE 26: failed passkey sign-ins are limited per address: then 429 SIGNIN_FAILED with Retry-After', async () => {
    const { authenticator } = await passkeyUser();
    const address = '10.66.1.1';
    for (let i = 0; i < PER_ADDRESS; i++)
      assert.equal((await passkeySignin(authenticator, address, true)).statusCode, 401);
    const refused = await passkeySignin(authenticator, address);
    assert.equal(refused.statusCode, 429, 'a good passkey is refused too from a throttled address');
    assert.equal(refused.json().error, 'SIGNIN_FAILED');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.equal((await passkeySignin(authenticator, '10.66.1.2')).statusCode, 200, 'elsewhere it signs in');
  });

  test('ISSUE 26: passkey failures are never counted against the account (more than its limit, and it still signs in)', async () => {
    const { user, authenticator } = await passkeyUser();
    // Over the account's limit (2), each from its own address: no address limit is reached.
    for (let i = 0; i < 3; i++)
      assert.equal((await passkeySignin(authenticator, `10.66.2.${i}`, true)).statusCode, 401);
    const password = await post('/api/signin', { email: user.email, password: user.password }, '10.66.3.1');
    assert.equal(password.statusCode, 200, 'the password still signs in');
    assert.equal((await passkeySignin(authenticator, '10.66.3.2')).statusCode, 200);
  });

  test('ISSUE 26: passkey and password failures from one network count together', async () => {
    const { authenticator } = await passkeyUser();
    const victim = await register(t);
    const address = '10.66.4.1';
    for (let i = 0; i < PER_ADDRESS - 1; i++)
      assert.equal((await passkeySignin(authenticator, address, true)).statusCode, 401);
    assert.equal(
      (await post('/api/signin', { email: victim.email, password: 'wrong-one-1' }, address)).statusCode,
      401,
    );
    assert.equal((await passkeySignin(authenticator, address)).statusCode, 429);
  });
});
