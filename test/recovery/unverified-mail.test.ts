// Issue 25: registration made Usher a spam relay: each registration mailed "Confirm your email
// address" to any address, greeting it with the name the registrant chose ("Hello Prize desk:
// claim 500 EUR at https://evil.example/claim,"). Mail to an address nobody has proven now carries
// no text the registrant chose (the name, a passkey's name, a new address); mail to a proven
// address still greets its owner by name. Mail is received by a real SMTP server.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { asUser, newUser, register, signIn, type TestApp } from '../helpers/app.ts';
import { mailingApps, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { linkToken, type ReceivedMail, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://accounts.usher.example';
const SPAM = 'Prize desk: claim 500 EUR at https://evil.example/claim';
const CHANGED_EMAIL = /email address of your account was changed/i;

function assertNoSpam(mail: ReceivedMail, what: string) {
  for (const part of [mail.text, mail.html, mail.subject]) {
    assert.ok(!part.includes('Prize desk') && !part.includes('evil.example'), `${what}: ${part}`);
  }
  assert.ok(mail.text.startsWith('Hello,\n'), `${what} greets nobody by name: ${mail.text}`);
}

describeEachStore('no registrant-chosen text in mail to unverified addresses', (store) => {
  const mailing = mailingApps(store, PUBLIC_URL);
  let smtp: TestSmtp;
  before(() => {
    smtp = mailing.smtp;
  });

  const one = async (email: string, subject: RegExp, count = 1) =>
    (await waitForMails(smtp, email, subject, count))[count - 1]!;

  for (const profile of ['a', 'b'] as const satisfies readonly Profile[]) {
    test(`[${profile}] ISSUE 25: the verification mail of a registration has no name in it; a reset mail has none until the address is verified, then greets by name`, async () => {
      const t: TestApp = mailing.apps[profile];
      const user = await register(t, newUser({ name: SPAM }));
      const expected =
        profile === 'a' ? ['email', 'id', 'name'] : ['createdAt', 'email', 'emailVerified', 'id', 'name'];
      assert.deepEqual(Object.keys(user.res.json()).sort(), expected);
      assert.equal(user.res.json().name, SPAM, 'the name is still the account’s');

      const verify = await one(user.email, SUBJECTS.verify);
      assertNoSpam(verify, 'the verification mail');

      // Anyone may ask for a reset link to any address: to an unproven one, no name either.
      assert.equal((await t.post('/api/password/forgot', { email: user.email })).statusCode, 202);
      assertNoSpam(await one(user.email, SUBJECTS.reset), 'a reset mail before verifying');

      // A password change by the registrant is announced to the address: no name.
      const me = asUser(t, await signIn(t, user));
      const changed = await me.put(`/api/users/${user.id}`, {
        email: user.email,
        name: SPAM,
        password: 'another pass phrase',
        currentPassword: user.password,
      });
      assert.equal(changed.statusCode, 200, changed.body);
      assertNoSpam(await one(user.email, SUBJECTS.changed), 'the password-changed notice before verifying');

      // Resending the link: no name.
      assert.equal((await me.post('/api/email/verify/resend', {})).statusCode, 202);
      assertNoSpam(await one(user.email, SUBJECTS.verify, 2), 'a resent verification mail');

      // Once the owner of the address followed a link, mail to it greets them by name again.
      const token = linkToken(verify, '/verify-email');
      assert.equal((await t.post('/api/email/verify', { token })).statusCode, 204);
      assert.equal((await t.post('/api/password/forgot', { email: user.email })).statusCode, 202);
      const named = await one(user.email, SUBJECTS.reset, 2);
      assert.ok(named.text.startsWith(`Hello ${SPAM},\n`), named.text);
    });
  }

  test('ISSUE 25: an email change: the link to the new address has no name; the notice to an unverified old address names neither the user nor the new address', async () => {
    const t = mailing.apps.b;
    const user = await register(t, newUser({ name: SPAM }));
    await one(user.email, SUBJECTS.verify);
    const me = asUser(t, await signIn(t, user));
    const next = `claim-500-eur.${newUser().email}`;
    const res = await me.put(`/api/users/${user.id}`, {
      email: next,
      name: SPAM,
      currentPassword: user.password,
    });
    assert.equal(res.statusCode, 200, res.body);

    assertNoSpam(await one(next, SUBJECTS.verify), 'the link to the new address');
    const notice = await one(user.email, CHANGED_EMAIL);
    assertNoSpam(notice, 'the notice to the unverified old address');
    assert.ok(!notice.text.includes(next), `the new address is the registrant's text too: ${notice.text}`);
    assert.match(notice.text, /changed from this one to another/);
  });

  test('ISSUE 25: an email change from a verified address: the notice names the user and the new address, as before', async () => {
    const t = mailing.apps.b;
    const user = await register(t, newUser({ name: 'Ada Lovelace' }));
    const token = linkToken(await one(user.email, SUBJECTS.verify), '/verify-email');
    assert.equal((await t.post('/api/email/verify', { token })).statusCode, 204);
    const me = asUser(t, await signIn(t, user));
    const next = newUser().email;
    const res = await me.put(`/api/users/${user.id}`, {
      email: next,
      name: user.name,
      currentPassword: user.password,
    });
    assert.equal(res.statusCode, 200, res.body);
    const notice = await one(user.email, CHANGED_EMAIL);
    assert.ok(notice.text.startsWith('Hello Ada Lovelace,\n'), notice.text);
    assert.ok(notice.text.includes(next), notice.text);
    // The new address is not proven: its link has no name.
    const link = await one(next, SUBJECTS.verify);
    assert.ok(!link.text.includes('Ada Lovelace'), link.text);
  });
});
