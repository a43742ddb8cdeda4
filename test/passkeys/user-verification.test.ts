// A passkey signs in alone, without the password and without a TOTP code, so it must be two
// factors itself: possession of the authenticator and its PIN or biometric (user verification).
// A touch-only assertion (user present, not verified) is refused on every account, as is a
// passkey registered without verification, which could never sign in (issue 25).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import type { Profile } from '../../src/config.ts';
import { asUser, register, sessionToken, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { metric } from '../helpers/mail.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { describeEachStore } from '../helpers/stores.ts';

const ORIGIN = 'https://id.example.test:8443';

describeEachStore('Passkeys need user verification', (store) => {
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    // PostgreSQL needs ENCRYPTION_KEY for TOTP (SQLite keeps a key file beside the database).
    for (const profile of ['a', 'b'] as const)
      apps[profile] = await startApp(store, profile, { publicUrl: ORIGIN, encryptionKey: randomBytes(32) });
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  /** A signed-in user with TOTP in force (when asked) and a passkey registered with verification. */
  async function enrolled(t: TestApp, withTotp: boolean) {
    const user = await register(t);
    const me = asUser(t, await signIn(t, user));
    if (withTotp) {
      const setup = await me.post('/api/mfa/totp', { password: user.password });
      assert.equal(setup.statusCode, 200, setup.body);
      const code = new TOTP({ secret: Secret.fromBase32(setup.json().secret) }).generate();
      assert.equal((await me.post('/api/mfa/totp/confirm', { code })).statusCode, 200);
      const passwordAlone = await t.post('/api/signin', { email: user.email, password: user.password });
      assert.equal(passwordAlone.headers['usher-second-factor'], 'totp', 'TOTP is in force');
    }
    const authenticator = new SoftAuthenticator(ORIGIN);
    const options = await me.post('/api/passkeys/register/options', {});
    const added = await me.post('/api/passkeys/register', {
      credential: authenticator.create(options.json()),
    });
    assert.equal(added.statusCode, 201, added.body);
    return { user, me, authenticator };
  }

  const signinOptions = async (t: TestApp) => {
    const res = await t.post('/api/signin/passkey/options', {});
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { challenge: string; rpId: string; userVerification: string };
  };

  function assertSigninFailed(
    t: TestApp,
    res: { statusCode: number; body: string; headers: object },
    what: string,
  ) {
    assert.equal(res.statusCode, 401, `${what}: ${res.body}`);
    const body = JSON.parse(res.body);
    if (t.profile === 'a') assert.deepEqual(body, { error: 'SIGNIN_FAILED' }, what);
    else assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], what);
    assert.equal(body.error, 'SIGNIN_FAILED', what);
    assert.equal(
      sessionToken((res.headers as Record<string, string>)['set-cookie']),
      undefined,
      `${what}: no session`,
    );
  }

  for (const profile of ['a', 'b'] as const) {
    describe(`profile ${profile}`, () => {
      for (const withTotp of [true, false]) {
        test(`ISSUE 25: a touch-only assertion (no UV flag) is 401 SIGNIN_FAILED on an account ${withTotp ? 'with' : 'without'} TOTP, and spends its challenge`, async () => {
          const t = apps[profile];
          const { user, authenticator } = await enrolled(t, withTotp);
          const options = await signinOptions(t);
          assert.equal(options.userVerification, 'required', 'the browser is told, too');
          const failedLines = () =>
            t.logs
              .map((l) => JSON.parse(l))
              .filter((l) => l.event === 'signin' && l.userId === String(user.id) && l.outcome === 'failure')
              .length;
          const failuresBefore = await metric(t, 'usher_signin_attempts_total', 'outcome="failure"');
          const linesBefore = failedLines();
          const touched = await t.post('/api/signin/passkey', {
            credential: authenticator.get(options, { presenceOnly: true }),
          });
          assertSigninFailed(t, touched, 'touch only');
          assert.equal(
            await metric(t, 'usher_signin_attempts_total', 'outcome="failure"'),
            failuresBefore + 1,
            'counted as a failed sign-in',
          );
          assert.equal(failedLines(), linesBefore + 1, "audited as a failed sign-in of the passkey's owner");
          // The challenge is gone: the same options with a verified assertion do not sign in either.
          assertSigninFailed(
            t,
            await t.post('/api/signin/passkey', { credential: authenticator.get(options) }),
            'the spent challenge, verified this time',
          );
          // The passkey itself is fine: verified, on fresh options, it signs in.
          const verified = await t.post('/api/signin/passkey', {
            credential: authenticator.get(await signinOptions(t)),
          });
          assert.equal(verified.statusCode, 200, verified.body);
          assert.ok(sessionToken(verified.headers['set-cookie']));
        });
      }

      test('ISSUE 25: a passkey created without user verification is refused at registration (400 credential: …), not stored, and never signs in', async () => {
        const t = apps[profile];
        const user = await register(t);
        const me = asUser(t, await signIn(t, user));
        const options = await me.post('/api/passkeys/register/options', {});
        assert.equal(options.json().authenticatorSelection.userVerification, 'required');
        const touchOnly = new SoftAuthenticator(ORIGIN);
        const res = await me.post('/api/passkeys/register', {
          credential: touchOnly.create(options.json(), { presenceOnly: true }),
        });
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error, 'VALIDATION_FAILED');
        assert.match(res.json().message, /^credential: the authenticator did not verify you/);
        assert.deepEqual((await me.get('/api/passkeys')).json(), []);
        assertSigninFailed(
          t,
          await t.post('/api/signin/passkey', { credential: touchOnly.get(await signinOptions(t)) }),
          'never registered',
        );
      });
    });
  }
});
