// The admin API at work (CONTRACT "Administration", issue 29), black-box on both stores: search
// (substrings of email and name in any case, short queries, `%` and `_` literal, filters, paging,
// sort keys), the user view, changes (name, email, verification, role, application roles), disable
// and enable (and how a disabled account's sign-in answers), delete, ending sessions, removing
// second factors, the reset and verification mails through a real SMTP server, the last admin
// (through the API and the CLI, and two admins demoting each other at once), the `roles` claim in
// session tokens verified from the JWKS, and the audit rows the calls leave.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import * as jose from 'jose';
import type { Config, Profile } from '../../src/config.ts';
import {
  leaksSecret,
  NO_THROTTLE,
  newUser,
  register,
  sessionToken,
  signIn,
  startApp,
  type TestApp,
} from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailsTo, mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { runProcess } from '../helpers/process.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore, freshDatabaseUrl, type Store } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';
import {
  API,
  OIDC_ENCRYPTION_KEY,
  type OidcTestApp,
  remoteKeys,
  startOidcApp,
} from '../helpers/usher-oidc.ts';
import { adminView, as, assertError, type SignedIn, staff } from './support.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];
const PUBLIC_URL = 'https://id.example.test';
const ORIGIN = 'https://id.example.test';
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ITEM_KEYS = [
  'createdAt',
  'email',
  'emailVerified',
  'id',
  'lastSignInAt',
  'name',
  'role',
  'roles',
  'status',
];
const DETAIL_KEYS = [
  ...ITEM_KEYS,
  'disabledReason',
  'identities',
  'passkeys',
  'password',
  'sessions',
  'totp',
].sort();
const SESSION_KEYS = ['createdAt', 'current', 'expiresAt', 'id', 'lastSeenAt', 'userAgent'];
const MAIL = {
  ...SUBJECTS,
  emailChanged: /email address of your account was changed/i,
  factorsRemoved: /two-step sign-in and passkeys were removed/i,
};

/** A marker no other test's names or emails hold (hex, so never a `z`, `q`, `%` or `_`). */
const marker = () => `m${randomBytes(5).toString('hex')}`;

type Item = Record<string, unknown> & { id: number; email: string; name: string };

/** The headers of an answer without those that differ from one answer to the next. */
function stableHeaders(res: LightMyRequestResponse): Record<string, unknown> {
  const { date: _date, 'x-request-id': _id, ...rest } = res.headers;
  return rest;
}

/** A wrong-password answer is the same whatever the account: status, body and headers. */
function assertSameAnswer(actual: LightMyRequestResponse, expected: LightMyRequestResponse, what: string) {
  assert.equal(actual.statusCode, expected.statusCode, what);
  assert.equal(actual.body, expected.body, what);
  assert.deepEqual(stableHeaders(actual), stableHeaders(expected), what);
}

