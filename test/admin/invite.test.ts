// Invitations (CONTRACT "Administration": POST /api/admin/users, issue 29), black-box on both
// stores: an account without a password, a mail received by a real SMTP server whose
// /reset-password link sets the first password through POST /api/password/reset, after which the
// person signs in and their email counts as verified; the link works once and for 7 days; an email
// already taken is 409 EMAIL_TAKEN; roles given are kept.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { NO_THROTTLE, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailsTo, mailTo, waitForMails } from '../helpers/mail.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { adminView, as, assertError, staff } from './support.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];
const PUBLIC_URL = 'https://accounts.usher.example';
const INVITED = /you are invited/i;
const DAY_MS = 24 * 3600 * 1000;

const uniqueEmail = (label: string) => `${label}.${randomBytes(5).toString('hex')}@example.com`;

/** The headers of an answer without those that differ from one answer to the next. */
function stableHeaders(res: LightMyRequestResponse): Record<string, unknown> {
  const { date: _date, 'x-request-id': _id, ...rest } = res.headers;
  return rest;
}

describeEachStore('admin API: invitations', (store: Store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  /** The apps' clock: real time moved by `skewMs`. */
  const clock = { skewMs: 0, now: () => Date.now() + clock.skewMs };
  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES)
      apps[profile] = await startApp(
        store,
        profile,
        { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url), throttle: { ...NO_THROTTLE } },
        { clock: clock.now },
      );
  });
  after(async () => {
    for (const profile of PROFILES) await apps[profile]?.close();
    await smtp?.close();
  });

  const invite = (t: TestApp, token: string, body: unknown) => as(t, token).post('/api/admin/users', body);

  /** The token of the (first) invitation mailed to `email`. */
  async function invitationToken(email: string): Promise<string> {
    const [mail] = await waitForMails(smtp, email, INVITED);
    return linkToken(mail!, '/reset-password');
  }

  const reset = (t: TestApp, token: string, password: string) =>
    t.post('/api/password/reset', { token, password });

  for (const profile of PROFILES) {
    test(`[${profile}] an invitation: 201 with Location, an account without a password, a mail whose link sets it; then sign-in works and the email is verified`, async () => {
      const t = apps[profile];
      const admin = await staff(t, store, 'admin');
      const email = uniqueEmail('Invitee');
      const res = await invite(t, admin.token, { email, name: '  Ines Invitee ' });
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json();
      assert.equal(res.headers.location, `/api/admin/users/${body.id}`);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(body.email, email);
      assert.equal(body.name, 'Ines Invitee');
      assert.equal(body.password, false, 'no password yet');
      assert.equal(body.emailVerified, false);
      assert.equal(body.status, 'active');
      assert.equal(body.role, 'user');
      assert.deepEqual(body.roles, []);
      assert.equal(body.totp, false);
      assert.deepEqual(body.sessions, []);
      assert.equal(body.lastSignInAt, null);
      const located = await as(t, admin.token).get(res.headers.location as string);
      assert.equal(located.statusCode, 200);
      assert.deepEqual(located.json(), body);

      const [mail] = await waitForMails(smtp, email, INVITED);
      assert.equal(mail!.to, email);
      assert.match(mail!.text, /Ines Invitee/);
      const token = linkToken(mail!, '/reset-password');
      assert.match(token, /^[A-Za-z0-9_-]{43}$/);
      const url = `${PUBLIC_URL}/reset-password#token=${token}`;
      assert.ok(mail!.text.includes(url), mail!.text);
      assert.ok(mail!.html.includes(`href="${url}"`), mail!.html);

      // No password: nothing signs in yet, answered as for an unknown email.
      const none = await t.post('/api/signin', { email, password: '' });
      const guess = await t.post('/api/signin', { email, password: 'some guessed password' });
      const unknown = await t.post('/api/signin', {
        email: uniqueEmail('nobody'),
        password: 'some guessed password',
      });
      for (const res of [none, guess]) {
        assert.equal(res.statusCode, 401, res.body);
        assert.equal(res.body, unknown.body);
        assert.deepEqual(stableHeaders(res), stableHeaders(unknown));
      }

      const password = 'the invitee chose this';
      const set = await reset(t, token, password);
      assert.equal(set.statusCode, 204, set.body);
      const session = await signIn(t, { email, password });
      assert.equal((await as(t, session).get('/api/session')).statusCode, 200);
      const view = await adminView(t, admin.token, BigInt(body.id));
      assert.equal(view.password, true);
      assert.equal(view.emailVerified, true, 'following the mailed link proves the address');
      assert.equal((await apps.b.get(`/api/users/${body.id}`)).json().emailVerified, true);

      // The link is good once.
      const again = await reset(t, token, 'someone else tries it');
      assertError(again, 400, 'INVALID_TOKEN', 'the link used again');
      assert.equal(
        (await t.post('/api/signin', { email, password: 'someone else tries it' })).statusCode,
        401,
      );
      await signIn(t, { email, password });
    });
  }

  test('an email that already has an account, in any letter case: 409 EMAIL_TAKEN, no second account, no mail', async () => {
    const t = apps.b;
    const admin = await staff(t, store, 'admin');
    const existing = await register(t, newUser({ email: uniqueEmail('Taken') }));
    const res = await invite(t, admin.token, { email: existing.email.toUpperCase(), name: 'Second' });
    assertError(res, 409, 'EMAIL_TAKEN', 'taken');
    const again = await invite(t, admin.token, { email: `  ${existing.email} `, name: 'Third' });
    assertError(again, 409, 'EMAIL_TAKEN', 'with spaces');
    const found = await as(t, admin.token).get(`/api/admin/users?q=${encodeURIComponent(existing.email)}`);
    assert.deepEqual(
      found.json().map((u: { id: number }) => String(u.id)),
      [String(existing.id)],
    );
    assert.equal((await adminView(t, admin.token, existing.id)).name, existing.name);
    // Mail goes out in the order it was recorded: once a later invitation's mail is here, one for
    // the refused invitations would be too.
    const marker = uniqueEmail('marker');
    assert.equal((await invite(t, admin.token, { email: marker, name: 'Marker' })).statusCode, 201);
    await invitationToken(marker);
    assert.deepEqual(mailsTo(smtp, existing.email, INVITED), []);
    // And the existing password still works: nothing was reset.
    await signIn(t, existing);
  });

  test('roles given with the invitation are kept (a duplicate once), in the answer, the view and the search', async () => {
    const t = apps.a;
    const admin = await staff(t, store, 'admin');
    const email = uniqueEmail('roles');
    const roles = ['app:editor', 'billing_read', 'team-7'];
    const res = await invite(t, admin.token, { email, name: 'Rolled', roles: [...roles, 'team-7'] });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().roles, roles);
    assert.equal(res.json().role, 'user', 'application roles are not the account role');
    assert.deepEqual((await adminView(t, admin.token, BigInt(res.json().id))).roles, roles);
    const found = await as(t, admin.token).get(`/api/admin/users?q=${encodeURIComponent(email)}`);
    assert.deepEqual(found.json()[0].roles, roles);
    // Setting the password keeps them.
    assert.equal((await reset(t, await invitationToken(email), 'a password for roles')).statusCode, 204);
    assert.deepEqual((await adminView(t, admin.token, BigInt(res.json().id))).roles, roles);
  });

  test('the invitation link works for 7 days, and not after', async () => {
    const t = apps.b;
    const admin = await staff(t, store, 'admin');
    const early = uniqueEmail('early');
    const late = uniqueEmail('late');
    for (const email of [early, late])
      assert.equal((await invite(t, admin.token, { email, name: 'Timed' })).statusCode, 201);
    const earlyToken = await invitationToken(early);
    const lateToken = await invitationToken(late);
    try {
      clock.skewMs = 7 * DAY_MS - 60_000;
      assert.equal((await reset(t, earlyToken, 'just in time password')).statusCode, 204);
      clock.skewMs = 7 * DAY_MS + 60_000;
      assertError(await reset(t, lateToken, 'too late password'), 400, 'INVALID_TOKEN', 'after 7 days');
      assert.equal(
        (await t.post('/api/signin', { email: late, password: 'too late password' })).statusCode,
        401,
      );
    } finally {
      clock.skewMs = 0;
    }
    await signIn(t, { email: early, password: 'just in time password' });
  });

  test('only admins invite: support is 403 FORBIDDEN and no account is made', async () => {
    const t = apps.b;
    const admin = await staff(t, store, 'admin');
    const support = await staff(t, store, 'support');
    const email = uniqueEmail('by-support');
    assertError(await invite(t, support.token, { email, name: 'Nope' }), 403, 'FORBIDDEN', 'support');
    const found = await as(t, admin.token).get(`/api/admin/users?q=${encodeURIComponent(email)}`);
    assert.deepEqual(found.json(), []);
  });
});
