// Adding a passkey (a credential that outlives sessions and password resets) needs a recent
// sign-in, and is announced by mail to the account's address, so a stolen older token or a
// borrowed device cannot quietly plant one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, waitForMails } from '../helpers/mail.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
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
      { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) },
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

  test('ISSUE 14: a passkey added is announced to the account address, with its name', async () => {
    const user = await register(t);
    const me = asUser(t, await signIn(t, user));
    const options = await me.post('/api/passkeys/register/options', {});
    const added = await me.post('/api/passkeys/register', {
      credential: new SoftAuthenticator(PUBLIC_URL).create(options.json()),
      name: 'Work laptop',
    });
    assert.equal(added.statusCode, 201, added.body);
    const [notice] = await waitForMails(smtp, user.email, /passkey was added/i);
    assert.match(notice!.text, /"Work laptop"/);
  });
});
