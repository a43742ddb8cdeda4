// Re-authentication for what a session alone must not do (issue 25, ASVS V7.5.1): deleting the
// account and removing a passkey need a sign-in of the last 10 minutes or the present password in
// `currentPassword` (checked through the sign-in throttle, like PUT /api/users/{id}). Removing a
// passkey mails a notice; deleting an account with a verified address mails a goodbye, recorded in
// the transaction that deletes the user and delivered after the row is gone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { asUser, register, signIn, startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { mailsTo, mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const ORIGIN = 'https://id.example.test:8443';
const MINUTE = 60_000;
const WRONG = 'not-my-password-1';
const REMOVED = /passkey was removed/i;
const GOODBYE = /your account was deleted/i;

describeEachStore('Re-authentication for deleting the account and removing a passkey', (store) => {
  // Only ever moved forward: mail is due at the clock's time, so a clock moved back would hold it.
  let offset = 0;
  /** Ages every session by 11 minutes: none is a recent sign-in any more. */
  const elevenMinutesLater = () => {
    offset += 11 * MINUTE;
  };
  // Small limits so the throttle is reached quickly; the mechanism is the one the defaults use.
  const throttle = {
    windowMs: 60_000,
    perAccountAddress: 3,
    perAccount: 50,
    perAddress: 50,
    concurrentPerAccount: 1000,
    concurrentPerAddress: 1000,
    deviceTtlMs: 180 * 24 * 3600 * 1000,
  };
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    smtp = await startSmtp();
    for (const profile of ['a', 'b'] as const)
      apps[profile] = await startApp(
        store,
        profile,
        { publicUrl: ORIGIN, mail: mailTo(smtp.url), throttle },
        { clock: () => Date.now() + offset },
      );
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
    await smtp?.close();
  });

  let addresses = 0;
  /** A client address no other test uses, so throttle counts never meet across tests. */
  const freshAddress = () => `10.78.${++addresses >> 8}.${addresses & 255}`;

  /** A DELETE with a Bearer token, with a JSON body or none at all (as clients sent it before). */
  const del = (t: TestApp, url: string, token: string, body?: unknown, address = freshAddress()) =>
    t.inject({
      method: 'DELETE',
      url,
      remoteAddress: address,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });

  async function account(t: TestApp) {
    const u = await register(t);
    return { ...u, token: await signIn(t, u) };
  }

  /** A signed-in user with one passkey, registered on the fresh session. */
  async function withPasskey(t: TestApp, name: string) {
    const u = await account(t);
    const me = asUser(t, u.token);
    const authenticator = new SoftAuthenticator(ORIGIN);
    const options = await me.post('/api/passkeys/register/options', {});
    const added = await me.post('/api/passkeys/register', {
      credential: authenticator.create(options.json()),
      name,
    });
    assert.equal(added.statusCode, 201, added.body);
    return { ...u, me, authenticator, passkey: added.json() as { id: string; name: string } };
  }

  const passkeySignin = async (t: TestApp, authenticator: SoftAuthenticator) =>
    (
      await t.post('/api/signin/passkey', {
        credential: authenticator.get((await t.post('/api/signin/passkey/options', {})).json()),
      })
    ).statusCode;

  const userExists = async (t: TestApp, id: bigint) => (await t.get(`/api/users/${id}`)).statusCode === 200;

  function assertError(res: LightMyRequestResponse, status: number, code: string, what: string) {
    assert.equal(res.statusCode, status, `${what}: ${res.body}`);
    assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
    assert.equal(res.json().error, code, what);
  }

  function assertStale(res: LightMyRequestResponse, what: string) {
    assertError(res, 403, 'FORBIDDEN', what);
    assert.match(res.json().message, /needs a recent sign-in/, what);
    assert.match(res.json().message, /currentPassword/, what);
  }

  function assertWrongPassword(res: LightMyRequestResponse, what: string) {
    assertError(res, 400, 'VALIDATION_FAILED', what);
    assert.match(res.json().message, /^currentPassword: is not your present password/, what);
  }

  for (const profile of ['a', 'b'] as const) {
    describe(`profile ${profile}`, () => {
      test('ISSUE 25: deleting the account with a sign-in over 10 minutes old is 403 FORBIDDEN without currentPassword, 400 with a wrong one; the right one deletes it', async () => {
        const t = apps[profile];
        const me = await account(t);
        elevenMinutesLater();
        const url = `/api/users/${me.id}`;
        assertStale(await del(t, url, me.token), 'no body');
        assertStale(await del(t, url, me.token, {}), 'an empty body');
        assertWrongPassword(await del(t, url, me.token, { currentPassword: WRONG }), 'wrong');
        assertWrongPassword(await del(t, url, me.token, { currentPassword: '' }), 'empty');
        assert.equal(await userExists(t, me.id), true, 'nothing was deleted');
        const res = await del(t, url, me.token, { currentPassword: me.password });
        assert.equal(res.statusCode, 204, res.body);
        assert.equal(res.body, '');
        assert.equal(await userExists(t, me.id), false);
        assert.equal(
          (await t.post('/api/signin', { email: me.email, password: me.password })).statusCode,
          401,
        );
      });

      test('ISSUE 25: within 10 minutes of signing in the session is enough, as before; a password that is sent is checked even then', async () => {
        const t = apps[profile];
        const me = await account(t);
        offset += 9 * MINUTE;
        const url = `/api/users/${me.id}`;
        assertWrongPassword(
          await del(t, url, me.token, { currentPassword: WRONG }),
          'wrong, on a fresh session',
        );
        assert.equal(await userExists(t, me.id), true);
        const res = await del(t, url, me.token);
        assert.equal(res.statusCode, 204, res.body);
        assert.equal(await userExists(t, me.id), false);
      });

      test('ISSUE 25: removing a passkey with a sign-in over 10 minutes old is 403 FORBIDDEN (it stays and still signs in), 400 with a wrong password; the right one removes it and mails a notice', async () => {
        const t = apps[profile];
        const u = await withPasskey(t, `Lost key ${profile}`);
        elevenMinutesLater();
        const url = `/api/passkeys/${u.passkey.id}`;
        assertStale(await del(t, url, u.token), 'no body');
        assertWrongPassword(await del(t, url, u.token, { currentPassword: WRONG }), 'wrong');
        assert.deepEqual(
          (await u.me.get('/api/passkeys')).json().map((p: { id: string }) => p.id),
          [u.passkey.id],
          'still there',
        );
        assert.equal(await passkeySignin(t, u.authenticator), 200, 'and still signs in');
        assert.equal(mailsTo(smtp, u.email, REMOVED).length, 0, 'no notice for a refusal');
        const res = await del(t, url, u.token, { currentPassword: u.password });
        assert.equal(res.statusCode, 204, res.body);
        assert.deepEqual((await u.me.get('/api/passkeys')).json(), []);
        assert.equal(await passkeySignin(t, u.authenticator), 401);
        const [notice] = await waitForMails(smtp, u.email, REMOVED);
        assert.match(notice!.text, /A passkey was just removed/);
        // The address is not verified: no text its registrant chose (the passkey's name) goes to it.
        assert.doesNotMatch(notice!.text, new RegExp(`Lost key ${profile}`));
        // Another user's passkey is still unknown, whatever the password.
        const other = await withPasskey(t, 'Theirs');
        const theirs = await del(t, `/api/passkeys/${other.passkey.id}`, u.token, {
          currentPassword: u.password,
        });
        assertError(theirs, 404, 'NOT_FOUND', "another user's passkey");
      });

      test('ISSUE 25: removing a passkey on a fresh session needs no password, and is announced too', async () => {
        const t = apps[profile];
        const u = await withPasskey(t, 'Old phone');
        const res = await del(t, `/api/passkeys/${u.passkey.id}`, u.token);
        assert.equal(res.statusCode, 204, res.body);
        const [notice] = await waitForMails(smtp, u.email, REMOVED);
        assert.match(notice!.text, /A passkey was just removed/);
        assert.doesNotMatch(notice!.text, /Old phone/);
      });

      test('ISSUE 25: wrong present passwords on these routes count in the sign-in throttle: over its limit, 429 SIGNIN_FAILED with Retry-After, here and at sign-in', async () => {
        const t = apps[profile];
        const u = await withPasskey(t, 'Key');
        elevenMinutesLater();
        const address = freshAddress();
        const users = `/api/users/${u.id}`;
        const passkeys = `/api/passkeys/${u.passkey.id}`;
        assertWrongPassword(await del(t, users, u.token, { currentPassword: WRONG }, address), '1st');
        assertWrongPassword(await del(t, passkeys, u.token, { currentPassword: WRONG }, address), '2nd');
        assertWrongPassword(await del(t, users, u.token, { currentPassword: WRONG }, address), '3rd');
        for (const url of [users, passkeys]) {
          const held = await del(t, url, u.token, { currentPassword: WRONG }, address);
          assertError(held, 429, 'SIGNIN_FAILED', url);
          assert.ok(Number(held.headers['retry-after']) > 0, url);
        }
        // The same throttle as sign-in: guesses there from that address are held too.
        const signin = await t.inject({
          method: 'POST',
          url: '/api/signin',
          remoteAddress: address,
          payload: { email: u.email, password: WRONG },
        });
        assert.equal(signin.statusCode, 429);
        assert.equal(await userExists(t, u.id), true);
        assert.equal((await u.me.get('/api/passkeys')).json().length, 1);
      });

      test('ISSUE 25: the optional body is still checked: unknown fields and a non-string password are 400, a body that is not JSON 415', async () => {
        const t = apps[profile];
        const u = await withPasskey(t, 'Key');
        for (const url of [`/api/users/${u.id}`, `/api/passkeys/${u.passkey.id}`]) {
          assertError(
            await del(t, url, u.token, { currentPassword: u.password, role: 'admin' }),
            400,
            'VALIDATION_FAILED',
            `${url} extra field`,
          );
          assertError(
            await del(t, url, u.token, { currentPassword: 12345678 }),
            400,
            'VALIDATION_FAILED',
            `${url} number`,
          );
          assertError(await del(t, url, u.token, '[]'), 400, 'VALIDATION_FAILED', `${url} array`);
          const form = await t.inject({
            method: 'DELETE',
            url,
            headers: {
              authorization: `Bearer ${u.token}`,
              'content-type': 'application/x-www-form-urlencoded',
            },
            payload: `currentPassword=${u.password}`,
          });
          assertError(form, 415, 'UNSUPPORTED_MEDIA_TYPE', `${url} form`);
        }
        assert.equal((await u.me.get('/api/passkeys')).json().length, 1);
        assert.equal(await userExists(t, u.id), true);
      });
    });
  }

  describe('the goodbye mail', () => {
    /** The outbox rows to `email` whose subject matches, read from the database itself. */
    async function outboxTo(email: string, subject: RegExp): Promise<number> {
      const database = openDatabase(store.url, testConfig(store, 'b').database);
      try {
        const rows = await database.db
          .selectFrom('mail_outbox')
          .select(['subject'])
          .where('recipient', '=', email)
          .execute();
        return rows.filter((r) => subject.test(r.subject)).length;
      } finally {
        await database.close();
      }
    }

    test('ISSUE 25: deleting an account with a verified address mails it a goodbye, recorded with the delete and delivered once the user row is gone', async () => {
      const t = apps.b;
      const u = await register(t);
      const [verify] = await waitForMails(smtp, u.email, SUBJECTS.verify);
      assert.equal(
        (await t.post('/api/email/verify', { token: linkToken(verify!, '/verify-email') })).statusCode,
        204,
      );
      const token = await signIn(t, u);
      const res = await del(t, `/api/users/${u.id}`, token);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(await userExists(t, u.id), false);
      // In the outbox already: written by the transaction that deleted the user, not after it.
      assert.equal(await outboxTo(u.email, GOODBYE), 1);
      const [goodbye] = await waitForMails(smtp, u.email, GOODBYE);
      assert.match(goodbye!.text, /was just deleted/);
      assert.doesNotMatch(goodbye!.text, /#token=/, 'nothing to act on');
    });

    test('ISSUE 25: deleting an account whose address was never verified mails nothing (registering and deleting must not mail any address twice)', async () => {
      const t = apps.b;
      const u = await register(t);
      const token = await signIn(t, u);
      assert.equal((await del(t, `/api/users/${u.id}`, token)).statusCode, 204);
      assert.equal(await userExists(t, u.id), false);
      assert.equal(await outboxTo(u.email, GOODBYE), 0);
      assert.equal(
        await outboxTo(u.email, SUBJECTS.verify),
        1,
        'only the verification mail of the registration',
      );
    });
  });
});
