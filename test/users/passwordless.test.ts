// Accounts without a password (CONTRACT "Accounts and sign-in methods", issue 26 point 2): a
// password sign-in for one fails exactly like a wrong password (status, body, throttle counting and
// hashing work), re-authentication answers it like a wrong present password, forgot-password sets
// its first password, and GET /api/account tells which methods an account has. Such an account is
// made here as a provider sign-in or `usher users add --no-password` leaves it: a user whose
// password credential row does not exist (registered, signed in, then the row removed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { asUser, NO_THROTTLE, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];
/** Wrong passwords for one account from one address before 429, in these apps. */
const PER_ACCOUNT_ADDRESS = 3;
const PUBLIC_URL = 'https://accounts.usher.example';

/** The value of a Prometheus sample without labels. */
function sample(text: string, name: string): number {
  for (const line of text.split('\n')) if (line.startsWith(`${name} `)) return Number(line.split(' ').at(-1));
  return 0;
}

const hashes = async (t: TestApp) =>
  sample((await t.get('/metrics')).body, 'usher_password_hash_seconds_count');

/** Removes the account's password, as an account made without one is stored. */
async function dropPassword(store: Store, userId: bigint): Promise<void> {
  const database = openTestDatabase(store);
  try {
    const removed = await database.db
      .deleteFrom('password_credentials')
      .where('user_id', '=', userId)
      .executeTakeFirst();
    assert.equal(removed.numDeletedRows, 1n, 'the account had a password to remove');
  } finally {
    await database.close();
  }
}

let addresses = 0;
/** A client address no other request in this file came from. */
function nextAddress(): string {
  addresses += 1;
  return `10.9.${(addresses >> 8) & 255}.${addresses & 255}`;
}

