// Adding a passkey (a credential that outlives sessions and password resets) needs a recent
// sign-in, and is announced by mail to the account's address, so a stolen older token or a
// borrowed device cannot quietly plant one.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://id.example.test:8443';
const MINUTE = 60_000;

describeEachStore('Adding a passkey', (store) => {
  let offset = 0;
  let smtp: TestSmtp;
  let t: TestApp;
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(
      store,
      'b',
      // PostgreSQL needs ENCRYPTION_KEY for TOTP (SQLite keeps a key file beside the database).
      { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url), encryptionKey: randomBytes(32) },
      { clock: () => Date.now() + offset },
    );
  });
  after(async () => {
    await t.close();
    await smtp.close();
  });

  test('ISSUE 14: needs a sign-in of the last 10 minutes; an older session gets 403 FORBIDDEN, then a fresh sign-in may', async () => {
    const user = await register(t);
    const me = asUser(t, await signIn(t, user));
    const early = await me.post('/api/passkeys/register/options', {});
    assert.equal(early.statusCode, 200, early.body);
    offset += 11 * MINUTE; // the session lives on (idle 1 day), but is no longer a fresh sign-in
    try {
      const options = await me.post('/api/passkeys/register/options', {});
      assert.equal(options.statusCode, 403, options.body);
      assert.equal(options.json().error, 'FORBIDDEN');
      assert.match(options.json().message, /sign in again/);
      // Options fetched while it was fresh do not help once it is not.
      const late = await me.post('/api/passkeys/register', {
        credential: new SoftAuthenticator(PUBLIC_URL).create(early.json()),
      });
      assert.equal(late.statusCode, 403, late.body);
      assert.equal((await me.get('/api/passkeys')).json().length, 0);

      const again = asUser(t, await signIn(t, user));
      const fresh = await again.post('/api/passkeys/register/options', {});
      assert.equal(fresh.statusCode, 200, fresh.body);
    } finally {
      offset -= 11 * MINUTE;
    }
  });

  test('ISSUE 14: a passkey added is announced to the account address, with its name once the address is verified (ISSUE 25: without it before)', async () => {
    const user = await register(t);
    const me = asUser(t, await signIn(t, user));
    const add = async (name: string) => {
      const options = await me.post('/api/passkeys/register/options', {});
      const added = await me.post('/api/passkeys/register', {
        credential: new SoftAuthenticator(PUBLIC_URL).create(options.json()),
        name,
      });
      assert.equal(added.statusCode, 201, added.body);
    };
    // A passkey's name is the account holder's text: not for an address nobody has proven.
    await add('Claim 500 EUR at evil.example');
    const [unproven] = await waitForMails(smtp, user.email, /passkey was added/i);
    assert.ok(!unproven!.text.includes('evil.example'), unproven!.text);
    assert.match(unproven!.text, /^A passkey was just added/m);

    const [verify] = await waitForMails(smtp, user.email, SUBJECTS.verify);
    const token = linkToken(verify!, '/verify-email');
    assert.equal((await t.post('/api/email/verify', { token })).statusCode, 204);
    await add('Work laptop');
    const [, notice] = await waitForMails(smtp, user.email, /passkey was added/i, 2);
    assert.match(notice!.text, /"Work laptop"/);
  });

  test('ISSUE 14: a passkey signs in without a TOTP code even when TOTP is on, and counts as method passkey', async () => {
    const user = await register(t);
    const me = asUser(t, await signIn(t, user));
    const setup = await me.post('/api/mfa/totp', { password: user.password });
    assert.equal(setup.statusCode, 200, setup.body);
    const code = new TOTP({ secret: Secret.fromBase32(setup.json().secret) }).generate({
      timestamp: Date.now() + offset,
    });
    assert.equal((await me.post('/api/mfa/totp/confirm', { code })).statusCode, 200);
    const withoutCode = await t.post('/api/signin', { email: user.email, password: user.password });
    assert.equal(withoutCode.statusCode, 401);
    assert.equal(withoutCode.headers['usher-second-factor'], 'totp');

    const authenticator = new SoftAuthenticator(PUBLIC_URL);
    const options = await me.post('/api/passkeys/register/options', {});
    const added = await me.post('/api/passkeys/register', {
      credential: authenticator.create(options.json()),
    });
    assert.equal(added.statusCode, 201, added.body);
    const passkeyMetric = async () =>
      Number(
        /usher_signins_total\{method="passkey",outcome="success"\} (\d+)/.exec(
          (await t.get('/metrics')).body,
        )?.[1] ?? 0,
      );
    const before = await passkeyMetric();
    const request = await t.post('/api/signin/passkey/options', {});
    const res = await t.post('/api/signin/passkey', { credential: authenticator.get(request.json()) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().user.email, user.email);
    assert.equal(await passkeyMetric(), before + 1);
  });
});
