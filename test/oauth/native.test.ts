// The native sign-in, POST /api/sessions/oauth {provider, idToken, nonce?, code?} (CONTRACT "Sign
// in with a provider"): apps that signed in with the platform's SDK hand Usher the provider's ID
// token. Its answers are POST /api/sessions's (201 {token, session, user}; failures {error,
// message} in both profiles). The provider is real (panva's oidc-provider): tokens come from a real
// code flow for the app's client id, or are signed by the test with the provider's key (or a
// foreign one) with chosen aud, exp, nonce and iss. Covered: the client id and OAUTH_X_AUDIENCES as
// audience, each broken check (401 SIGNIN_FAILED), the TOTP code, the 409 codes, REQUIRE_VERIFIED_EMAIL,
// unknown or GitHub provider (400), and the metric.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import { NO_THROTTLE, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, metric } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';
import {
  APP_AUDIENCE,
  account,
  CLIENT_ID,
  ENCRYPTION_KEY,
  oauthSettings,
  PROFILES,
  PROVIDER,
  providerPerson,
  SUCCESS,
  verifiedUser,
} from './support.ts';

const USER_KEYS: Record<Profile, string[]> = {
  a: ['email', 'id', 'name'],
  b: ['createdAt', 'email', 'emailVerified', 'id', 'name'],
};

