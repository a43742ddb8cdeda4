// Passkeys through the API, without a browser: a software authenticator (test/helpers/passkey.ts)
// makes what a browser would send, and misbehaves on request to show each check refuses it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import {
  asUser,
  register,
  sessionToken,
  signIn,
  startApp,
  type TestApp,
  testConfig,
} from '../helpers/app.ts';
import { type Misbehaviour, SoftAuthenticator } from '../helpers/passkey.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://id.example.test:8443/some/path';
const ORIGIN = 'https://id.example.test:8443';
const RP_ID = 'id.example.test';
const FIVE_MINUTES = 5 * 60 * 1000;

/** A user with a session and a registered passkey. */
async function enrolled(t: TestApp, authenticator = new SoftAuthenticator(ORIGIN)) {
  const user = await register(t);
  const token = await signIn(t, user);
  const me = asUser(t, token);
  const options = await me.post('/api/passkeys/register/options', {});
  assert.equal(options.statusCode, 200, options.body);
  const res = await me.post('/api/passkeys/register', { credential: authenticator.create(options.json()) });
  assert.equal(res.statusCode, 201, res.body);
  return {
    user,
    token,
    me,
    authenticator,
    passkey: res.json() as { id: string; name: string; createdAt: string },
  };
}

async function signinOptions(t: TestApp) {
  const res = await t.post('/api/signin/passkey/options', {});
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { challenge: string; rpId: string };
}

async function passkeySignIn(t: TestApp, authenticator: SoftAuthenticator, bad: Misbehaviour = {}) {
  return t.post('/api/signin/passkey', { credential: authenticator.get(await signinOptions(t), bad) });
}

function assertSigninFailed(
  t: TestApp,
  res: { statusCode: number; body: string },
  what: string,
  status = 401,
) {
  assert.equal(res.statusCode, status, `${what}: ${res.body}`);
  const body = JSON.parse(res.body);
  if (t.profile === 'a') assert.deepEqual(body, { error: 'SIGNIN_FAILED' }, what);
  else {
    assert.equal(body.error, 'SIGNIN_FAILED', what);
    assert.equal(typeof body.message, 'string', what);
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], what);
  }
}

function assertValidationFailed(res: { statusCode: number; body: string }, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
  assert.equal(JSON.parse(res.body).error, 'VALIDATION_FAILED', what);
  assert.match(JSON.parse(res.body).message, /^credential: /, what);
}

