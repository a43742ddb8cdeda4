// Linking and unlinking provider identities from the account (CONTRACT "Sign in with a provider",
// "Accounts and sign-in methods"): intent=link needs a session signed in within 10 minutes
// (UNAUTHENTICATED, REAUTHENTICATION_REQUIRED), links whatever the emails say, refuses an identity
// another account holds (IDENTITY_TAKEN), starts no new session, and mails a notice; GET
// /api/identities and GET /api/account list identities; DELETE /api/identities/{id} needs a fresh
// sign-in, keeps the last sign-in method (LAST_SIGNIN_METHOD), is 404 for another's or an unknown
// id, and mails a notice. The provider is real (panva's oidc-provider), driven over HTTP; mail goes
// through a real SMTP server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { register } from '../helpers/app.ts';
import { mailsTo, mailTo, waitForMails } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  account,
  assertRefused,
  assertSignedIn,
  Browser,
  getAs,
  type Identity,
  linkedMails,
  listeningUsher,
  PROFILES,
  PROVIDER,
  PROVIDER_NAME,
  providerPerson,
  type Usher,
} from './support.ts';

const MINUTE = 60_000;
const UNLINKED = /unlinked/i;

describeEachStore('Linking provider identities', (store) => {
  let provider: TestOidcProvider;
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, Usher>;
  /** An app whose clock the test moves (sessions older than 10 minutes). */
  let aged: Usher;
  let offset = 0;
  before(async () => {
    provider = await startOidcProvider();
    smtp = await startSmtp();
    const mail = mailTo(smtp.url);
    for (const profile of PROFILES)
      apps[profile] = await listeningUsher(store, profile, provider, { overrides: { mail } });
    aged = await listeningUsher(store, 'b', provider, {
      overrides: { mail },
      options: { clock: () => Date.now() + offset },
    });
  });
  after(async () => {
    for (const u of [apps.a, apps.b, aged]) await u?.t.close();
    await provider?.close();
    await smtp?.close();
  });

  const identities = async (usher: Usher, token: string) => {
    const res = await getAs(usher.t, token, '/api/identities');
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as Identity[];
  };
  const unlink = (usher: Usher, token: string, id: string) =>
    usher.t.inject({
      method: 'DELETE',
      url: `/api/identities/${id}`,
      headers: { authorization: `Bearer ${token}` },
    });
  const userId = async (usher: Usher, token: string) => (await account(usher.t, token)).user.id;

  /** A registered user signed in with a password in a browser (fresh sign-in). */
  async function signedIn(usher: Usher) {
    const user = await register(usher.t);
    const browser = new Browser();
    const token = await browser.passwordSignIn(usher, user);
    return { user, browser, token };
  }

  for (const profile of PROFILES) {
    test(`[${profile}] intent=link links the identity to the signed-in account (whatever its email), no new session, a notice mailed; the identity then signs that account in`, async () => {
      const usher = apps[profile];
      const { user, browser, token } = await signedIn(usher);
      // Another email, not verified at the provider: linking from the account does not depend on it.
      const person = providerPerson(provider, { email_verified: false });
      const flow = await browser.flow(usher, provider, {
        login: person.login,
        intent: 'link',
        redirectTo: '/settings',
      });
      assert.equal(flow.callback.status, 303);
      assert.equal(flow.location?.href, `${usher.base}/settings`, 'back to redirectTo, no error');
      assert.equal(flow.session, undefined, 'no new session');
      assert.equal(browser.session(usher), token, 'the browser keeps its session');

      const listed = await identities(usher, token);
      assert.equal(listed.length, 1);
      assert.deepEqual(Object.keys(listed[0]!).sort(), ['createdAt', 'email', 'id', 'provider']);
      assert.equal(listed[0]!.provider, PROVIDER);
      assert.equal(listed[0]!.email, person.email);
      assert.deepEqual((await account(usher.t, token)).identities, listed);

      const [mail] = await waitForMails(smtp, user.email, /linked/i);
      assert.ok(!UNLINKED.test(mail!.subject), mail!.subject);
      assert.ok(mail!.text.includes(PROVIDER_NAME), `the notice names the provider: ${mail!.text}`);
      assert.equal(mailsTo(smtp, person.email!).length, 0, 'nothing to the provider’s address');

      const again = await new Browser().flow(usher, provider, { login: person.login });
      const other = await assertSignedIn(usher, again);
      assert.equal(await userId(usher, other), Number(user.id), 'the linked identity signs that account in');
    });
  }

  test('intent=link without a session: 401 UNAUTHENTICATED, no redirect', async () => {
    const res = await new Browser().start(apps.a, { intent: 'link' });
    const text = await res.text();
    assert.equal(res.status, 401, text);
    assert.equal(JSON.parse(text).error, 'UNAUTHENTICATED');
    assert.equal(res.headers.get('location'), null);
  });

  test('intent=link with a sign-in older than 10 minutes: 401 REAUTHENTICATION_REQUIRED; a fresh sign-in may', async () => {
    const { user, browser } = await signedIn(aged);
    offset += 11 * MINUTE;
    try {
      const res = await browser.start(aged, { intent: 'link' });
      const text = await res.text();
      assert.equal(res.status, 401, text);
      assert.equal(JSON.parse(text).error, 'REAUTHENTICATION_REQUIRED');
      assert.equal(res.headers.get('location'), null);
      await browser.passwordSignIn(aged, user);
      const fresh = await browser.start(aged, { intent: 'link' });
      assert.equal(fresh.status, 302, await fresh.text());
    } finally {
      offset -= 11 * MINUTE;
    }
  });

  test('an identity another account holds: IDENTITY_TAKEN, it stays where it was', async () => {
    const usher = apps.b;
    const person = providerPerson(provider);
    const owner = await assertSignedIn(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
    );
    const { browser, token } = await signedIn(usher);
    const flow = await browser.flow(usher, provider, { login: person.login, intent: 'link' });
    await assertRefused(usher, flow, 'IDENTITY_TAKEN');
    assert.deepEqual(await identities(usher, token), []);
    assert.equal((await identities(usher, owner)).length, 1);
  });

  test('Cancel while linking: OAUTH_DENIED, nothing linked', async () => {
    const usher = apps.a;
    const { browser, token } = await signedIn(usher);
    const flow = await browser.flow(usher, provider, {
      login: providerPerson(provider).login,
      intent: 'link',
      consent: 'cancel',
    });
    await assertRefused(usher, flow, 'OAUTH_DENIED');
    assert.deepEqual(await identities(usher, token), []);
  });

  for (const profile of PROFILES) {
    test(`[${profile}] DELETE /api/identities/{id}: 204 with a password left, the identity gone, a notice mailed`, async () => {
      const usher = apps[profile];
      const { user, browser, token } = await signedIn(usher);
      const person = providerPerson(provider);
      await browser.flow(usher, provider, { login: person.login, intent: 'link' });
      const [identity] = await identities(usher, token);
      assert.ok(identity);
      await waitForMails(smtp, user.email, /linked/i);
      const res = await unlink(usher, token, identity.id);
      assert.equal(res.statusCode, 204, res.body);
      assert.deepEqual(await identities(usher, token), []);
      assert.deepEqual((await account(usher.t, token)).identities, []);
      const [mail] = await waitForMails(smtp, user.email, UNLINKED);
      assert.ok(mail!.text.includes(PROVIDER_NAME), mail!.text);
      assert.equal(linkedMails(smtp, user.email).length, 1, 'one linked notice, one unlinked');
      // The identity no longer signs that account in (its email is new: it makes an account of its own).
      const later = await assertSignedIn(
        usher,
        await new Browser().flow(usher, provider, { login: person.login }),
      );
      assert.notEqual(await userId(usher, later), Number(user.id));
    });
  }

  test('the last sign-in method cannot be unlinked: 409 LAST_SIGNIN_METHOD; with a second identity one may go, then not the other', async () => {
    const usher = apps.b;
    const first = providerPerson(provider);
    const browser = new Browser();
    const token = await assertSignedIn(usher, await browser.flow(usher, provider, { login: first.login }));
    const [only] = await identities(usher, token);
    const refused = await unlink(usher, token, only!.id);
    assert.equal(refused.statusCode, 409, refused.body);
    assert.equal(refused.json().error, 'LAST_SIGNIN_METHOD');
    assert.equal(typeof refused.json().message, 'string');
    assert.equal((await identities(usher, token)).length, 1, 'still there');

    const second = providerPerson(provider);
    browser.jar.clearHost(provider.issuer); // signed out at the provider, to sign in there as another
    const link = await browser.flow(usher, provider, { login: second.login, intent: 'link' });
    assert.equal(link.location?.href, `${usher.base}/account`, 'linked');
    const both = await identities(usher, token);
    assert.equal(both.length, 2);
    assert.equal((await unlink(usher, token, only!.id)).statusCode, 204);
    const [left] = await identities(usher, token);
    assert.equal(left?.email, second.email);
    const last = await unlink(usher, token, left!.id);
    assert.equal(last.statusCode, 409);
    assert.equal(last.json().error, 'LAST_SIGNIN_METHOD');
  });

  test('another user’s identity or an unknown id: 404 NOT_FOUND, nothing removed', async () => {
    const usher = apps.a;
    const owner = await assertSignedIn(
      usher,
      await new Browser().flow(usher, provider, { login: providerPerson(provider).login }),
    );
    const [theirs] = await identities(usher, owner);
    const { token } = await signedIn(usher);
    for (const id of [theirs!.id, '0'.repeat(32), 'abc', '1']) {
      const res = await unlink(usher, token, id);
      assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
      assert.equal(res.json().error, 'NOT_FOUND');
    }
    assert.equal((await identities(usher, owner)).length, 1);
  });

  test('unlinking with a sign-in older than 10 minutes: 401 REAUTHENTICATION_REQUIRED; identities need a session at all', async () => {
    const { browser, token } = await signedIn(aged);
    await browser.flow(aged, provider, { login: providerPerson(provider).login, intent: 'link' });
    const [identity] = await identities(aged, token);
    assert.ok(identity);
    offset += 11 * MINUTE;
    try {
      const res = await unlink(aged, token, identity.id);
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(res.json().error, 'REAUTHENTICATION_REQUIRED');
      assert.equal((await identities(aged, token)).length, 1);
    } finally {
      offset -= 11 * MINUTE;
    }
    const anonymous = await aged.t.get('/api/identities');
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json().error, 'UNAUTHENTICATED');
    const anonymousDelete = await aged.t.inject({ method: 'DELETE', url: `/api/identities/${identity.id}` });
    assert.equal(anonymousDelete.statusCode, 401);
  });
});
