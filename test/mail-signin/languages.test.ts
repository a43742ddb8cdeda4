// Sign-in mails in the user's language (issue 31): an account's mail in its `locale`, and, for an
// email with no account (EMAIL_SIGNIN_CREATES_ACCOUNTS), in the asking browser's language, which
// the account it makes then keeps.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, waitForMails } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { askCode, askLink, codeOf, PUBLIC_URL, postFrom, unknownEmail, verifyCode } from './support.ts';

describeEachStore('Sign-in mails in the user’s language', (store) => {
  let smtp: TestSmtp;
  let t: TestApp;
  before(async () => {
    smtp = await startSmtp();
    t = await startApp(store, 'b', {
      publicUrl: PUBLIC_URL,
      mail: mailTo(smtp.url),
      emailSigninCreatesAccounts: true,
    });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  test('an account registered from a French browser gets its sign-in link in French', async () => {
    const email = unknownEmail('francoise');
    const registered = await postFrom(
      t,
      '/api/users',
      { email, name: 'Françoise', password: 'une phrase de passe assez longue' },
      { headers: { 'accept-language': 'fr-FR, en;q=0.5' } },
    );
    assert.equal(registered.statusCode, 201, registered.body);
    // Asked from a browser in English: the account's language decides.
    assert.equal((await askLink(t, email, {}, { headers: { 'accept-language': 'en' } })).statusCode, 202);
    const [mail] = await waitForMails(smtp, email, /lien de connexion/);
    assert.match(mail!.text, /signin\/email-link#token=/);
  });

  test('a new email asked for from a German browser: the code comes in German, and the account made with it keeps de-AT', async () => {
    const email = unknownEmail('neu');
    const asked = await askCode(t, email, { headers: { 'accept-language': 'de-AT, de;q=0.9, en;q=0.5' } });
    assert.equal(asked.statusCode, 202);
    const [mail] = await waitForMails(smtp, email, /Anmeldecode/);
    const res = await verifyCode(t, email, codeOf(mail!));
    assert.equal(res.statusCode, 200, res.body);
    const token = /usher_session=([^;]+)/.exec(String(res.headers['set-cookie']))![1]!;
    const account = await t.inject({
      method: 'GET',
      url: '/api/account',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(account.statusCode, 200, account.body);
    assert.equal(account.json().locale, 'de-AT');
  });
});