describeEachStore('Native sign-in with an ID token', (store) => {
  let provider: TestOidcProvider;
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  let closed: TestApp;
  let strict: TestApp;
  before(async () => {
    provider = await startOidcProvider();
    smtp = await startSmtp();
    const base: Partial<Config> = {
      mail: mailTo(smtp.url),
      throttle: { ...NO_THROTTLE },
      encryptionKey: ENCRYPTION_KEY,
      publicUrl: 'http://127.0.0.1:9',
    };
    // The github preset beside the test provider: it has no ID tokens (its URLs are never called here).
    const env = {
      OAUTH_PROVIDERS: `${PROVIDER},github`,
      OAUTH_GITHUB_CLIENT_ID: 'gh',
      OAUTH_GITHUB_CLIENT_SECRET: 'gh-secret',
      OAUTH_GITHUB_URL: 'http://127.0.0.2:9',
      OAUTH_GITHUB_API_URL: 'http://127.0.0.2:9/api/v3',
    };
    for (const profile of PROFILES)
      apps[profile] = await startApp(store, profile, { ...base, oauth: oauthSettings(provider.issuer, env) });
    closed = await startApp(store, 'b', {
      ...base,
      oauth: oauthSettings(provider.issuer, { OAUTH_SIGNUP: 'false' }),
    });
    strict = await startApp(store, 'b', {
      ...base,
      oauth: oauthSettings(provider.issuer),
      requireVerifiedEmail: true,
    });
  });
  after(async () => {
    for (const t of [apps.a, apps.b, closed, strict]) await t?.close();
    await provider?.close();
    await smtp?.close();
  });

  const native = (t: TestApp, body: unknown) => t.post('/api/sessions/oauth', body);
  const userCount = async () => Number((await apps.b.get('/api/users?size=1')).headers['x-total-count']);
  /** An ID token for a new person at the provider, for `aud`, with `extra` claims over the defaults. */
  async function tokenFor(
    person: ReturnType<typeof providerPerson>,
    extra: Record<string, unknown> = {},
    options?: Parameters<TestOidcProvider['signIdToken']>[1],
  ) {
    return provider.signIdToken(
      {
        sub: person.sub,
        aud: CLIENT_ID,
        email: person.email,
        email_verified: person.email_verified,
        name: person.name,
        ...extra,
      },
      options,
    );
  }

  function assertCreated(t: TestApp, res: LightMyRequestResponse, email: string) {
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['session', 'token', 'user']);
    assert.deepEqual(Object.keys(body.session).sort(), ['createdAt', 'expiresAt', 'id']);
    assert.deepEqual(Object.keys(body.user).sort(), USER_KEYS[t.profile]);
    assert.equal(body.user.email, email);
    assert.equal(res.headers['set-cookie'], undefined, 'no cookie: the app keeps the token');
    return body as { token: string; user: { id: number } };
  }

  function assertSigninFailed(res: LightMyRequestResponse, what: string) {
    assert.equal(res.statusCode, 401, `${what}: ${res.body}`);
    assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
    assert.equal(res.json().error, 'SIGNIN_FAILED', what);
  }

  function assertConflict(res: LightMyRequestResponse, code: string) {
    assert.equal(res.statusCode, 409, res.body);
    assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
    assert.equal(res.json().error, code);
  }

  for (const profile of PROFILES) {
    test(`[${profile}] a good ID token (audience: the client id) makes the account and answers as POST /api/sessions; the token is a Bearer session`, async () => {
      const t = apps[profile];
      const person = providerPerson(provider, { name: 'Native Person' });
      const res = await native(t, { provider: PROVIDER, idToken: await tokenFor(person), nonce: undefined });
      const body = assertCreated(t, res, person.email!);
      const me = await account(t, body.token);
      assert.equal(me.user.id, body.user.id);
      assert.equal(me.user.name, 'Native Person');
      assert.equal(me.password, false);
      assert.equal(me.identities.length, 1);
      assert.equal(me.identities[0]!.provider, PROVIDER);
      // Again, a new token for the same subject (another email now): the same account.
      const again = await native(t, {
        provider: PROVIDER,
        idToken: await tokenFor({ ...person, email: `other.${person.email}` }),
      });
      assert.equal(assertCreated(t, again, person.email!).user.id, body.user.id);
    });
  }

  test('an audience of OAUTH_X_AUDIENCES (the iOS app’s client id), from a real code flow at the provider, with its nonce', async () => {
    const t = apps.b;
    const person = providerPerson(provider);
    const nonce = randomBytes(16).toString('base64url');
    const idToken = await provider.genuineIdToken(person.login, APP_AUDIENCE, { nonce });
    assertCreated(t, await native(t, { provider: PROVIDER, idToken, nonce }), person.email!);
    // A signed one with aud an array holding the app's id.
    const other = providerPerson(provider);
    const array = await tokenFor(other, { aud: [APP_AUDIENCE], azp: APP_AUDIENCE });
    assertCreated(t, await native(t, { provider: PROVIDER, idToken: array }), other.email!);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const broken: [string, (p: ReturnType<typeof providerPerson>) => Promise<string>, string?][] = [
    ['for another audience', (p) => tokenFor(p, { aud: 'someone-else' })],
    ['expired', (p) => tokenFor(p, { iat: now() - 7200, exp: now() - 3600 })],
    ['signed with a foreign key under the provider’s kid', (p) => tokenFor(p, {}, { key: 'foreign' })],
    ['unsigned (alg none)', (p) => tokenFor(p, {}, { alg: 'none' })],
    ['from another issuer', (p) => tokenFor(p, { iss: 'http://127.0.0.2:1' })],
    [
      'with a nonce other than the one given',
      (p) => tokenFor(p, { nonce: 'the-token-nonce' }),
      'another-nonce',
    ],
    ['without the nonce that was given', (p) => tokenFor(p), 'a-nonce'],
    [
      'whose payload was changed after signing',
      async (p) => {
        const [h, , s] = (await tokenFor(p)).split('.');
        const payload = Buffer.from(
          JSON.stringify({
            iss: provider.issuer,
            aud: CLIENT_ID,
            sub: p.sub,
            email: 'victim@example.com',
            email_verified: true,
            exp: now() + 600,
            iat: now(),
          }),
        ).toString('base64url');
        return `${h}.${payload}.${s}`;
      },
    ],
    ['that is not a JWT', async () => 'not-a-token'],
  ];
  for (const [what, make, nonce] of broken) {
    test(`an ID token ${what}: 401 SIGNIN_FAILED {error, message}, no account`, async () => {
      for (const profile of PROFILES) {
        const t = apps[profile];
        const person = providerPerson(provider);
        const before = await userCount();
        const res = await native(t, {
          provider: PROVIDER,
          idToken: await make(person),
          ...(nonce ? { nonce } : {}),
        });
        assertSigninFailed(res, `${profile}: ${what}`);
        assert.equal(res.headers['usher-second-factor'], undefined);
        assert.equal(await userCount(), before);
      }
    });
  }

  test('the nonce given and the token’s alike: 201', async () => {
    const person = providerPerson(provider);
    const res = await native(apps.a, {
      provider: PROVIDER,
      idToken: await tokenFor(person, { nonce: 'same-nonce' }),
      nonce: 'same-nonce',
    });
    assertCreated(apps.a, res, person.email!);
  });

  for (const profile of PROFILES) {
    test(`[${profile}] TOTP in force: without a code 401 SIGNIN_FAILED with Usher-Second-Factor: totp, a wrong code 401, a right one 201`, async () => {
      const t = apps[profile];
      const owner = await verifiedUser(t, smtp);
      const password = await signIn(t, owner);
      const bearer = { authorization: `Bearer ${password}` };
      const setup = await t.post('/api/mfa/totp', { password: owner.password }, bearer);
      assert.equal(setup.statusCode, 200, setup.body);
      const { secret } = setup.json() as { secret: string };
      const confirmed = await t.post('/api/mfa/totp/confirm', { code: totpAt(secret, Date.now()) }, bearer);
      assert.equal(confirmed.statusCode, 200, confirmed.body);

      const person = providerPerson(provider, { email: owner.email, email_verified: true });
      const idToken = await tokenFor(person);
      const none = await native(t, { provider: PROVIDER, idToken });
      assertSigninFailed(none, 'no code');
      assert.equal(none.headers['usher-second-factor'], 'totp');
      const wrong = await native(t, { provider: PROVIDER, idToken, code: wrongCodeAt(secret, Date.now()) });
      assertSigninFailed(wrong, 'a wrong code');
      const right = await native(t, {
        provider: PROVIDER,
        idToken,
        code: totpAt(secret, Date.now() + STEP_MS),
      });
      const body = assertCreated(t, right, owner.email);
      assert.equal(body.user.id, Number(owner.id));
      assert.equal((await account(t, body.token)).identities.length, 1, 'linked: verified on both sides');
    });
  }

  test('409 ACCOUNT_EXISTS: an account holds the email and it is not verified on both sides', async () => {
    const t = apps.a;
    const unverified = await register(t);
    const person = providerPerson(provider, { email: unverified.email, email_verified: true });
    assertConflict(
      await native(t, { provider: PROVIDER, idToken: await tokenFor(person) }),
      'ACCOUNT_EXISTS',
    );
    const verified = await verifiedUser(t, smtp);
    const unsure = providerPerson(provider, { email: verified.email, email_verified: false });
    assertConflict(
      await native(t, { provider: PROVIDER, idToken: await tokenFor(unsure) }),
      'ACCOUNT_EXISTS',
    );
    const me = await account(t, await signIn(t, verified));
    assert.deepEqual(me.identities, []);
  });

  test('409 SIGNUP_CLOSED with OAUTH_SIGNUP=false, and 409 OAUTH_FAILED for a token without an email', async () => {
    const person = providerPerson(provider);
    assertConflict(
      await native(closed, { provider: PROVIDER, idToken: await tokenFor(person) }),
      'SIGNUP_CLOSED',
    );
    const nobody = providerPerson(provider, { email: null });
    const before = await userCount();
    assertConflict(
      await native(apps.b, {
        provider: PROVIDER,
        idToken: await tokenFor(nobody, { email: undefined, email_verified: undefined }),
      }),
      'OAUTH_FAILED',
    );
    assert.equal(await userCount(), before);
  });

  test('REQUIRE_VERIFIED_EMAIL: an unverified provider email is 403 SIGNIN_FAILED; a verified one 201', async () => {
    const unverified = providerPerson(provider, { email_verified: false });
    const res = await native(strict, { provider: PROVIDER, idToken: await tokenFor(unverified) });
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.json().error, 'SIGNIN_FAILED');
    const verified = providerPerson(provider, { email_verified: true });
    assertCreated(
      strict,
      await native(strict, { provider: PROVIDER, idToken: await tokenFor(verified) }),
      verified.email!,
    );
  });

  test('an unknown provider, or the github provider (it has no ID tokens): 400 SIGNIN_FAILED naming provider, as POST /api/sessions answers a bad body', async () => {
    const idToken = await tokenFor(providerPerson(provider));
    for (const body of [
      { provider: 'nope', idToken },
      { provider: 'github', idToken },
    ]) {
      const res = await native(apps.b, body);
      assert.equal(res.statusCode, 400, `${body.provider}: ${res.body}`);
      assert.equal(res.json().error, 'SIGNIN_FAILED', `${body.provider}: ${res.body}`);
      assert.match(res.json().message, /provider \(the id of a configured OpenID Connect provider\)/);
    }
  });

  test('a body without a string idToken: 400, as POST /api/sessions answers a bad body (SIGNIN_FAILED with a message)', async () => {
    for (const body of [{ provider: PROVIDER }, { provider: PROVIDER, idToken: 5 }, [], 'x']) {
      const res = await native(apps.a, body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message']);
      assert.equal(res.json().error, 'SIGNIN_FAILED');
    }
  });

  test('the metric counts native sign-ins as oauth successes', async () => {
    const t = apps.b;
    const before = await metric(t, 'usher_signins_total', SUCCESS);
    const person = providerPerson(provider);
    assertCreated(t, await native(t, { provider: PROVIDER, idToken: await tokenFor(person) }), person.email!);
    assert.equal(await metric(t, 'usher_signins_total', SUCCESS), before + 1);
  });

  test('the ID token is never logged', async () => {
    const t = apps.a;
    const person = providerPerson(provider);
    const idToken = await tokenFor(person);
    assertCreated(t, await native(t, { provider: PROVIDER, idToken }), person.email!);
    assertSigninFailed(
      await native(t, { provider: PROVIDER, idToken: await tokenFor(person, { aud: 'x' }) }),
      'aud',
    );
    assert.ok(!t.logs.join('').includes(idToken.split('.')[2]!));
  });
});

// loadConfig is what the suites build the settings with; a provider id with no issuer stops it.
test('OAUTH settings: an http:// issuer off loopback stops the start with a line naming it', () => {
  assert.throws(
    () =>
      loadConfig({
        OAUTH_PROVIDERS: 'test',
        OAUTH_TEST_CLIENT_ID: 'x',
        OAUTH_TEST_CLIENT_SECRET: 'y',
        OAUTH_TEST_ISSUER: 'http://id.example.com',
      }),
    /OAUTH_TEST_ISSUER/,
  );
});