describeEachStore('Passkeys API', (store: Store) => {
  let offset = 0;
  const apps: Partial<Record<Profile, TestApp>> = {};
  before(async () => {
    for (const profile of ['a', 'b'] as const)
      apps[profile] = await startApp(
        store,
        profile,
        { publicUrl: PUBLIC_URL },
        { clock: () => Date.now() + offset },
      );
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  for (const profile of ['a', 'b'] as const) {
    const app = () => apps[profile] as TestApp;

    describe(`profile ${profile}`, () => {
      test("registration options: rp id is PUBLIC_URL's host, a challenge, UV required, discoverable, own passkeys excluded", async () => {
        const t = app();
        const { me, authenticator, user } = await enrolled(t);
        const res = await me.post('/api/passkeys/register/options', {});
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['cache-control'], 'no-store');
        const options = res.json();
        assert.equal(options.rp.id, RP_ID);
        assert.match(options.challenge, /^[A-Za-z0-9_-]{32,}$/);
        assert.equal(options.authenticatorSelection.userVerification, 'required');
        assert.equal(options.authenticatorSelection.residentKey, 'required');
        assert.equal(options.user.name, user.email);
        assert.equal(options.user.id, Buffer.from(String(user.id)).toString('base64url'));
        assert.ok(options.timeout <= FIVE_MINUTES);
        assert.deepEqual(
          options.excludeCredentials.map((c: { id: string }) => c.id),
          [authenticator.id],
        );
      });

      test('sign-in options: rp id, a fresh challenge each time, UV required, empty allowCredentials', async () => {
        const t = app();
        const one = await signinOptions(t);
        const two = await signinOptions(t);
        assert.equal(one.rpId, RP_ID);
        assert.notEqual(one.challenge, two.challenge);
        const full = one as unknown as Record<string, unknown>;
        assert.equal(full.userVerification, 'required');
        assert.deepEqual(full.allowCredentials, []);
      });

      test('register, list and delete need a session (401 UNAUTHENTICATED)', async () => {
        const t = app();
        for (const [method, url] of [
          ['POST', '/api/passkeys/register/options'],
          ['POST', '/api/passkeys/register'],
          ['GET', '/api/passkeys'],
          ['DELETE', `/api/passkeys/${'0'.repeat(32)}`],
        ] as const) {
          const res = await t.inject({
            method,
            url,
            ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, payload: '{}' } : {}),
          });
          assert.equal(res.statusCode, 401, `${method} ${url}`);
          assert.equal(res.json().error, 'UNAUTHENTICATED', `${method} ${url}`);
        }
      });

      test('a registered passkey is listed with id, name and createdAt, and its id is not the credential id', async () => {
        const t = app();
        const user = await register(t);
        const me = asUser(t, await signIn(t, user));
        const authenticator = new SoftAuthenticator(ORIGIN);
        const options = (await me.post('/api/passkeys/register/options', {})).json();
        const res = await me.post('/api/passkeys/register', {
          credential: authenticator.create(options),
          name: '  Laptop  ',
        });
        assert.equal(res.statusCode, 201, res.body);
        const created = res.json();
        assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'id', 'name']);
        assert.equal(created.name, 'Laptop');
        const next = (await me.post('/api/passkeys/register/options', {})).json();
        const bad = await me.post('/api/passkeys/register', {
          credential: new SoftAuthenticator(ORIGIN).create(next),
          name: 'a\u0007b',
        });
        assert.equal(bad.statusCode, 400);
        assert.match(bad.json().message, /^name: /);
        assert.match(created.id, /^[0-9a-f]{32}$/);
        assert.notEqual(created.id, authenticator.id);
        const list = await me.get('/api/passkeys');
        assert.equal(list.statusCode, 200);
        assert.deepEqual(list.json(), [created]);
      });

      test("a made-up credential: 400 on registration, 401 SIGNIN_FAILED in the profile's shape on sign-in", async () => {
        const t = app();
        const user = await register(t);
        const me = asUser(t, await signIn(t, user));
        const fake = {
          id: 'AAAA',
          rawId: 'AAAA',
          type: 'public-key',
          response: { clientDataJSON: 'e30', attestationObject: 'oA' },
        };
        await me.post('/api/passkeys/register/options', {});
        assertValidationFailed(
          await me.post('/api/passkeys/register', { credential: fake }),
          'made-up registration',
        );
        assertValidationFailed(
          await me.post('/api/passkeys/register', { credential: {} }),
          'empty registration',
        );
        const res = await t.post('/api/signin/passkey', {
          credential: {
            ...fake,
            response: { clientDataJSON: 'e30', signature: 'AA', authenticatorData: 'AA' },
          },
        });
        assertSigninFailed(t, res, 'made-up assertion');
        assert.equal(sessionToken(res.headers['set-cookie']), undefined);
        const failures = async () =>
          Number(
            /usher_signin_attempts_total\{outcome="failure"\} (\d+)/.exec(
              (await t.get('/metrics')).body,
            )?.[1] ?? 0,
          );
        const before = await failures();
        assertSigninFailed(t, await t.post('/api/signin/passkey', {}), 'no credential');
        assert.equal(await failures(), before + 1, 'a failed passkey sign-in counts as a failed sign-in');
        assertSigninFailed(t, await t.post('/api/signin/passkey', { credential: 'x' }), 'not an object', 400);
      });

      test("a passkey signs in: the profile's success body, a session cookie that works, no password", async () => {
        const t = app();
        const { user, authenticator, passkey } = await enrolled(t);
        const res = await passkeySignIn(t, authenticator);
        assert.equal(res.statusCode, 200, res.body);
        const expected = { id: Number(user.id), email: user.email, name: user.name };
        const body = res.json();
        if (profile === 'a') assert.deepEqual(body, expected);
        else {
          assert.deepEqual(Object.keys(body), ['user']);
          assert.deepEqual({ id: body.user.id, email: body.user.email, name: body.user.name }, expected);
        }
        const token = sessionToken(res.headers['set-cookie']);
        assert.ok(token, 'a session cookie');
        const cookie = String(res.headers['set-cookie']);
        assert.match(cookie, /HttpOnly/);
        assert.match(cookie, /SameSite=Lax/);
        const session = await t.inject({
          method: 'GET',
          url: '/api/session',
          headers: { cookie: `usher_session=${token}` },
        });
        assert.equal(session.statusCode, 200);
        assert.equal(session.json().user.id, Number(user.id));
        // Audited like a password sign-in: the same log line and metric.
        const audit = t.logs
          .map((l) => JSON.parse(l))
          .find((l) => l.event === 'signin' && l.method === 'passkey' && l.userId === String(user.id));
        assert.equal(audit?.outcome, 'success');
        const metrics = (await t.get('/metrics')).body;
        assert.match(metrics, /usher_signin_attempts_total\{outcome="success"\} [1-9]/);
        const list = await asUser(t, token).get('/api/passkeys');
        assert.equal(list.json()[0].id, passkey.id);
      });

      test('the same assertion twice: the second is refused (single-use challenge)', async () => {
        const t = app();
        const { authenticator } = await enrolled(t);
        const assertion = authenticator.get(await signinOptions(t));
        assert.equal((await t.post('/api/signin/passkey', { credential: assertion })).statusCode, 200);
        assertSigninFailed(t, await t.post('/api/signin/passkey', { credential: assertion }), 'replayed');
      });

      test('a challenge is single-use even with a new signature and counter over it', async () => {
        const t = app();
        const { authenticator } = await enrolled(t);
        const options = await signinOptions(t);
        assert.equal(
          (await t.post('/api/signin/passkey', { credential: authenticator.get(options) })).statusCode,
          200,
        );
        assertSigninFailed(
          t,
          await t.post('/api/signin/passkey', { credential: authenticator.get(options) }),
          'reused challenge',
        );
      });

      test('a failed attempt spends its challenge too', async () => {
        const t = app();
        const { authenticator } = await enrolled(t);
        const options = await signinOptions(t);
        assertSigninFailed(
          t,
          await t.post('/api/signin/passkey', { credential: authenticator.get(options, { forge: true }) }),
          'forged',
        );
        assertSigninFailed(
          t,
          await t.post('/api/signin/passkey', { credential: authenticator.get(options) }),
          'retry on a spent challenge',
        );
      });

      test('a challenge expires after 5 minutes (sign-in and registration)', async () => {
        const t = app();
        const { authenticator, me } = await enrolled(t);
        const options = await signinOptions(t);
        const second = new SoftAuthenticator(ORIGIN);
        const creation = (await me.post('/api/passkeys/register/options', {})).json();
        offset += FIVE_MINUTES + 1000;
        try {
          assertSigninFailed(
            t,
            await t.post('/api/signin/passkey', { credential: authenticator.get(options) }),
            'expired',
          );
          assertValidationFailed(
            await me.post('/api/passkeys/register', { credential: second.create(creation) }),
            'expired registration',
          );
        } finally {
          offset -= FIVE_MINUTES + 1000;
        }
        // Just inside the five minutes it still works.
        const fresh = await signinOptions(t);
        offset += FIVE_MINUTES - 5000;
        try {
          assert.equal(
            (await t.post('/api/signin/passkey', { credential: authenticator.get(fresh) })).statusCode,
            200,
          );
        } finally {
          offset -= FIVE_MINUTES - 5000;
        }
      });

      test('a registration challenge is only good for the user it was issued to, and once', async () => {
        const t = app();
        const alice = await register(t);
        const bob = await register(t);
        const aliceMe = asUser(t, await signIn(t, alice));
        const bobMe = asUser(t, await signIn(t, bob));
        const options = (await aliceMe.post('/api/passkeys/register/options', {})).json();
        const authenticator = new SoftAuthenticator(ORIGIN);
        const credential = authenticator.create(options);
        assertValidationFailed(
          await bobMe.post('/api/passkeys/register', { credential }),
          "another user's challenge",
        );
        const again = (await aliceMe.post('/api/passkeys/register/options', {})).json();
        const ok = authenticator.create(again);
        assert.equal((await aliceMe.post('/api/passkeys/register', { credential: ok })).statusCode, 201);
        assertValidationFailed(
          await aliceMe.post('/api/passkeys/register', { credential: ok }),
          'reused registration challenge',
        );
      });

      test('one credential cannot be registered twice', async () => {
        const t = app();
        const { me, authenticator } = await enrolled(t);
        const options = (await me.post('/api/passkeys/register/options', {})).json();
        assertValidationFailed(
          await me.post('/api/passkeys/register', { credential: authenticator.create(options) }),
          'duplicate',
        );
      });

      test('the wrong origin or relying party is refused', async () => {
        const t = app();
        const user = await register(t);
        const me = asUser(t, await signIn(t, user));
        const authenticator = new SoftAuthenticator(ORIGIN);
        let options = (await me.post('/api/passkeys/register/options', {})).json();
        assertValidationFailed(
          await me.post('/api/passkeys/register', {
            credential: authenticator.create(options, { origin: 'https://evil.example' }),
          }),
          'origin',
        );
        options = (await me.post('/api/passkeys/register/options', {})).json();
        assertValidationFailed(
          await me.post('/api/passkeys/register', {
            credential: authenticator.create(options, { rpId: 'evil.example' }),
          }),
          'rp id',
        );
        options = (await me.post('/api/passkeys/register/options', {})).json();
        assert.equal(
          (await me.post('/api/passkeys/register', { credential: authenticator.create(options) })).statusCode,
          201,
        );
        assertSigninFailed(
          t,
          await passkeySignIn(t, authenticator, { origin: 'https://evil.example' }),
          'sign-in origin',
        );
        assertSigninFailed(
          t,
          await passkeySignIn(t, authenticator, { rpId: 'evil.example' }),
          'sign-in rp id',
        );
        assertSigninFailed(t, await passkeySignIn(t, authenticator, { forge: true }), 'forged signature');
        assert.equal((await passkeySignIn(t, authenticator)).statusCode, 200);
      });

      test('a signature counter that does not grow is refused; authenticators without counters still work', async () => {
        const t = app();
        const { authenticator } = await enrolled(t);
        assert.equal((await passkeySignIn(t, authenticator)).statusCode, 200);
        assert.equal((await passkeySignIn(t, authenticator)).statusCode, 200);
        // A clone of the authenticator, one step behind.
        assertSigninFailed(
          t,
          await passkeySignIn(t, authenticator, { counter: authenticator.counter }),
          'same counter',
        );
        assertSigninFailed(t, await passkeySignIn(t, authenticator, { counter: 1 }), 'lower counter');
        assert.equal((await passkeySignIn(t, authenticator)).statusCode, 200);

        const counterless = new SoftAuthenticator(ORIGIN, { usesCounter: false });
        await enrolled(t, counterless);
        assert.equal((await passkeySignIn(t, counterless)).statusCode, 200);
        assert.equal((await passkeySignIn(t, counterless)).statusCode, 200);
      });

      test('two assertions with one counter value, at once: exactly one signs in (the counter is written conditionally)', async () => {
        const t = app();
        const { authenticator } = await enrolled(t);
        const [one, two] = await Promise.all([signinOptions(t), signinOptions(t)]);
        const next = authenticator.counter + 1;
        const results = await Promise.all([
          t.post('/api/signin/passkey', { credential: authenticator.get(one, { counter: next }) }),
          t.post('/api/signin/passkey', { credential: authenticator.get(two, { counter: next }) }),
        ]);
        assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 401]);
      });

      test("an assertion naming another user's handle is refused", async () => {
        const t = app();
        const { authenticator } = await enrolled(t);
        const other = await register(t);
        const handle = Buffer.from(String(other.id)).toString('base64url');
        assertSigninFailed(t, await passkeySignIn(t, authenticator, { userHandle: handle }), 'user handle');
      });

      test("delete: 204 for your own, then it cannot sign in; another user's or unknown: 404 NOT_FOUND", async () => {
        const t = app();
        const alice = await enrolled(t);
        const bob = await enrolled(t);
        for (const id of [bob.passkey.id, '0'.repeat(32), 'nope', alice.passkey.id.toUpperCase()]) {
          const res = await alice.me.delete(`/api/passkeys/${id}`);
          assert.equal(res.statusCode, 404, id);
          assert.equal(res.json().error, 'NOT_FOUND');
        }
        assert.equal((await passkeySignIn(t, bob.authenticator)).statusCode, 200);
        assert.equal((await alice.me.delete(`/api/passkeys/${alice.passkey.id}`)).statusCode, 204);
        assert.deepEqual((await alice.me.get('/api/passkeys')).json(), []);
        assertSigninFailed(t, await passkeySignIn(t, alice.authenticator), 'deleted passkey');
        assert.equal((await alice.me.delete(`/api/passkeys/${alice.passkey.id}`)).statusCode, 404);
      });

      test("a deleted user's passkeys go with them", async () => {
        const t = app();
        const { user, me, authenticator } = await enrolled(t);
        assert.equal((await me.delete(`/api/users/${user.id}`)).statusCode, 204);
        assertSigninFailed(t, await passkeySignIn(t, authenticator), 'deleted user');
      });
    });
  }

  test('REQUIRE_VERIFIED_EMAIL: a passkey of an unverified account answers 403 SIGNIN_FAILED, like the password', async () => {
    const { authenticator } = await enrolled(apps.b as TestApp);
    const strict = await startApp(store, 'b', { publicUrl: PUBLIC_URL, requireVerifiedEmail: true });
    try {
      assertSigninFailed(strict, await passkeySignIn(strict, authenticator), 'unverified', 403);
    } finally {
      await strict.close();
    }
  });

  test('expired challenges are removed by housekeeping', async () => {
    await signinOptions(apps.a as TestApp);
    const config = testConfig(store, 'a');
    const database = openDatabase(store.url, config.database);
    try {
      const count = async () =>
        Number(
          (
            await database.db
              .selectFrom('webauthn_challenges')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      assert.ok((await count()) > 0);
      const services = compose(config, database, { now: () => Date.now() + FIVE_MINUTES + 1000 });
      await services.passkeys.passkeys.purgeExpired();
      assert.equal(await count(), 0);
    } finally {
      await database.close();
    }
  });
});
