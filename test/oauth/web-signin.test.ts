// Sign in with a provider in a browser, driven over HTTP (CONTRACT "Sign in with a provider",
// "Accounts and sign-in methods"): the provider is real (panva's oidc-provider, its login and
// consent pages filled in by fetch with a cookie jar), Usher really listens at its PUBLIC_URL.
// Covered: the provider list, the start (its redirect URI, state, nonce, PKCE S256, the binding
// cookie, redirectTo rules), a new account and the same identity again (by subject, not email),
// every linking rule (verified on both sides, pre-account takeover, unverified either side), no
// email, OAUTH_SIGNUP=false, REQUIRE_VERIFIED_EMAIL, Cancel, the TOTP ticket, the metric, and that
// no provider token (nor the code) ends up in the logs or the database.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Profile } from '../../src/config.ts';
import { newUser, register, startApp } from '../helpers/app.ts';
import { mailTo, metric, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';
import {
  APP_ORIGIN,
  account,
  assertRefused,
  assertSignedIn,
  Browser,
  databaseText,
  getAs,
  linkedMails,
  listeningUsher,
  PROFILES,
  PROVIDER,
  PROVIDER_NAME,
  providerPerson,
  SUCCESS,
  type Usher,
  verifiedUser,
} from './support.ts';

describeEachStore('Sign in with a provider (HTTP)', (store) => {
  let provider: TestOidcProvider;
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, Usher>;
  /** OAUTH_SIGNUP=false. */
  let closed: Usher;
  /** REQUIRE_VERIFIED_EMAIL=true. */
  let strict: Usher;
  before(async () => {
    provider = await startOidcProvider();
    smtp = await startSmtp();
    const mail = mailTo(smtp.url);
    for (const profile of PROFILES)
      apps[profile] = await listeningUsher(store, profile, provider, { overrides: { mail } });
    closed = await listeningUsher(store, 'b', provider, {
      overrides: { mail },
      env: { OAUTH_SIGNUP: 'false' },
    });
    strict = await listeningUsher(store, 'b', provider, { overrides: { mail, requireVerifiedEmail: true } });
  });
  after(async () => {
    for (const u of [apps.a, apps.b, closed, strict]) await u?.t.close();
    await provider?.close();
    await smtp?.close();
  });

  /** The number of accounts (profile B lists users; both apps share the database). */
  const userCount = async () => Number((await apps.b.t.get('/api/users?size=1')).headers['x-total-count']);
  /** A user as profile B shows it (emailVerified included). */
  const shown = async (id: number | bigint) => {
    const res = await apps.b.t.get(`/api/users/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: number; email: string; name: string; emailVerified: boolean };
  };
  const sessionUser = async (usher: Usher, token: string) => {
    const res = await getAs(usher.t, token, '/api/session');
    assert.equal(res.statusCode, 200, res.body);
    const user = res.json().user as { id: number; email: string; name: string };
    if (usher.t.profile === 'a') assert.deepEqual(Object.keys(user).sort(), ['email', 'id', 'name']);
    return user;
  };

  test('GET /api/oauth/providers: the configured providers as [{id, name}]; [] when none', async () => {
    const res = await apps.a.t.get('/api/oauth/providers');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), [{ id: PROVIDER, name: PROVIDER_NAME }]);
    const none = await startApp(store, 'b');
    try {
      const empty = await none.get('/api/oauth/providers');
      assert.equal(empty.statusCode, 200);
      assert.deepEqual(empty.json(), []);
      const start = await none.get('/api/oauth/test/start');
      assert.equal(start.statusCode, 404, 'no provider configured: nothing to start');
      assert.equal(start.json().error, 'NOT_FOUND');
    } finally {
      await none.close();
    }
  });

  test('the start: 302 to the provider with the exact redirect URI, state, nonce, PKCE S256, and an HttpOnly SameSite=Lax binding cookie on /api/oauth', async () => {
    const usher = apps.b;
    const seen = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const res = await new Browser().start(usher, { redirectTo: '/account' });
      assert.equal(res.status, 302, await res.text());
      const to = new URL(res.headers.get('location') ?? '');
      assert.equal(
        `${to.origin}${to.pathname}`,
        `${provider.issuer}/auth`,
        'the discovered authorization endpoint',
      );
      const q = to.searchParams;
      assert.equal(q.get('response_type'), 'code');
      assert.equal(q.get('client_id'), 'usher');
      assert.equal(q.get('redirect_uri'), usher.callback, 'exactly PUBLIC_URL/api/oauth/test/callback');
      assert.deepEqual(new Set(q.get('scope')?.split(' ')), new Set(['openid', 'email', 'profile']));
      assert.equal(q.get('code_challenge_method'), 'S256');
      assert.match(q.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
      for (const name of ['state', 'nonce', 'code_challenge']) {
        const value = q.get(name) ?? '';
        assert.ok(value.length >= 22, `${name} carries enough randomness: ${value}`);
        assert.ok(!seen.has(value), `${name} is new at each start`);
        seen.add(value);
      }
      const cookies = res.headers.getSetCookie().filter((c) => c.startsWith('usher_oauth='));
      assert.equal(cookies.length, 1, res.headers.getSetCookie().join(' | '));
      const attributes = cookies[0]!.split(';').map((a) => a.trim().toLowerCase());
      assert.ok(attributes.includes('httponly'), cookies[0]);
      assert.ok(attributes.includes('samesite=lax'), cookies[0]);
      assert.ok(attributes.includes('path=/api/oauth'), cookies[0]);
      assert.ok(!res.headers.getSetCookie().some((c) => c.startsWith('usher_session=')));
    }
  });

  test('the start: an intent other than signin or link is a 400, no redirect', async () => {
    const res = await new Browser().start(apps.b, { intent: 'takeover' });
    const text = await res.text();
    assert.equal(res.status, 400, text);
    // The contract names no code for it: the app's code for a bad query value, or VALIDATION_FAILED.
    assert.ok(['INVALID_QUERY', 'VALIDATION_FAILED'].includes(JSON.parse(text).error), text);
    assert.equal(res.headers.get('location'), null);
  });

  test('the start: an unknown provider is 404 NOT_FOUND', async () => {
    const res = await new Browser().start(apps.a, {}, 'nope');
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: string }).error, 'NOT_FOUND');
    assert.equal(res.headers.get('location'), null);
  });

  test('the start: redirectTo elsewhere than PUBLIC_URL or CORS_ORIGINS is 400 VALIDATION_FAILED and never a redirect', async () => {
    const usher = apps.a;
    const port = new URL(usher.base).port;
    const bad = [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      '\\\\evil.example',
      '/\t/evil.example',
      'javascript:alert(1)',
      'data:text/html,hi',
      `https://127.0.0.1:${port}/account`,
      `http://127.0.0.1:${port}.evil.example/`,
      `http://127.0.0.1:${port}@evil.example/`,
      `${APP_ORIGIN}.evil.example/`,
      `${APP_ORIGIN}@evil.example/`,
      'http://app.example.test/',
    ];
    for (const redirectTo of bad) {
      const res = await new Browser().start(usher, { redirectTo });
      const text = await res.text();
      assert.equal(res.status, 400, `${redirectTo}: ${res.status} ${text}`);
      assert.equal(JSON.parse(text).error, 'VALIDATION_FAILED', redirectTo);
      assert.equal(res.headers.get('location'), null, `${redirectTo}: no redirect`);
    }
    for (const redirectTo of ['/account', `${usher.base}/settings?x=1`, `${APP_ORIGIN}/after`, undefined]) {
      const res = await new Browser().start(usher, { redirectTo });
      assert.equal(res.status, 302, `${redirectTo} is allowed: ${await res.text()}`);
    }
  });

  for (const profile of PROFILES) {
    test(`[${profile}] a new identity makes an account (no password, name and verified email from the provider), then signs the same account in again, by subject`, async () => {
      const usher = apps[profile];
      const person = providerPerson(provider, { email_verified: true, name: 'Ada Provider' });
      const before = await userCount();
      const first = await new Browser().flow(usher, provider, {
        login: person.login,
        redirectTo: '/welcome',
      });
      assert.deepEqual(first.provider.pages, ['login', 'consent'], 'through the provider’s own pages');
      const token = await assertSignedIn(usher, first, '/welcome');
      assert.equal(await userCount(), before + 1, 'one account made');

      const user = await sessionUser(usher, token);
      assert.equal(user.email, person.email);
      assert.equal(user.name, 'Ada Provider');
      const me = await account(usher.t, token);
      assert.equal(me.password, false, 'no password');
      assert.equal(me.identities.length, 1);
      assert.equal(me.identities[0]!.provider, PROVIDER);
      assert.equal(me.identities[0]!.email, person.email);
      assert.ok(!Number.isNaN(Date.parse(me.identities[0]!.createdAt)));
      assert.equal((await shown(user.id)).emailVerified, true, 'emailVerified as the provider says');
      const identities = await getAs(usher.t, token, '/api/identities');
      assert.equal(identities.statusCode, 200);
      assert.deepEqual(identities.json(), me.identities);

      // A password sign-in for an account without one fails like a wrong password.
      const password = await usher.t.post('/api/signin', {
        email: person.email,
        password: 'anything-at-all',
      });
      assert.equal(password.statusCode, 401);

      // Signed out, then in again from another browser: the same account.
      const out = await usher.t.inject({
        method: 'POST',
        url: '/api/signout',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.ok(out.statusCode < 300, out.body);
      assert.equal((await getAs(usher.t, token, '/api/session')).statusCode, 401);
      const again = await new Browser().flow(usher, provider, { login: person.login });
      const second = await assertSignedIn(usher, again);
      assert.equal((await sessionUser(usher, second)).id, user.id, 'the same account');

      // The provider's email changes; the subject does not: still the same account, no new one.
      provider.setAccount(person.login, { ...person, email: `moved.${person.email}` });
      const moved = await new Browser().flow(usher, provider, { login: person.login });
      assert.equal((await sessionUser(usher, await assertSignedIn(usher, moved))).id, user.id);
      assert.equal(await userCount(), before + 1, 'no further account');
    });
  }

  test('a new identity whose provider email is not verified makes an account with emailVerified false; proving the mailbox unlinks it, and the owner links it again from a session', async () => {
    const usher = apps.b;
    const person = providerPerson(provider, { email_verified: false });
    const before = await userCount();
    // The account is made (CONTRACT: emailVerified as the provider says), but an email its provider
    // did not verify may be anyone's: no session until the mailbox is proven (decision 195).
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'SIGNIN_FAILED',
    );
    assert.equal(await userCount(), before + 1, 'the account is made');
    const [mail] = await waitForMails(smtp, person.email!, SUBJECTS.verify);
    const verified = await usher.t.post('/api/email/verify', { token: linkToken(mail!, '/verify-email') });
    assert.equal(verified.statusCode, 204, verified.body);
    // Whoever proved the mailbox takes the account, and Usher cannot tell them from the identity's
    // holder: the identity is unlinked (decision 340), and its sign-in is ACCOUNT_EXISTS.
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'ACCOUNT_EXISTS',
    );
    await waitForMails(smtp, person.email!, /unlinked/i);
    // The owner sets a password through the mailbox, signs in, and links the identity from the
    // session: proven, it signs in.
    assert.equal((await usher.t.post('/api/password/forgot', { email: person.email })).statusCode, 202);
    const [reset] = await waitForMails(smtp, person.email!, SUBJECTS.reset);
    const password = 'the owner’s own passphrase';
    const set = await usher.t.post('/api/password/reset', {
      token: linkToken(reset!, '/reset-password'),
      password,
    });
    assert.equal(set.statusCode, 204, set.body);
    const browser = new Browser();
    await browser.passwordSignIn(usher, { email: person.email!, password });
    const linked = await browser.flow(usher, provider, { login: person.login, intent: 'link' });
    assert.equal(linked.callback.status, 303);
    assert.equal(linked.location?.href, `${usher.base}/account`, 'linked, no error');
    const token = await assertSignedIn(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
    );
    const user = await sessionUser(usher, token);
    assert.equal(user.email, person.email);
    assert.equal((await shown(user.id)).emailVerified, true);
  });

  test('pre-account takeover through a provider that does not verify emails: the mailbox owner’s password reset unlinks the identity, which then cannot sign in', async () => {
    const usher = apps.b;
    // The attacker's provider account claims the victim's address, unverified (as Entra ID allows).
    const attacker = providerPerson(provider, { email_verified: false });
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: attacker.login }),
      'SIGNIN_FAILED',
    );
    // The victim finds the address taken, and takes the account through the mailbox.
    assert.equal((await usher.t.post('/api/password/forgot', { email: attacker.email })).statusCode, 202);
    const [reset] = await waitForMails(smtp, attacker.email!, SUBJECTS.reset);
    const res = await usher.t.post('/api/password/reset', {
      token: linkToken(reset!, '/reset-password'),
      password: 'the victim’s own passphrase',
    });
    assert.equal(res.statusCode, 204, res.body);
    // The attacker's identity is gone: its next sign-in is a new identity whose email an account
    // (now verified) holds, not verified by its provider: ACCOUNT_EXISTS, no session.
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: attacker.login }),
      'ACCOUNT_EXISTS',
    );
    const victim = await new Browser().passwordSignIn(usher, {
      email: attacker.email!,
      password: 'the victim’s own passphrase',
    });
    assert.deepEqual((await account(usher.t, victim)).identities, [], 'no identity left on the account');
  });

  for (const profile of PROFILES) {
    test(`[${profile}] an email verified on both sides links the identity to that account (case-insensitively), with a notice`, async () => {
      const usher = apps[profile];
      const owner = await verifiedUser(usher.t, smtp);
      const person = providerPerson(provider, { email: owner.email.toUpperCase(), email_verified: true });
      const before = await userCount();
      const flow = await new Browser().flow(usher, provider, { login: person.login });
      const token = await assertSignedIn(usher, flow);
      assert.equal((await sessionUser(usher, token)).id, Number(owner.id), 'the existing account');
      assert.equal(await userCount(), before, 'no new account');
      const me = await account(usher.t, token);
      assert.equal(me.password, true, 'its password is still there');
      assert.equal(me.identities.length, 1);
      const [mail] = await waitForMails(smtp, owner.email, /linked/i);
      assert.match(mail!.subject, /linked/i);
      assert.ok(mail!.text.includes(PROVIDER_NAME), mail!.text);
    });
  }

  test('pre-account takeover: an attacker registered the victim’s email with a password (unverified); the victim’s provider sign-in is ACCOUNT_EXISTS and links nothing', async () => {
    const usher = apps.b;
    const attacker = await register(usher.t); // never verified: the attacker does not own the mailbox
    const victim = providerPerson(provider, { email: attacker.email, email_verified: true });
    const before = await userCount();
    const flow = await new Browser().flow(usher, provider, { login: victim.login });
    await assertRefused(usher, flow, 'ACCOUNT_EXISTS');
    assert.equal(await userCount(), before, 'no account made');
    const attackerSession = await new Browser().passwordSignIn(usher, attacker);
    const me = await account(usher.t, attackerSession);
    assert.deepEqual(me.identities, [], 'the victim’s identity is not on the attacker’s account');
    // And again: still refused (nothing was linked on the way).
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: victim.login }),
      'ACCOUNT_EXISTS',
    );
  });

  test('an account’s verified email and a provider email it does not say is verified: ACCOUNT_EXISTS, nothing linked', async () => {
    const usher = apps.a;
    const owner = await verifiedUser(usher.t, smtp);
    const person = providerPerson(provider, { email: owner.email, email_verified: false });
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'ACCOUNT_EXISTS',
    );
    const me = await account(usher.t, await new Browser().passwordSignIn(usher, owner));
    assert.deepEqual(me.identities, []);
    assert.equal(linkedMails(smtp, owner.email).length, 0, 'no linked notice');
  });

  test('unverified on both sides: ACCOUNT_EXISTS', async () => {
    const usher = apps.b;
    const owner = await register(usher.t);
    const person = providerPerson(provider, { email: owner.email, email_verified: false });
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'ACCOUNT_EXISTS',
    );
  });

  test('a provider that shares no email: OAUTH_FAILED, no account made', async () => {
    const usher = apps.a;
    const person = providerPerson(provider, { email: null });
    const before = await userCount();
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: person.login }),
      'OAUTH_FAILED',
    );
    assert.equal(await userCount(), before);
  });

  test('OAUTH_SIGNUP=false: a new identity is SIGNUP_CLOSED; one already linked still signs in', async () => {
    const person = providerPerson(provider);
    const before = await userCount();
    await assertRefused(
      closed,
      await new Browser().flow(closed, provider, { login: person.login }),
      'SIGNUP_CLOSED',
    );
    assert.equal(await userCount(), before);
    // Made on an app that allows it (same database), then signed in on the closed one.
    const made = await assertSignedIn(
      apps.b,
      await new Browser().flow(apps.b, provider, { login: person.login }),
    );
    const id = (await sessionUser(apps.b, made)).id;
    const token = await assertSignedIn(
      closed,
      await new Browser().flow(closed, provider, { login: person.login }),
    );
    assert.equal((await sessionUser(closed, token)).id, id);
  });

  test('REQUIRE_VERIFIED_EMAIL: a provider account whose email is not verified gets SIGNIN_FAILED; a verified one signs in', async () => {
    const unverified = providerPerson(provider, { email_verified: false });
    await assertRefused(
      strict,
      await new Browser().flow(strict, provider, { login: unverified.login }),
      'SIGNIN_FAILED',
    );
    const verified = providerPerson(provider, { email_verified: true });
    await assertSignedIn(strict, await new Browser().flow(strict, provider, { login: verified.login }));
  });

  test('Cancel at the provider: OAUTH_DENIED, no account made', async () => {
    const usher = apps.b;
    const person = providerPerson(provider);
    const before = await userCount();
    const flow = await new Browser().flow(usher, provider, { login: person.login, consent: 'cancel' });
    assert.equal(flow.callbackUrl.searchParams.get('error'), 'access_denied');
    await assertRefused(usher, flow, 'OAUTH_DENIED');
    assert.equal(await userCount(), before);
  });

  test('redirectTo: a path keeps its query (the error is added to it); a CORS_ORIGINS URL is where the browser lands', async () => {
    const usher = apps.a;
    const denied = await new Browser().flow(usher, provider, {
      login: providerPerson(provider).login,
      consent: 'cancel',
      redirectTo: '/account?tab=security',
    });
    assert.equal(denied.callback.status, 303);
    assert.equal(denied.location?.pathname, '/account');
    assert.equal(denied.location?.searchParams.get('tab'), 'security');
    assert.equal(denied.location?.searchParams.get('error'), 'OAUTH_DENIED');

    const ok = await new Browser().flow(usher, provider, {
      login: providerPerson(provider).login,
      redirectTo: `${APP_ORIGIN}/signed-in`,
    });
    assert.equal(ok.callback.status, 303);
    assert.equal(ok.location?.href, `${APP_ORIGIN}/signed-in`);
    assert.ok(ok.session);
  });

  test('the metric counts provider sign-ins: usher_signins_total{method="oauth",outcome="success"}', async () => {
    const usher = apps.b;
    const before = await metric(usher.t, 'usher_signins_total', SUCCESS);
    await assertSignedIn(
      usher,
      await new Browser().flow(usher, provider, { login: providerPerson(provider).login }),
    );
    assert.equal(await metric(usher.t, 'usher_signins_total', SUCCESS), before + 1);
    await assertRefused(
      usher,
      await new Browser().flow(usher, provider, { login: providerPerson(provider, { email: null }).login }),
      'OAUTH_FAILED',
    );
    assert.equal(
      await metric(usher.t, 'usher_signins_total', SUCCESS),
      before + 1,
      'a failure is no success',
    );
  });

  test('provider tokens are not kept: neither the code, the access token nor the ID token is in the logs or any table', async () => {
    const usher = apps.a;
    const issuedBefore = provider.issued.length;
    const flow = await new Browser().flow(usher, provider, { login: providerPerson(provider).login });
    await assertSignedIn(usher, flow);
    const issued = provider.issued.slice(issuedBefore);
    assert.equal(issued.length, 1, 'one token answer from the provider');
    const secrets = {
      code: flow.callbackUrl.searchParams.get('code')!,
      access_token: issued[0]!.access_token!,
      id_token: issued[0]!.id_token!,
      // The ID token's signature alone (a part kept would be as bad).
      id_token_signature: issued[0]!.id_token!.split('.')[2]!,
    };
    const logs = usher.t.logs.join('');
    const stored = await databaseText(store);
    for (const [name, value] of Object.entries(secrets)) {
      assert.ok(value && value.length > 10, name);
      assert.ok(!logs.includes(value), `the ${name} is in the logs`);
      assert.ok(!stored.includes(value), `the ${name} is in the database`);
    }
  });

  for (const profile of PROFILES) {
    test(`[${profile}] TOTP in force: no session, redirectTo#second-factor=<ticket>; the code finishes it with POST /api/signin's answer`, async () => {
      const usher = apps[profile];
      const owner = await verifiedUser(usher.t, smtp);
      const browser = new Browser();
      const password = await browser.passwordSignIn(usher, owner);
      const setup = await usher.t.inject({
        method: 'POST',
        url: '/api/mfa/totp',
        headers: { authorization: `Bearer ${password}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ password: owner.password }),
      });
      assert.equal(setup.statusCode, 200, setup.body);
      const { secret } = setup.json() as { secret: string };
      const confirm = await usher.t.inject({
        method: 'POST',
        url: '/api/mfa/totp/confirm',
        headers: { authorization: `Bearer ${password}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ code: totpAt(secret, Date.now()) }),
      });
      assert.equal(confirm.statusCode, 200, confirm.body);

      const person = providerPerson(provider, { email: owner.email, email_verified: true });
      const fresh = new Browser();
      const flow = await fresh.flow(usher, provider, { login: person.login, redirectTo: '/account' });
      assert.equal(flow.callback.status, 303);
      assert.equal(flow.session, undefined, 'no session before the second factor');
      const raw = flow.callback.headers.get('location') ?? '';
      const ticket = /#second-factor=([^&#]+)$/.exec(raw)?.[1];
      assert.ok(ticket, `a ticket in the fragment: ${raw}`);
      assert.equal(new URL(raw, usher.base).href.split('#')[0], `${usher.base}/account`);
      assert.ok(!usher.t.logs.some((l) => l.includes(ticket)), 'the ticket is never logged');

      const wrong = await fresh.postJson(`${usher.base}/api/signin/second-factor`, {
        ticket,
        code: wrongCodeAt(secret, Date.now()),
      });
      assert.equal(wrong.status, 401, await wrong.text());
      const done = await fresh.postJson(`${usher.base}/api/signin/second-factor`, {
        ticket,
        code: totpAt(secret, Date.now() + STEP_MS),
      });
      const body = (await done.json()) as Record<string, unknown>;
      assert.equal(done.status, 200, JSON.stringify(body));
      if (profile === 'a') assert.deepEqual(Object.keys(body).sort(), ['email', 'id', 'name']);
      else assert.deepEqual(Object.keys(body), ['user']);
      const user = (profile === 'a' ? body : body.user) as { id: number; email: string };
      assert.equal(user.id, Number(owner.id));
      const token = fresh.session(usher);
      assert.ok(token, 'the session cookie is set now');
      const me = await account(usher.t, token);
      assert.equal(me.identities.length, 1, 'the identity was linked (verified on both sides)');
      assert.equal(me.totp, true);
    });
  }

  test('an account made by a provider holds its email: registering it again is 409 EMAIL_TAKEN', async () => {
    const usher = apps.b;
    const person = providerPerson(provider);
    await assertSignedIn(usher, await new Browser().flow(usher, provider, { login: person.login }));
    const taken = await usher.t.post('/api/users', newUser({ email: person.email }));
    assert.equal(taken.statusCode, 409, taken.body);
    assert.equal(taken.json().error, 'EMAIL_TAKEN');
  });
});