function post(t: TestApp, url: string, body: unknown, remoteAddress: string) {
  return t.inject({
    method: 'POST',
    url,
    remoteAddress,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

/** What a client sees of an answer: status, body and the headers that do not vary per request. */
function seen(res: LightMyRequestResponse) {
  const { date: _date, 'x-request-id': _id, 'retry-after': retryAfter, ...headers } = res.headers;
  // Retry-After counts whole seconds from now: two answers a moment apart may differ by one.
  return { status: res.statusCode, body: res.body, headers, retryAfter: retryAfter !== undefined };
}

describeEachStore('accounts without a password', (store) => {
  const apps = {} as Record<Profile, TestApp>;
  let smtp: TestSmtp;
  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES)
      apps[profile] = await startApp(store, profile, {
        publicUrl: PUBLIC_URL,
        mail: mailTo(smtp.url),
        throttle: { ...NO_THROTTLE, perAccountAddress: PER_ACCOUNT_ADDRESS },
        ...(store.kind === 'postgres' ? { encryptionKey: Buffer.alloc(32, 7) } : {}),
      });
  });
  after(async () => {
    for (const profile of PROFILES) await apps[profile]?.close();
    await smtp?.close();
  });

  /** A signed-in account whose password was then removed, and one with a password, alike otherwise. */
  async function pair(t: TestApp) {
    const without = await register(t);
    const token = await signIn(t, without);
    await dropPassword(store, without.id);
    const withPassword = await register(t);
    return { without: { ...without, token }, withPassword };
  }

  for (const profile of PROFILES) {
    for (const url of ['/api/signin', '/api/sessions']) {
      test(`[${profile}] ${url}: any password for an account without one is refused exactly like a wrong password, with the same hashing work and throttle counting`, async () => {
        const t = apps[profile];
        const { without, withPassword } = await pair(t);
        // The dummy hash is made once per process, at the first unknown email: made beforehand so
        // that it is not counted below.
        await post(
          t,
          url,
          { email: `nobody.${process.pid}@example.com`, password: 'whatever-1' },
          nextAddress(),
        );
        const [addressA, addressB] = [nextAddress(), nextAddress()];
        const answers = { without: [] as unknown[], wrong: [] as unknown[] };
        const work = { without: [] as number[], wrong: [] as number[] };
        for (let i = 0; i <= PER_ACCOUNT_ADDRESS; i++) {
          // The account's own former password: still refused, it has none now.
          let before = await hashes(t);
          answers.without.push(
            seen(await post(t, url, { email: without.email, password: without.password }, addressA)),
          );
          work.without.push((await hashes(t)) - before);
          before = await hashes(t);
          answers.wrong.push(
            seen(await post(t, url, { email: withPassword.email, password: 'not-the-password' }, addressB)),
          );
          work.wrong.push((await hashes(t)) - before);
        }
        assert.deepEqual(answers.without, answers.wrong);
        assert.deepEqual(
          answers.wrong.map((a) => (a as { status: number }).status),
          [...Array(PER_ACCOUNT_ADDRESS).fill(401), 429],
          'wrong passwords are counted until the throttle holds the account',
        );
        assert.deepEqual(work.without, work.wrong, 'the same number of hashes');
        assert.deepEqual(
          work.wrong,
          [...Array(PER_ACCOUNT_ADDRESS).fill(1), 0],
          'one hash per judged attempt',
        );
      });
    }

    test(`[${profile}] re-authentication: a present password for an account without one is answered, and counted, like a wrong one`, async () => {
      const t = apps[profile];
      const { without, withPassword } = await pair(t);
      const wrongToken = await signIn(t, withPassword);
      const change = (user: { id: bigint; email: string }, token: string) =>
        t.inject({
          method: 'PUT',
          url: `/api/users/${user.id}`,
          remoteAddress: '10.8.0.1',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          payload: JSON.stringify({
            email: user.email,
            name: 'Renamed',
            password: 'a new long passphrase',
            currentPassword: 'a guess at a password',
          }),
        });
      const statuses = { without: [] as number[], wrong: [] as number[] };
      for (let i = 0; i <= PER_ACCOUNT_ADDRESS; i++) {
        const a = await change(without, without.token);
        const b = await change(withPassword, wrongToken);
        assert.equal(a.body, b.body);
        statuses.without.push(a.statusCode);
        statuses.wrong.push(b.statusCode);
      }
      assert.deepEqual(statuses.without, statuses.wrong);
      assert.deepEqual(statuses.wrong, [...Array(PER_ACCOUNT_ADDRESS).fill(400), 429]);
      const account = await asUser(t, without.token).get('/api/account');
      assert.equal(account.json().password, false, 'still no password');
    });

    test(`[${profile}] forgot-password sets a password for an account without one, which then signs in`, async () => {
      const t = apps[profile];
      const { without } = await pair(t);
      const refused = await post(
        t,
        '/api/signin',
        { email: without.email, password: without.password },
        nextAddress(),
      );
      assert.equal(refused.statusCode, 401);
      const asked = await post(t, '/api/password/forgot', { email: without.email }, nextAddress());
      assert.equal(asked.statusCode, 202, asked.body);
      const [mail] = await waitForMails(smtp, without.email, SUBJECTS.reset);
      const reset = await t.post('/api/password/reset', {
        token: linkToken(mail!, '/reset-password'),
        password: 'my very first password',
      });
      assert.equal(reset.statusCode, 204, reset.body);
      const res = await post(
        t,
        '/api/signin',
        { email: without.email, password: 'my very first password' },
        nextAddress(),
      );
      assert.equal(res.statusCode, 200, res.body);
      const token = await signIn(t, { email: without.email, password: 'my very first password' });
      assert.equal((await asUser(t, token).get('/api/account')).json().password, true);
    });

    test(`[${profile}] GET /api/account: the user, and whether the account has a password, TOTP in force, passkeys`, async () => {
      const t = apps[profile];
      const { without, withPassword } = await pair(t);
      const token = await signIn(t, withPassword);
      const mine = await asUser(t, token).get('/api/account');
      assert.equal(mine.statusCode, 200, mine.body);
      assert.equal(mine.headers['cache-control'], 'no-store');
      const user = (await t.get(`/api/users/${withPassword.id}`)).json();
      assert.deepEqual(mine.json(), {
        user,
        password: true,
        totp: false,
        passkeys: 0,
        identities: [],
        role: 'user',
        locale: 'en',
      });
      const theirs = await asUser(t, without.token).get('/api/account');
      assert.equal(theirs.statusCode, 200, theirs.body);
      assert.deepEqual(theirs.json(), {
        user: (await t.get(`/api/users/${without.id}`)).json(),
        password: false,
        totp: false,
        passkeys: 0,
        identities: [],
        role: 'user',
        locale: 'en',
      });

      // TOTP counts once in force, not while its set-up is pending.
      const setup = await asUser(t, token).post('/api/mfa/totp', { password: withPassword.password });
      assert.equal(setup.statusCode, 200, setup.body);
      assert.equal((await asUser(t, token).get('/api/account')).json().totp, false, 'pending');
      const confirmed = await asUser(t, token).post('/api/mfa/totp/confirm', {
        code: totpAt(setup.json().secret, Date.now()),
      });
      assert.equal(confirmed.statusCode, 200, confirmed.body);
      assert.equal((await asUser(t, token).get('/api/account')).json().totp, true, 'in force');
    });

    test(`[${profile}] GET /api/account without a session is 401 UNAUTHENTICATED`, async () => {
      const t = apps[profile];
      const res = await t.get('/api/account');
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().error, 'UNAUTHENTICATED');
      const bad = await asUser(t, 'not-a-session-token').get('/api/account');
      assert.equal(bad.statusCode, 401);
      assert.equal(bad.json().error, 'UNAUTHENTICATED');
    });
  }
});
