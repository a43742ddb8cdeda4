// Issue 40, finding 5: "a provider identity verified for \u212Aate@… was linked to and signed in
// to kate@…'s account". The emails are one key now (decision 352), but the provider verified
// \u212Aate@, another mailbox at most mail hosts: its verification counts only for the address it
// sent as is, so it is not proof of the account's address (decision 354). The identity is refused
// (ACCOUNT_EXISTS), nothing is linked; the same address in another letter case still links.
// The provider is real (panva's oidc-provider), driven over HTTP; mail goes through real SMTP.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { newUser } from '../helpers/app.ts';
import { mailTo, SUBJECTS } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  account,
  assertRefused,
  assertSignedIn,
  Browser,
  listeningUsher,
  providerPerson,
  type Usher,
  verifiedUser,
} from './support.ts';

const KELVIN = '\u212A';

describeEachStore('provider sign-in: one email, one key (issue 40, finding 5)', (store) => {
  let provider: TestOidcProvider;
  let smtp: TestSmtp;
  let usher: Usher;
  before(async () => {
    provider = await startOidcProvider();
    smtp = await startSmtp();
    usher = await listeningUsher(store, 'b', provider, { overrides: { mail: mailTo(smtp.url) } });
  });
  after(async () => {
    await usher?.t.close();
    await provider?.close();
    await smtp?.close();
  });

  const kate = () => newUser({ email: `kate.${randomBytes(4).toString('hex')}@example.com` });

  test('ISSUE 40: an identity verified for \\u212Aate@ is not linked to kate@ (both verified): ACCOUNT_EXISTS, no identity on the account', async () => {
    const owner = await verifiedUser(usher.t, smtp, kate());
    const person = providerPerson(provider, {
      email: `${KELVIN}${owner.email.slice(1)}`,
      email_verified: true,
    });
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'ACCOUNT_EXISTS',
    );
    const me = await account(usher.t, await new Browser().passwordSignIn(usher, owner));
    assert.deepEqual(me.identities, [], 'nothing linked to kate@');
  });

  test('ISSUE 40: the same for fullwidth ｋate@', async () => {
    const owner = await verifiedUser(usher.t, smtp, kate());
    const person = providerPerson(provider, { email: `\uFF4B${owner.email.slice(1)}`, email_verified: true });
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'ACCOUNT_EXISTS',
    );
  });

  test('ISSUE 40: the account\u2019s own address in other letter case still links (the contract\u2019s case-insensitive email)', async () => {
    const owner = await verifiedUser(usher.t, smtp, kate());
    const person = providerPerson(provider, { email: owner.email.toUpperCase(), email_verified: true });
    const token = await assertSignedIn(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
    );
    assert.equal((await account(usher.t, token)).user.id, Number(owner.id));
  });

  test('ISSUE 40: \\u212Aate@ with no account makes one at Kate@ whose email is not verified: no session until it is, and the verification is mailed to Kate@', async () => {
    const local = `ate.${randomBytes(4).toString('hex')}`;
    const person = providerPerson(provider, { email: `${KELVIN}${local}@example.com`, email_verified: true });
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'SIGNIN_FAILED',
    );
    const mail = await smtp.waitFor(
      (m) => SUBJECTS.verify.test(m.subject) && m.envelopeTo.some((to) => to.includes(local)),
    );
    assert.deepEqual(mail.envelopeTo, [`K${local}@example.com`]);
  });
});
