// Sign-in by a link or a code in a mail (issue 31, CONTRACT "Sign-in by mail, languages, and users
// from other systems"), end to end through HTTP and a real SMTP server, in both profiles.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newUser, register, sessionToken, type TestApp } from '../helpers/app.ts';
import { mailingApps, waitForMails } from '../helpers/mail.ts';
import { linkToken, type ReceivedMail } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'http://usher.test';
const LINK = /sign-in link/i;
const CODE = /sign-in code/i;
const codeOf = (mail: ReceivedMail) => /\b(\d{6})\b/.exec(mail.subject)![1]!;

describeEachStore('Sign-in by mail', (store) => {
  const suite = mailingApps(store, PUBLIC_URL);

  for (const profile of ['a', 'b'] as const) {
    const app = (): TestApp => suite.apps[profile];

    test(`profile ${profile}: a link from the mail signs in once, with the profile's body and a session`, async () => {
      const u = await register(app());
      const asked = await app().post('/api/signin/email-link', { email: u.email, redirectTo: '/account' });
      assert.equal(asked.statusCode, 202, asked.body);
      assert.deepEqual(asked.json(), { status: 'accepted' });
      const [mail] = await waitForMails(suite.smtp, u.email, LINK);
      assert.ok(mail!.text.includes(`${PUBLIC_URL}/signin/email-link#token=`), mail!.text);
      const token = linkToken(mail!, '/signin/email-link');
      const res = await app().post('/api/signin/email-link/verify', { token });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      const user = profile === 'a' ? body : body.user;
      assert.equal(user.email, u.email);
      assert.equal(res.headers['usher-redirect-to'], `${PUBLIC_URL}/account`);
      const session = sessionToken(res.headers['set-cookie']);
      assert.ok(session, 'a session cookie is set');
      const me = await app().inject({
        method: 'GET',
        url: '/api/account',
        headers: { authorization: `Bearer ${session}` },
      });
      assert.equal(me.statusCode, 200, me.body);
      // Once only.
      const again = await app().post('/api/signin/email-link/verify', { token });
      assert.equal(again.statusCode, 401);
      assert.equal(again.json().error, 'SIGNIN_FAILED');
    });

    test(`profile ${profile}: a code from the mail signs in once and verifies the email`, async () => {
      const u = await register(app());
      assert.equal((await app().post('/api/signin/email-code', { email: u.email })).statusCode, 202);
      const [mail] = await waitForMails(suite.smtp, u.email, CODE);
      const code = codeOf(mail!);
      assert.ok(mail!.text.includes(code));
      const res = await app().post('/api/signin/email-code/verify', { email: u.email.toUpperCase(), code });
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(sessionToken(res.headers['set-cookie']));
      if (profile === 'b') assert.equal(res.json().user.emailVerified, true);
      const again = await app().post('/api/signin/email-code/verify', { email: u.email, code });
      assert.equal(again.statusCode, 401);
    });
  }

  test('an unknown email is answered alike and mailed nothing', async () => {
    const ghost = newUser().email;
    const res = await suite.apps.b.post('/api/signin/email-link', { email: ghost });
    assert.equal(res.statusCode, 202);
    assert.deepEqual(res.json(), { status: 'accepted' });
    const known = await register(suite.apps.b);
    await suite.apps.b.post('/api/signin/email-link', { email: known.email });
    await waitForMails(suite.smtp, known.email, LINK);
    assert.equal(suite.smtp.messages.filter((m) => m.to === ghost).length, 0);
  });

  test('a redirectTo on another origin is refused, 400 VALIDATION_FAILED', async () => {
    const res = await suite.apps.b.post('/api/signin/email-link', {
      email: newUser().email,
      redirectTo: 'https://evil.example/x',
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error, 'VALIDATION_FAILED');
  });
});