describeEachStore('admin API', (store: Store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  const oidc = {} as Record<Profile, OidcTestApp>;
  const overrides = (): Partial<Config> => ({
    publicUrl: PUBLIC_URL,
    mail: mailTo(smtp.url),
    throttle: { ...NO_THROTTLE },
    encryptionKey: OIDC_ENCRYPTION_KEY,
  });
  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES) apps[profile] = await startApp(store, profile, overrides());
    // Apps on the same database whose provider signs tokens verifiable from their JWKS; they send
    // the same outbox's mail to the same SMTP server.
    for (const profile of PROFILES)
      oidc[profile] = await startOidcApp(store, profile, { mail: mailTo(smtp.url) });
  });
  after(async () => {
    for (const profile of PROFILES) {
      await apps[profile]?.close();
      await oidc[profile]?.close();
    }
    await smtp?.close();
  });

  /** A search's items and headers, which must be a 200. */
  async function search(t: TestApp, token: string, query: string) {
    const res = await as(t, token).get(`/api/admin/users?${query}`);
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return { items: res.json() as Item[], total: Number(res.headers['x-total-count']), res };
  }

  const ids = (items: readonly Item[]) => items.map((u) => String(u.id));

  describe('search', () => {
    test('q matches a substring of the email or of the name, in any letter case', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      const byEmail = await register(t, newUser({ email: `Mail.${m}.Box@Example.com`, name: 'Plain Name' }));
      const byName = await register(t, newUser({ name: `Ms ${m.toUpperCase()} Smith` }));
      const neither = await register(t, newUser({ name: 'Someone Else' }));
      for (const q of [m, m.toUpperCase(), `.${m}.box@`, `${m.toUpperCase()}.BOX@EXAMPLE`]) {
        const { items } = await search(t, admin.token, `q=${encodeURIComponent(q)}`);
        assert.ok(ids(items).includes(String(byEmail.id)), `email found by ${q}`);
        assert.ok(!ids(items).includes(String(neither.id)), q);
      }
      const both = await search(t, admin.token, `q=${m}`);
      assert.deepEqual(ids(both.items).sort(), [String(byEmail.id), String(byName.id)].sort());
      assert.equal(both.total, 2);
      const name = await search(t, admin.token, `q=${encodeURIComponent(`${m} smith`)}`);
      assert.deepEqual(ids(name.items), [String(byName.id)], 'a substring of the name across a space');
      assert.deepEqual((await search(t, admin.token, `q=${m}x`)).items, [], 'no account holds it');
      // Surrounding whitespace is not part of the query.
      assert.equal((await search(t, admin.token, `q=${encodeURIComponent(`  ${m}  `)}`)).total, 2);
    });

    test('a 1- and a 2-character query find what contains them, in any case, and only that', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      const one = await register(t, newUser({ name: `Zed ${m}` }));
      const two = await register(t, newUser({ email: `qx.${m}@example.com`, name: `Q ${m}` }));
      const other = await register(t, newUser({ name: `Other ${m}` }));
      for (const [q, member, contains] of [
        ['z', one, 'z'],
        ['Z', one, 'z'],
        ['qx', two, 'qx'],
        ['QX', two, 'qx'],
      ] as const) {
        const { items, total } = await search(t, admin.token, `q=${q}&size=100&sort=-id`);
        assert.ok(ids(items).includes(String(member.id)), `${q} finds its account`);
        assert.ok(!ids(items).includes(String(other.id)), `${q} leaves out the one without it`);
        assert.ok(total >= 1);
        for (const item of items)
          assert.ok(
            item.email.toLowerCase().includes(contains) || item.name.toLowerCase().includes(contains),
            `${q}: ${item.email} ${item.name}`,
          );
      }
    });

    test('% and _ in q are taken literally, not as wildcards', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      const percent = await register(t, newUser({ name: `${m} 100%` }));
      const digits = await register(t, newUser({ name: `${m} 1000` }));
      const underscore = await register(t, newUser({ email: `a_b.${m}@example.com` }));
      const letter = await register(t, newUser({ email: `axb.${m}@example.com` }));
      const only = async (q: string) =>
        ids((await search(t, admin.token, `q=${encodeURIComponent(q)}`)).items);
      assert.deepEqual(await only(`${m} 100%`), [String(percent.id)]);
      assert.deepEqual(await only(`${m} 1%0`), []);
      assert.deepEqual(await only(`a_b.${m}`), [String(underscore.id)]);
      assert.deepEqual(await only(`a_b`), [String(underscore.id)], 'a short query too');
      assert.deepEqual(await only(`%${m}`), []);
      assert.deepEqual(await only(`_.${m}`), []);
      assert.deepEqual(await only('\\'), [], 'the escape character is literal too');
      for (const q of ['%', '_']) {
        const { items } = await search(t, admin.token, `q=${encodeURIComponent(q)}&size=100&sort=-id`);
        for (const item of items)
          assert.ok(
            item.email.includes(q) || item.name.includes(q),
            `${q} matched ${item.email} ${item.name}`,
          );
        assert.ok(!ids(items).includes(String(digits.id)) && !ids(items).includes(String(letter.id)), q);
      }
    });

    test('q matches letters outside ASCII in any letter case, the same case included (É and é, Ω and ω)', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      const user = await register(t, newUser({ name: `ÉLODIE ΩMEGA ${m}` }));
      for (const q of ['ÉLODIE', 'ΩMEGA', 'É', 'élodie', 'Élodie', 'ωmega', 'é', 'ω']) {
        const { items } = await search(t, admin.token, `q=${encodeURIComponent(q)}&size=100&sort=-id`);
        assert.ok(ids(items).includes(String(user.id)), `${q} finds "${user.name}"`);
      }
    });

    test('filters status, verified and role keep only what they name, with q', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      const plain = await register(t, newUser({ name: `${m} plain` }));
      const verified = await register(t, newUser({ name: `${m} verified` }));
      const disabled = await register(t, newUser({ name: `${m} disabled` }));
      const support = await register(t, newUser({ name: `${m} support` }));
      const by = as(t, admin.token);
      assert.equal(
        (await by.patch(`/api/admin/users/${verified.id}`, { emailVerified: true })).statusCode,
        200,
      );
      assert.equal((await by.post(`/api/admin/users/${disabled.id}/disable`, {})).statusCode, 200);
      assert.equal((await by.patch(`/api/admin/users/${support.id}`, { role: 'support' })).statusCode, 200);
      const found = async (query: string) =>
        ids((await search(t, admin.token, `q=${m}&${query}`)).items).sort();
      const sorted = (...users: { id: bigint }[]) => users.map((u) => String(u.id)).sort();
      assert.deepEqual(await found('status=disabled'), sorted(disabled));
      assert.deepEqual(await found('status=active'), sorted(plain, verified, support));
      assert.deepEqual(await found('verified=true'), sorted(verified));
      assert.deepEqual(await found('verified=false'), sorted(plain, disabled, support));
      assert.deepEqual(await found('role=support'), sorted(support));
      assert.deepEqual(await found('role=admin'), []);
      assert.deepEqual(await found('role=user'), sorted(plain, verified, disabled));
      assert.deepEqual(await found('role=user&status=active&verified=false'), sorted(plain));
      const { items } = await search(t, admin.token, 'role=admin&size=100');
      assert.ok(ids(items).includes(String(admin.id)));
      for (const item of items) assert.equal(item.role, 'admin');
      const status = (await search(t, admin.token, `q=${m}&status=disabled`)).items[0]!;
      assert.equal(status.status, 'disabled');
    });

    test('paging: size and page select a slice; X-Total-Count and Link (first, prev, next, last) keep the query', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push(String((await register(t, newUser({ name: `${m} ${i}` }))).id));
      const first = await search(t, admin.token, `q=${m}&size=2`);
      assert.equal(first.res.headers['x-total-count'], '5');
      assert.deepEqual(ids(first.items), made.slice(0, 2), 'id order by default');
      const link = String(first.res.headers.link);
      assert.match(link, /rel="first"/);
      assert.match(link, /rel="next"/);
      assert.match(link, /rel="last"/);
      assert.doesNotMatch(link, /rel="prev"/);
      assert.ok(link.includes(`q=${m}`), link);
      const next = /<([^>]+)>; rel="next"/.exec(link)![1]!;
      const last = /<([^>]+)>; rel="last"/.exec(link)![1]!;
      assert.match(last, /page=3/);
      const second = await as(t, admin.token).get(next);
      assert.equal(second.statusCode, 200);
      assert.deepEqual(ids(second.json()), made.slice(2, 4));
      assert.match(String(second.headers.link), /rel="prev"/);
      const third = await as(t, admin.token).get(last);
      assert.deepEqual(ids(third.json()), made.slice(4));
      assert.doesNotMatch(String(third.headers.link), /rel="next"/);
      const past = await search(t, admin.token, `q=${m}&size=2&page=4`);
      assert.deepEqual(past.items, []);
      assert.equal(past.total, 5);
      const all = await search(t, admin.token, `q=${m}`);
      assert.equal(all.items.length, 5, 'default size holds them');
    });

    test('sort keys: id, email, name, createdAt, lastSignInAt, each ascending and descending', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const m = marker();
      // Made in this order; their names and emails sort otherwise.
      const c = await register(t, newUser({ name: `${m} c`, email: `b.${m}@example.com` }));
      const a = await register(t, newUser({ name: `${m} a`, email: `c.${m}@example.com` }));
      const b = await register(t, newUser({ name: `${m} b`, email: `a.${m}@example.com` }));
      const id = (u: { id: bigint }) => String(u.id);
      const order = async (sort: string) => ids((await search(t, admin.token, `q=${m}&sort=${sort}`)).items);
      assert.deepEqual(await order('id'), [id(c), id(a), id(b)]);
      assert.deepEqual(await order('-id'), [id(b), id(a), id(c)]);
      assert.deepEqual(await order('name'), [id(a), id(b), id(c)]);
      assert.deepEqual(await order('-name'), [id(c), id(b), id(a)]);
      assert.deepEqual(await order('name,desc'), [id(c), id(b), id(a)]);
      assert.deepEqual(await order('email'), [id(b), id(c), id(a)]);
      assert.deepEqual(await order('-email'), [id(a), id(c), id(b)]);
      assert.deepEqual(await order('email,asc'), [id(b), id(c), id(a)]);
      assert.deepEqual(await order('createdAt'), [id(c), id(a), id(b)]);
      assert.deepEqual(await order('-createdAt'), [id(b), id(a), id(c)]);
      // Sign-ins: b, then c; a never signed in and comes last either way.
      await signIn(t, b);
      await new Promise((r) => setTimeout(r, 5));
      await signIn(t, c);
      assert.deepEqual(await order('lastSignInAt'), [id(b), id(c), id(a)]);
      assert.deepEqual(await order('-lastSignInAt'), [id(c), id(b), id(a)]);
    });

    test('each item is the user object with role, roles, status, emailVerified, createdAt, lastSignInAt, and no secret', async () => {
      const t = apps.a;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser({ name: `Item ${marker()}` }));
      const { items, res } = await search(t, admin.token, `q=${encodeURIComponent(user.name)}`);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(items, [
        {
          id: Number(user.id),
          email: user.email,
          name: user.name,
          role: 'user',
          roles: [],
          status: 'active',
          emailVerified: false,
          createdAt: items[0]!.createdAt,
          lastSignInAt: null,
        },
      ]);
      assert.deepEqual(Object.keys(items[0]!).sort(), ITEM_KEYS);
      assert.match(String(items[0]!.createdAt), ISO);
      assert.equal(leaksSecret(res.body, [user.password]), false);
    });
  });

  describe('the user view', () => {
    test('password, totp, passkeys, identities, sessions as GET /api/sessions lists them, and lastSignInAt once signed in', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const fresh = await adminView(t, admin.token, user.id);
      assert.deepEqual(Object.keys(fresh).sort(), DETAIL_KEYS);
      assert.equal(fresh.password, true);
      assert.equal(fresh.totp, false);
      assert.deepEqual(fresh.passkeys, []);
      assert.deepEqual(fresh.identities, []);
      assert.deepEqual(fresh.sessions, []);
      assert.equal(fresh.lastSignInAt, null);
      assert.equal(fresh.disabledReason, null);

      const before = Date.now();
      const signins = [];
      for (const agent of ['Phone/1.0', 'Laptop/2.0']) {
        const res = await t.inject({
          method: 'POST',
          url: '/api/signin',
          headers: { 'content-type': 'application/json', 'user-agent': agent },
          payload: JSON.stringify({ email: user.email, password: user.password }),
        });
        assert.equal(res.statusCode, 200, res.body);
        signins.push(sessionToken(res.headers['set-cookie'])!);
      }
      const view = await adminView(t, admin.token, user.id);
      assert.match(String(view.lastSignInAt), ISO);
      assert.ok(Date.parse(String(view.lastSignInAt)) >= before - 1000, String(view.lastSignInAt));
      const sessions = view.sessions as Record<string, unknown>[];
      assert.equal(sessions.length, 2);
      for (const s of sessions) {
        assert.deepEqual(Object.keys(s).sort(), SESSION_KEYS);
        assert.equal(s.current, false, "the user's sessions are not the viewer's");
      }
      assert.deepEqual(
        sessions.map((s) => s.userAgent),
        ['Laptop/2.0', 'Phone/1.0'],
        'newest first',
      );
      // The same list the user sees, but for `current` (and lastSeenAt, which moves).
      const own = await as(t, signins[1]!).get('/api/sessions');
      const comparable = (list: Record<string, unknown>[]) =>
        list.map(({ current: _c, lastSeenAt: _l, ...rest }) => rest);
      assert.deepEqual(comparable(sessions), comparable(own.json()));
      for (const token of signins) assert.ok(!JSON.stringify(view).includes(token), 'no token shown');
      // `password` is a boolean here; neither the password nor its hash is shown.
      assert.ok(!JSON.stringify(view).includes(user.password) && !JSON.stringify(view).includes('$argon2'));

      // The admin's own view marks the session asking as current.
      const self = await adminView(t, admin.token, admin.id);
      assert.deepEqual(
        (self.sessions as { current: boolean }[]).map((s) => s.current),
        [true],
      );
      assert.equal(self.role, 'admin');
    });

    test('the view shows TOTP in force and passkeys by name once set up', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const { user, passkey } = await withSecondFactors(t);
      const view = await adminView(t, admin.token, user.id);
      assert.equal(view.totp, true);
      assert.deepEqual(view.passkeys, [passkey]);
    });
  });

  /** A user with TOTP in force (set up through the API) and a passkey. */
  async function withSecondFactors(t: TestApp) {
    const user = await register(t, newUser());
    const token = await signIn(t, user);
    const me = as(t, token);
    const setup = await me.post('/api/mfa/totp', { password: user.password });
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret } = setup.json() as { secret: string };
    const confirm = await me.post('/api/mfa/totp/confirm', { code: totpAt(secret, Date.now()) });
    assert.equal(confirm.statusCode, 200, confirm.body);
    const authenticator = new SoftAuthenticator(ORIGIN);
    const options = await me.post('/api/passkeys/register/options', {});
    assert.equal(options.statusCode, 200, options.body);
    const added = await me.post('/api/passkeys/register', {
      credential: authenticator.create(options.json()),
    });
    assert.equal(added.statusCode, 201, added.body);
    return { user, token, secret, passkey: added.json() as Record<string, unknown> };
  }

  describe('PATCH', () => {
    test('name: changed, shown in the admin view and to everyone', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const res = await as(t, admin.token).patch(`/api/admin/users/${user.id}`, { name: '  New Name  ' });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(Object.keys(res.json()).sort(), DETAIL_KEYS);
      assert.equal(res.json().name, 'New Name');
      assert.equal((await t.get(`/api/users/${user.id}`)).json().name, 'New Name');
      const empty = await as(t, admin.token).patch(`/api/admin/users/${user.id}`, {});
      assert.equal(empty.statusCode, 200, 'nothing sent, nothing changed');
      assert.equal(empty.json().name, 'New Name');
    });

    test('email: the new address is unverified and mailed a link that verifies it; the old address is told', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const by = as(t, admin.token);
      assert.equal(
        (await by.patch(`/api/admin/users/${user.id}`, { emailVerified: true })).json().emailVerified,
        true,
      );
      const newEmail = `moved.${marker()}@Example.com`;
      const res = await by.patch(`/api/admin/users/${user.id}`, { email: newEmail });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().email, newEmail);
      assert.equal(res.json().emailVerified, false, 'a new address is unproven');
      const [verify] = await waitForMails(smtp, newEmail, MAIL.verify);
      await waitForMails(smtp, user.email, MAIL.emailChanged);
      const confirmed = await t.post('/api/email/verify', { token: linkToken(verify!, '/verify-email') });
      assert.equal(confirmed.statusCode, 204, confirmed.body);
      assert.equal((await adminView(t, admin.token, user.id)).emailVerified, true);
      // The user signs in with the new address, not the old one.
      assert.equal(
        (await t.post('/api/signin', { email: newEmail, password: user.password })).statusCode,
        200,
      );
      assert.equal(
        (await t.post('/api/signin', { email: user.email, password: user.password })).statusCode,
        401,
      );
    });

    test('email with emailVerified true: the new address counts as verified, no link is mailed to it', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const newEmail = `proven.${marker()}@example.com`;
      const res = await as(t, admin.token).patch(`/api/admin/users/${user.id}`, {
        email: newEmail,
        emailVerified: true,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().emailVerified, true);
      // The notice to the old address is queued after any link to the new one would be.
      await waitForMails(smtp, user.email, MAIL.emailChanged);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(mailsTo(smtp, newEmail, MAIL.verify), []);
    });

    test('emailVerified: set and cleared', async () => {
      const t = apps.a;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const by = as(t, admin.token);
      assert.equal(
        (await by.patch(`/api/admin/users/${user.id}`, { emailVerified: true })).json().emailVerified,
        true,
      );
      assert.equal((await adminView(t, admin.token, user.id)).emailVerified, true);
      assert.equal((await apps.b.get(`/api/users/${user.id}`)).json().emailVerified, true);
      assert.equal(
        (await by.patch(`/api/admin/users/${user.id}`, { emailVerified: false })).json().emailVerified,
        false,
      );
      assert.equal((await adminView(t, admin.token, user.id)).emailVerified, false);
    });

    test('role: a promoted user may use the admin API from their next request, a demoted one may not', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await staff(t, store, 'user');
      const by = as(t, admin.token);
      assertError(await as(t, user.token).get('/api/admin/users'), 403, 'FORBIDDEN', 'before');
      const promoted = await by.patch(`/api/admin/users/${user.id}`, { role: 'admin' });
      assert.equal(promoted.statusCode, 200, promoted.body);
      assert.equal(promoted.json().role, 'admin');
      assert.equal((await as(t, user.token).get('/api/admin/users')).statusCode, 200);
      assert.equal(
        (await by.patch(`/api/admin/users/${user.id}`, { role: 'support' })).json().role,
        'support',
      );
      assertError(
        await as(t, user.token).patch(`/api/admin/users/${admin.id}`, { name: 'x' }),
        403,
        'FORBIDDEN',
        'support changing',
      );
      assert.equal((await by.patch(`/api/admin/users/${user.id}`, { role: 'user' })).json().role, 'user');
      assertError(await as(t, user.token).get('/api/admin/users'), 403, 'FORBIDDEN', 'after');
    });

    test('roles: up to 20, each [a-z0-9:_-]{1,64}; a duplicate kept once; [] clears them', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const by = as(t, admin.token);
      const twenty = Array.from({ length: 20 }, (_, i) => `app:role_${i}-x`);
      const set = await by.patch(`/api/admin/users/${user.id}`, { roles: twenty });
      assert.equal(set.statusCode, 200, set.body);
      assert.deepEqual(set.json().roles, twenty);
      const longest = 'r'.repeat(64);
      const dup = await by.patch(`/api/admin/users/${user.id}`, { roles: ['editor', longest, 'editor'] });
      assert.equal(dup.statusCode, 200, dup.body);
      assert.deepEqual(dup.json().roles, ['editor', longest]);
      for (const roles of [[...twenty, 'one-more'], ['Editor'], ['a b'], ['r'.repeat(65)], [''], ['é']]) {
        const res = await by.patch(`/api/admin/users/${user.id}`, { roles });
        assertError(res, 400, 'VALIDATION_FAILED', JSON.stringify(roles));
        assert.match(res.json().message, /^roles/, JSON.stringify(roles));
      }
      assert.deepEqual((await adminView(t, admin.token, user.id)).roles, ['editor', longest], 'unchanged');
      assert.deepEqual((await by.patch(`/api/admin/users/${user.id}`, { roles: [] })).json().roles, []);
    });

    test('email of another account, in any letter case: 409 EMAIL_TAKEN, nothing changes', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const other = await register(t, newUser());
      const res = await as(t, admin.token).patch(`/api/admin/users/${user.id}`, {
        email: other.email.toUpperCase(),
        name: 'Should Not Stick',
      });
      assertError(res, 409, 'EMAIL_TAKEN', 'taken');
      const view = await adminView(t, admin.token, user.id);
      assert.equal(view.email, user.email);
      assert.equal(view.name, user.name);
      // Its own address in another case is no conflict.
      const own = await as(t, admin.token).patch(`/api/admin/users/${user.id}`, {
        email: user.email.toUpperCase(),
      });
      assert.equal(own.statusCode, 200, own.body);
    });
  });

  describe('disable and enable', () => {
    for (const profile of PROFILES) {
      test(`[${profile}] disable: sessions end at once; the right password is 403 SIGNIN_FAILED, a wrong one answers as for an unknown email; enable lets them in`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        const user = await staff(t, store, 'user');
        const second = await t.post('/api/sessions', { email: user.email, password: user.password });
        assert.equal(second.statusCode, 201, second.body);
        const disabled = await as(t, admin.token).post(`/api/admin/users/${user.id}/disable`, {
          reason: 'lost laptop',
        });
        assert.equal(disabled.statusCode, 200, disabled.body);
        assert.equal(disabled.json().status, 'disabled');
        assert.equal(disabled.json().disabledReason, 'lost laptop');
        assert.deepEqual(disabled.json().sessions, []);
        for (const token of [user.token, second.json().token as string])
          assertError(
            await as(t, token).get('/api/session'),
            401,
            'UNAUTHENTICATED',
            'a session of a disabled account',
          );

        const right = await t.post('/api/signin', { email: user.email, password: user.password });
        assert.equal(right.statusCode, 403, right.body);
        assert.equal(right.headers['set-cookie'], undefined, 'no session');
        if (profile === 'a') assert.equal(right.body, '{"error":"SIGNIN_FAILED"}');
        else {
          assert.deepEqual(Object.keys(right.json()).sort(), ['error', 'message']);
          assert.equal(right.json().error, 'SIGNIN_FAILED');
          assert.match(right.json().message, /disabled/i);
        }
        const byToken = await t.post('/api/sessions', { email: user.email, password: user.password });
        assert.equal(byToken.statusCode, 403, `token sign-in: ${byToken.body}`);
        assert.equal(byToken.json().error, 'SIGNIN_FAILED');
        assert.equal(byToken.json().token, undefined);

        const wrong = await t.post('/api/signin', { email: user.email, password: 'not-the-password' });
        const unknown = await t.post('/api/signin', {
          email: `nobody.${marker()}@example.com`,
          password: 'not-the-password',
        });
        assert.equal(wrong.statusCode, 401, wrong.body);
        assertSameAnswer(wrong, unknown, 'a disabled account with a wrong password, and an unknown email');
        if (profile === 'b') assert.doesNotMatch(wrong.body, /disabled/i);

        const listed = await search(t, admin.token, `q=${encodeURIComponent(user.email)}&status=disabled`);
        assert.deepEqual(ids(listed.items), [String(user.id)]);

        const enabled = await as(t, admin.token).post(`/api/admin/users/${user.id}/enable`, {});
        assert.equal(enabled.statusCode, 200, enabled.body);
        assert.equal(enabled.json().status, 'active');
        assert.equal(enabled.json().disabledReason, null);
        const back = await signIn(t, user);
        assert.equal((await as(t, back).get('/api/session')).statusCode, 200);
      });
    }

    test('disable without a body, and a second disable, keep the account disabled; enable answers the admin view', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const user = await register(t, newUser());
      const bare = await t.inject({
        method: 'POST',
        url: `/api/admin/users/${user.id}/disable`,
        headers: { authorization: `Bearer ${admin.token}` },
      });
      assert.equal(bare.statusCode, 200, bare.body);
      assert.equal(bare.json().status, 'disabled');
      const again = await as(t, admin.token).post(`/api/admin/users/${user.id}/disable`, {});
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.json().status, 'disabled');
      assert.equal(
        (await t.post('/api/signin', { email: user.email, password: user.password })).statusCode,
        403,
      );
      const enabled = await t.inject({
        method: 'POST',
        url: `/api/admin/users/${user.id}/enable`,
        headers: { authorization: `Bearer ${admin.token}` },
      });
      assert.equal(enabled.statusCode, 200, enabled.body);
      assert.deepEqual(Object.keys(enabled.json()).sort(), DETAIL_KEYS);
      assert.equal(
        (await t.post('/api/signin', { email: user.email, password: user.password })).statusCode,
        200,
      );
    });
  });

  describe('delete, end sessions, remove second factors, mails', () => {
    for (const profile of PROFILES) {
      test(`[${profile}] delete: 204, then 404 everywhere; the token is dead and sign-in fails as for an unknown email`, async () => {
        const t = apps[profile];
        const admin = await staff(t, store, 'admin');
        const user = await staff(t, store, 'user');
        const res = await as(t, admin.token).delete(`/api/admin/users/${user.id}`);
        assert.equal(res.statusCode, 204, res.body);
        assertError(
          await as(t, admin.token).get(`/api/admin/users/${user.id}`),
          404,
          'NOT_FOUND',
          'admin view',
        );
        const pub = await t.get(`/api/users/${user.id}`);
        assert.equal(pub.statusCode, 404);
        assert.deepEqual(pub.json(), { error: 'USER_NOT_FOUND' });
        assertError(await as(t, user.token).get('/api/session'), 401, 'UNAUTHENTICATED', 'their session');
        const gone = await t.post('/api/signin', { email: user.email, password: user.password });
        const unknown = await t.post('/api/signin', {
          email: `nobody.${marker()}@example.com`,
          password: user.password,
        });
        assert.equal(gone.statusCode, 401);
        assertSameAnswer(gone, unknown, 'a deleted account and an unknown email');
        assertError(
          await as(t, admin.token).delete(`/api/admin/users/${user.id}`),
          404,
          'NOT_FOUND',
          'again',
        );
      });
    }

    test('end sessions (support): every session of the user ends at once, nobody else’s', async () => {
      const t = apps.b;
      const support = await staff(t, store, 'support');
      const user = await staff(t, store, 'user');
      const bystander = await staff(t, store, 'user');
      const other = await signIn(t, user);
      const res = await as(t, support.token).delete(`/api/admin/users/${user.id}/sessions`);
      assert.equal(res.statusCode, 204, res.body);
      for (const token of [user.token, other])
        assertError(await as(t, token).get('/api/session'), 401, 'UNAUTHENTICATED', 'ended');
      assert.equal((await as(t, bystander.token).get('/api/session')).statusCode, 200);
      assert.equal((await as(t, support.token).get('/api/session')).statusCode, 200);
      assert.deepEqual((await adminView(t, support.token, user.id)).sessions, []);
      // They can sign in again.
      await signIn(t, user);
    });

    test('remove second factors: TOTP and passkeys gone, sign-in needs no code, the owner is mailed a notice', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const { user } = await withSecondFactors(t);
      const asks = await t.post('/api/signin', { email: user.email, password: user.password });
      assert.equal(asks.statusCode, 401, 'a code is needed first');
      assert.equal(asks.headers['usher-second-factor'], 'totp');
      const res = await as(t, admin.token).delete(`/api/admin/users/${user.id}/mfa`);
      assert.equal(res.statusCode, 204, res.body);
      const view = await adminView(t, admin.token, user.id);
      assert.equal(view.totp, false);
      assert.deepEqual(view.passkeys, []);
      const signin = await t.post('/api/signin', { email: user.email, password: user.password });
      assert.equal(signin.statusCode, 200, signin.body);
      const [notice] = await waitForMails(smtp, user.email, MAIL.factorsRemoved);
      assert.equal(notice!.to, user.email);
      const me = as(t, sessionToken(signin.headers['set-cookie'])!);
      assert.deepEqual((await me.get('/api/passkeys')).json(), []);
    });

    test('password-reset mail (support): 202, the link arrives through SMTP and sets a new password', async () => {
      const t = apps.b;
      const support = await staff(t, store, 'support');
      const user = await register(t, newUser());
      const res = await as(t, support.token).post(`/api/admin/users/${user.id}/password-reset`, {});
      assert.equal(res.statusCode, 202, res.body);
      assert.deepEqual(res.json(), { status: 'accepted' });
      const [mail] = await waitForMails(smtp, user.email, MAIL.reset);
      assert.ok(mail!.text.includes(`${PUBLIC_URL}/reset-password#token=`), mail!.text);
      const reset = await t.post('/api/password/reset', {
        token: linkToken(mail!, '/reset-password'),
        password: 'chosen after a call to support',
      });
      assert.equal(reset.statusCode, 204, reset.body);
      assert.equal(
        (await t.post('/api/signin', { email: user.email, password: 'chosen after a call to support' }))
          .statusCode,
        200,
      );
    });

    test('verification mail (support): 202, the link arrives through SMTP and verifies; on a verified account 400 VALIDATION_FAILED', async () => {
      const t = apps.b;
      const support = await staff(t, store, 'support');
      const user = await register(t, newUser());
      await waitForMails(smtp, user.email, MAIL.verify, 1);
      const res = await as(t, support.token).post(`/api/admin/users/${user.id}/verification`, {});
      assert.equal(res.statusCode, 202, res.body);
      assert.deepEqual(res.json(), { status: 'accepted' });
      const mails = await waitForMails(smtp, user.email, MAIL.verify, 2);
      const verified = await t.post('/api/email/verify', { token: linkToken(mails[1]!, '/verify-email') });
      assert.equal(verified.statusCode, 204, verified.body);
      assert.equal((await adminView(t, support.token, user.id)).emailVerified, true);
      const again = await as(t, support.token).post(`/api/admin/users/${user.id}/verification`, {});
      assertError(again, 400, 'VALIDATION_FAILED', 'already verified');
    });
  });

  describe('the last admin', () => {
    /** A fresh database of this store whose only admin is the one returned. */
    async function soleAdmin() {
      const fresh = await freshDatabaseUrl(store.kind);
      const own: Store = { kind: store.kind, url: fresh.url };
      const t = await startApp(own, 'b', { throttle: { ...NO_THROTTLE } });
      const admin = await staff(t, own, 'admin');
      return {
        t,
        own,
        admin,
        close: async () => {
          await t.close();
          await fresh.drop();
        },
      };
    }

    const admins = async (t: TestApp, token: string) => {
      const res = await as(t, token).get('/api/admin/users?role=admin&status=active&size=100');
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as Item[]).map((u) => String(u.id));
    };

    test('the last admin cannot be demoted, disabled or deleted through the admin API (409 LAST_ADMIN); with a second admin they can', async () => {
      const { t, own, admin, close } = await soleAdmin();
      try {
        const by = as(t, admin.token);
        const url = `/api/admin/users/${admin.id}`;
        for (const role of ['support', 'user'])
          assertError(await by.patch(url, { role }), 409, 'LAST_ADMIN', `demoted to ${role}`);
        assertError(await by.post(`${url}/disable`, {}), 409, 'LAST_ADMIN', 'disabled');
        assertError(await by.delete(url), 409, 'LAST_ADMIN', 'deleted');
        const view = await adminView(t, admin.token, admin.id);
        assert.equal(view.role, 'admin');
        assert.equal(view.status, 'active');
        // Nothing else was changed with the refused role: one request, one transaction.
        const refused = await by.patch(url, { role: 'user', name: 'Not Renamed' });
        assertError(refused, 409, 'LAST_ADMIN', 'demoted with a rename');
        assert.equal((await adminView(t, admin.token, admin.id)).name, admin.name);
        // Promoting to admin again is no demotion.
        assert.equal((await by.patch(url, { role: 'admin' })).statusCode, 200);

        // A disabled admin cannot sign in: they do not count.
        const dormant = await staff(t, own, 'admin');
        assert.equal((await by.post(`/api/admin/users/${dormant.id}/disable`, {})).statusCode, 200);
        assertError(
          await by.patch(url, { role: 'user' }),
          409,
          'LAST_ADMIN',
          'with only a disabled admin beside',
        );

        const second = await staff(t, own, 'admin');
        const demoted = await by.patch(url, { role: 'support' });
        assert.equal(demoted.statusCode, 200, demoted.body);
        assert.deepEqual(await admins(t, second.token), [String(second.id)]);
        assertError(
          await as(t, second.token).delete(`/api/admin/users/${second.id}`),
          409,
          'LAST_ADMIN',
          'the new last admin',
        );
        assert.equal((await as(t, second.token).delete(`/api/admin/users/${admin.id}`)).statusCode, 204);
      } finally {
        await close();
      }
    });

    test('the last admin cannot delete their own account (DELETE /api/users/{id}: 409 LAST_ADMIN)', async () => {
      const { t, own, admin, close } = await soleAdmin();
      try {
        const res = await as(t, admin.token).delete(`/api/users/${admin.id}`);
        assertError(res, 409, 'LAST_ADMIN', 'self-delete');
        const withPassword = await t.inject({
          method: 'DELETE',
          url: `/api/users/${admin.id}`,
          headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ currentPassword: admin.password }),
        });
        assertError(withPassword, 409, 'LAST_ADMIN', 'self-delete with the password');
        assert.equal((await t.get(`/api/users/${admin.id}`)).statusCode, 200, 'still there');
        assert.equal((await as(t, admin.token).get('/api/session')).statusCode, 200, 'still signed in');
        const second = await staff(t, own, 'admin');
        assert.equal((await as(t, admin.token).delete(`/api/users/${admin.id}`)).statusCode, 204);
        assertError(
          await as(t, second.token).delete(`/api/users/${second.id}`),
          409,
          'LAST_ADMIN',
          'then the other',
        );
      } finally {
        await close();
      }
    });

    test('the CLI keeps the last admin: users delete and users set-role exit non-zero with LAST_ADMIN', async () => {
      const { t, own, admin, close } = await soleAdmin();
      try {
        const cli = (...args: string[]) =>
          runProcess(process.execPath, [CLI, ...args], { DATABASE_URL: own.url });
        const deleted = await cli('users', 'delete', '--email', admin.email, '--yes');
        assert.notEqual(deleted.code, 0, deleted.stdout);
        assert.match(deleted.stderr, /LAST_ADMIN/);
        for (const role of ['user', 'support']) {
          const demoted = await cli('users', 'set-role', '--email', admin.email, role);
          assert.notEqual(demoted.code, 0, demoted.stdout);
          assert.match(demoted.stderr, /LAST_ADMIN/);
        }
        const view = await adminView(t, admin.token, admin.id);
        assert.equal(view.role, 'admin');
        const second = await staff(t, own, 'admin');
        const ok = await cli('users', 'set-role', '--email', admin.email.toUpperCase(), 'user');
        assert.equal(ok.code, 0, ok.stderr);
        assert.deepEqual(await admins(t, second.token), [String(second.id)]);
        const last = await cli('users', 'delete', '--email', second.email, '--yes');
        assert.notEqual(last.code, 0);
        assert.match(last.stderr, /LAST_ADMIN/);
      } finally {
        await close();
      }
    });

    for (const [what, act] of [
      [
        'demote',
        (by: ReturnType<typeof as>, id: bigint) => by.patch(`/api/admin/users/${id}`, { role: 'user' }),
      ],
      ['disable', (by: ReturnType<typeof as>, id: bigint) => by.post(`/api/admin/users/${id}/disable`, {})],
      ['delete', (by: ReturnType<typeof as>, id: bigint) => by.delete(`/api/admin/users/${id}`)],
    ] as const) {
      test(`two admins who ${what} each other at the same moment leave exactly one admin (5 rounds)`, async () => {
        const { t, own, admin, close } = await soleAdmin();
        try {
          let survivor: SignedIn = admin;
          for (let round = 0; round < 5; round++) {
            const rival = await staff(t, own, 'admin');
            assert.equal((await admins(t, survivor.token)).length, 2);
            const [one, two] = await Promise.all([
              act(as(t, survivor.token), rival.id),
              act(as(t, rival.token), survivor.id),
            ]);
            const statuses = [one.statusCode, two.statusCode];
            assert.equal(
              statuses.filter((s) => s < 300).length,
              1,
              `round ${round}: exactly one succeeds: ${one.statusCode} ${one.body} / ${two.statusCode} ${two.body}`,
            );
            const loser = one.statusCode < 300 ? two : one;
            // Refused by the lock (409), or by the guard when it already read the new role (403/401).
            assert.ok(
              [409, 403, 401].includes(loser.statusCode),
              `round ${round}: ${loser.statusCode} ${loser.body}`,
            );
            if (loser.statusCode === 409) assert.equal(loser.json().error, 'LAST_ADMIN');
            survivor = one.statusCode < 300 ? survivor : rival;
            assert.deepEqual(await admins(t, survivor.token), [String(survivor.id)], `round ${round}`);
          }
        } finally {
          await close();
        }
      });
    }
  });

  describe('the roles claim', () => {
    for (const profile of PROFILES) {
      test(`[${profile}] after PATCH roles, POST /api/session/token gives a JWT whose roles are the list, verified from the JWKS`, async () => {
        const t = oidc[profile];
        const admin = await staff(t, store, 'admin');
        const user = await staff(t, store, 'user');
        const token = async () => {
          const res = await as(t, user.token).post('/api/session/token', { audience: API });
          assert.equal(res.statusCode, 200, res.body);
          const { payload } = await jose.jwtVerify(res.json().accessToken, remoteKeys(t), {
            issuer: t.issuer,
            audience: API,
            typ: 'at+jwt',
          });
          assert.equal(payload.sub, String(user.id));
          return payload;
        };
        assert.deepEqual((await token()).roles, []);
        const roles = ['billing:read', 'editor', 'team_42-lead'];
        const res = await as(t, admin.token).patch(`/api/admin/users/${user.id}`, { roles });
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual((await token()).roles, roles, 'the same session carries the new roles');
        await as(t, admin.token).patch(`/api/admin/users/${user.id}`, { roles: ['viewer'] });
        assert.deepEqual((await token()).roles, ['viewer']);
        // The account's role is not an application role.
        await as(t, admin.token).patch(`/api/admin/users/${user.id}`, { role: 'support', roles: [] });
        assert.deepEqual((await token()).roles, []);
      });
    }
  });

  describe('the audit', () => {
    test('every admin call leaves a row with its type, actor and user; no row holds a password or a token', async () => {
      const t = apps.b;
      const admin = await staff(t, store, 'admin');
      const support = await staff(t, store, 'support');
      const user = await staff(t, store, 'user');
      const by = as(t, admin.token);
      const m = marker();
      const expect = async (status: number, res: Promise<LightMyRequestResponse>) => {
        const done = await res;
        assert.equal(done.statusCode, status, done.body);
        return done;
      };
      await expect(200, by.get(`/api/admin/users?q=${m}`));
      await expect(200, by.get(`/api/admin/users/${user.id}`));
      await expect(200, by.patch(`/api/admin/users/${user.id}`, { name: `Audited ${m}`, roles: ['x'] }));
      await expect(200, by.post(`/api/admin/users/${user.id}/disable`, { reason: 'audit' }));
      await expect(200, by.post(`/api/admin/users/${user.id}/enable`, {}));
      await expect(204, by.delete(`/api/admin/users/${user.id}/sessions`));
      await expect(204, by.delete(`/api/admin/users/${user.id}/mfa`));
      await expect(202, by.post(`/api/admin/users/${user.id}/password-reset`, {}));
      await expect(202, by.post(`/api/admin/users/${user.id}/verification`, {}));
      const invitedEmail = `invited.${m}@example.com`;
      const invited = await expect(
        201,
        by.post('/api/admin/users', { email: invitedEmail, name: 'Invitee' }),
      );
      await expect(202, as(t, support.token).post(`/api/admin/users/${user.id}/password-reset`, {}));
      await expect(204, by.delete(`/api/admin/users/${user.id}`));

      const [reset] = await waitForMails(smtp, user.email, MAIL.reset, 2);
      const [invitation] = await waitForMails(smtp, invitedEmail, /invited/i);
      const mailed = [
        linkToken(reset!, '/reset-password'),
        linkToken(invitation!, '/reset-password'),
        ...mailsTo(smtp, user.email, MAIL.verify).map((mail) => linkToken(mail, '/verify-email')),
      ];

      const database = openTestDatabase(store);
      try {
        const rows = await database.db
          .selectFrom('audit_events')
          .select(['type', 'actor_id', 'user_id', 'address', 'user_agent', 'details', 'created_at'])
          .where('actor_id', 'in', [admin.id, support.id])
          // The admin calls' own records (their sign-ins and the events the calls cause are the audit log's tests').
          .where('type', 'like', 'admin.%')
          .orderBy('id')
          .execute();
        const seen = rows.map((r) => [
          r.type,
          String(r.actor_id),
          r.user_id === null ? null : String(r.user_id),
        ]);
        const a = String(admin.id);
        const u = String(user.id);
        assert.deepEqual(seen, [
          ['admin.users.searched', a, null],
          ['admin.user.viewed', a, u],
          ['admin.user.updated', a, u],
          ['admin.user.disabled', a, u],
          ['admin.user.enabled', a, u],
          ['admin.user.sessions_ended', a, u],
          ['admin.user.mfa_removed', a, u],
          ['admin.user.password_reset_sent', a, u],
          ['admin.user.verification_sent', a, u],
          ['admin.user.invited', a, String(invited.json().id)],
          ['admin.user.password_reset_sent', String(support.id), u],
          ['admin.user.deleted', a, u],
        ]);
        for (const row of rows) {
          assert.ok(row.address, `${row.type}: an address`);
          assert.ok(row.created_at instanceof Date, `${row.type}: when`);
          assert.equal(typeof JSON.parse(row.details), 'object', `${row.type}: details are JSON`);
        }
        // No row at all (not only these) holds a password, a hash, a session token or a mailed token.
        const everything = await database.db.selectFrom('audit_events').selectAll().execute();
        const text = JSON.stringify(everything, (_k, v) => (typeof v === 'bigint' ? String(v) : v));
        const secrets = [admin, support, user].flatMap((s) => [s.password, s.token]);
        assert.equal(leaksSecret(text, [...secrets, ...mailed]), false, text);
      } finally {
        await database.close();
      }
    });
  });
});
