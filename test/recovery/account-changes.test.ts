// PUT /api/users/{id} and the mail it causes (CONTRACT "Mail, password reset and email
// verification"): a new email becomes unverified, gets a link and the old address a notice; a new
// password is announced; a name alone sends nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asUser, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailsTo, mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CHANGED_EMAIL = /email address of your account was changed/i;

describeEachStore('Account changes and their mail', (store) => {
  let smtp: TestSmtp;
  let t: TestApp;
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(store, 'b', { mail: mailTo(smtp.url) });
  });
  after(async () => {
    await t.close();
    await smtp.close();
  });

  /** A registered user whose first address is verified, signed in. */
  async function verifiedUser() {
    const u = await register(t);
    const [mail] = await waitForMails(smtp, u.email, SUBJECTS.verify);
    assert.equal(
      (await t.post('/api/email/verify', { token: linkToken(mail!, '/verify-email') })).statusCode,
      204,
    );
    return { ...u, me: asUser(t, await signIn(t, u)) };
  }

  const emailVerified = async (id: bigint) =>
    (await t.get(`/api/users/${id}`)).json().emailVerified as boolean;

  test('ISSUE 13: a new email is unverified, gets a verification link, and the old address gets a notice', async () => {
    const u = await verifiedUser();
    const oldLink = await (async () => {
      // A verification link for the old address, asked for before the change.
      const [first] = mailsTo(smtp, u.email, SUBJECTS.verify);
      return linkToken(first!, '/verify-email');
    })();
    assert.equal(await emailVerified(u.id), true);
    const next = newUser().email;
    const res = await u.me.put(`/api/users/${u.id}`, {
      email: next,
      name: u.name,
      currentPassword: u.password,
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().emailVerified, false, 'the new address is not proven yet');
    assert.equal(await emailVerified(u.id), false);

    const [notice] = await waitForMails(smtp, u.email, CHANGED_EMAIL);
    assert.ok(notice!.text.includes(next), 'the notice names the new address');
    assert.doesNotMatch(notice!.text, /#token=/, 'the notice carries no link to act on');
    const [link] = await waitForMails(smtp, next, SUBJECTS.verify);
    // The old address's link proves nothing about the new one.
    assert.equal((await t.post('/api/email/verify', { token: oldLink })).json().error, 'INVALID_TOKEN');
    assert.equal(
      (await t.post('/api/email/verify', { token: linkToken(link!, '/verify-email') })).statusCode,
      204,
    );
    assert.equal(await emailVerified(u.id), true);
  });

  test('ISSUE 13: a new password is announced to the account address', async () => {
    const u = await verifiedUser();
    const res = await u.me.put(`/api/users/${u.id}`, {
      email: u.email,
      name: u.name,
      password: 'a different passphrase',
      currentPassword: u.password,
    });
    assert.equal(res.statusCode, 200, res.body);
    const [notice] = await waitForMails(smtp, u.email, SUBJECTS.changed);
    assert.doesNotMatch(notice!.text, /a different passphrase/);
    assert.equal(await emailVerified(u.id), true, 'the address did not change, so it stays verified');
  });

  test('ISSUE 13: a name change alone sends nothing and keeps the address verified', async () => {
    const u = await verifiedUser();
    const before = smtp.messages.length;
    assert.equal((await u.me.put(`/api/users/${u.id}`, { email: u.email, name: 'Renamed' })).statusCode, 200);
    // A password change of another user afterwards: once its notice is here, the rename's mail
    // (if there were one) would have been delivered before it.
    const other = await verifiedUser();
    await other.me.put(`/api/users/${other.id}`, {
      email: other.email,
      name: other.name,
      password: 'yet another passphrase',
      currentPassword: other.password,
    });
    await waitForMails(smtp, other.email, SUBJECTS.changed);
    const sinceRename = smtp.messages.slice(before).filter((m) => m.to === u.email);
    assert.deepEqual(sinceRename, []);
    assert.equal(await emailVerified(u.id), true);
  });

  test('ISSUE 13: a reset link mailed to the old address stops working when the email changes', async () => {
    const u = await verifiedUser();
    assert.equal((await t.post('/api/password/forgot', { email: u.email })).statusCode, 202);
    const [reset] = await waitForMails(smtp, u.email, SUBJECTS.reset);
    const next = newUser().email;
    const res = await u.me.put(`/api/users/${u.id}`, {
      email: next,
      name: u.name,
      currentPassword: u.password,
    });
    assert.equal(res.statusCode, 200, res.body);
    const used = await t.post('/api/password/reset', {
      token: linkToken(reset!, '/reset-password'),
      password: 'taken over passphrase',
    });
    assert.equal(used.statusCode, 400);
    assert.equal(used.json().error, 'INVALID_TOKEN');
    assert.equal(await emailVerified(u.id), false, 'the new address is still unproven');
    assert.equal((await t.post('/api/signin', { email: next, password: u.password })).statusCode, 200);
  });
});
