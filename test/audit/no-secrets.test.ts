// Nothing secret is kept by the audit log or by the webhook deliveries (CONTRACT "Administration":
// "never a secret, never a password"), on both stores. A broad flow is driven through HTTP and
// every secret it handles is collected: passwords (right, wrong, changed, reset, set through an
// invitation), session and device tokens, reset, verification and invitation tokens, the TOTP
// secret and recovery codes, the webhook's signing secret, an OpenID Connect client's secret, and
// the password hashes the database held along the way. Then every row of audit_events,
// webhook_deliveries and webhook_events is read from the database and searched, column by column
// and as a whole, for each secret in the forms it could be written in: as is, in any letter case,
// base64, base64url, hex, URL-encoded, and for tokens their SHA-256 (the digest the database keys
// them by). Each secret is checked to be non-empty first, and a positive control shows the search
// finds what is meant to be there.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { DEVICE_COOKIE } from '../../src/sessions/guard.ts';
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/events.ts';
import { type SignedIn, staff } from '../admin/support.ts';
import {
  leaksSecret,
  NO_THROTTLE,
  newUser,
  register,
  sessionToken,
  startApp,
  type TestApp,
} from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { runProcess } from '../helpers/process.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { base32Decode, STEP_MS, totpAt } from '../helpers/totp.ts';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { freshAddress, send } from './support.ts';

const PUBLIC_URL = 'https://id.example.test';
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const ENCRYPTION_KEY = randomBytes(32);
/** The shortest secret searched for: shorter text (a 6-digit code) would be found by chance. */
const SHORTEST = 8;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The forms a secret could be written in, besides as is (compared in any letter case). */
function formsOf(secret: string, kind: 'text' | 'token'): Record<string, string> {
  const bytes = Buffer.from(secret, 'utf8');
  return {
    'as is': secret,
    base64: bytes.toString('base64').replace(/=+$/, ''),
    base64url: bytes.toString('base64url'),
    hex: bytes.toString('hex'),
    'URL-encoded': encodeURIComponent(secret),
    'JSON-escaped': JSON.stringify(secret).slice(1, -1),
    ...(kind === 'token' ? { 'SHA-256': sha256(secret) } : {}),
  };
}

/** A row as text, every value included (ids as digits, times as ISO, bytes as hex). */
const rowText = (row: unknown) =>
  JSON.stringify(row, (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (Buffer.isBuffer(value)) return value.toString('hex');
    return value;
  });

describeEachStore('nothing secret in the audit log or the webhook deliveries', (store: Store) => {
  let smtp: TestSmtp;
  let receiver: WebhookReceiver;
  let t: TestApp;
  let admin: SignedIn;
  let offset = 0;
  const now = () => Date.now() + offset;

  before(async () => {
    smtp = await startSmtp();
    receiver = await startReceiver();
    t = await startApp(
      store,
      'b',
      {
        publicUrl: PUBLIC_URL,
        mail: mailTo(smtp.url),
        throttle: { ...NO_THROTTLE },
        encryptionKey: ENCRYPTION_KEY,
        webhooks: { ...loadConfig({}).webhooks, allowPrivate: true, pollMs: 100 },
      },
      { clock: now },
    );
    admin = await staff(t, store, 'admin');
  });
  after(async () => {
    await t?.close();
    await receiver?.stop();
    await smtp?.close();
  });

  test('a broad flow’s passwords, tokens, TOTP secret and recovery codes, webhook and client secrets and password hashes are in no column of any audit_events, webhook_deliveries or webhook_events row', async () => {
    /** label → secret, and how it is searched for. */
    const secrets = new Map<string, { value: string; kind: 'text' | 'token' }>();
    const keep = (label: string, value: unknown, kind: 'text' | 'token' = 'token') => {
      assert.equal(typeof value, 'string', `${label}: ${String(value)}`);
      assert.ok((value as string).length >= SHORTEST, `${label} is a real secret: "${String(value)}"`);
      secrets.set(label, { value: value as string, kind });
    };
    const database = openTestDatabase(store);
    const hashes = async () => {
      for (const row of await database.db
        .selectFrom('password_credentials')
        .select(['user_id', 'hash'])
        .execute())
        keep(`password hash of user ${row.user_id} (${row.hash.slice(-8)})`, row.hash, 'text');
    };
    const tookCookies = (label: string, res: LightMyRequestResponse) => {
      const token = sessionToken(res.headers['set-cookie']);
      if (token) keep(`${label}: session cookie`, token);
      for (const cookie of ([] as string[]).concat(res.headers['set-cookie'] ?? [])) {
        const device = new RegExp(`^${DEVICE_COOKIE}=([^;]+)`).exec(cookie)?.[1];
        if (device) keep(`${label}: device cookie`, device);
      }
      return token;
    };
    const signin = async (label: string, body: Record<string, string>, status = 200) => {
      const res = await send(t, 'POST', '/api/signin', { body, address: freshAddress('10.63') });
      assert.equal(res.statusCode, status, `${label}: ${res.body}`);
      return tookCookies(label, res);
    };

    try {
      keep('admin password', admin.password, 'text');
      keep('admin session', admin.token);

      // A webhook for every event, with a receiver, so that deliveries exist.
      const hook = await send(t, 'POST', '/api/admin/webhooks', {
        token: admin.token,
        body: { url: receiver.url, events: [...WEBHOOK_EVENT_TYPES] },
      });
      assert.equal(hook.statusCode, 201, hook.body);
      const webhookSecret = hook.json().secret as string;
      assert.match(webhookSecret, /^whsec_[A-Za-z0-9+/]+=*$/);
      keep('webhook secret', webhookSecret);
      keep('webhook secret’s base64 part', webhookSecret.slice('whsec_'.length));
      keep(
        'webhook secret’s key bytes, hex',
        Buffer.from(webhookSecret.slice('whsec_'.length), 'base64').toString('hex'),
      );
      receiver.secret = webhookSecret;

      // Registration, the verification link, sign-ins with cookies and with a token in the body.
      const alice = await register(t, newUser({ password: `Alice-${randomBytes(6).toString('hex')}-pw` }));
      keep('alice password', alice.password, 'text');
      const [verification] = await waitForMails(smtp, alice.email, SUBJECTS.verify);
      const verifyToken = linkToken(verification!, '/verify-email');
      keep('alice verification token', verifyToken);
      assert.equal((await t.post('/api/email/verify', { token: verifyToken })).statusCode, 204);
      const aliceCookie = await signin('alice sign-in', { email: alice.email, password: alice.password });
      assert.ok(aliceCookie);
      const bodyToken = await t.post('/api/sessions', { email: alice.email, password: alice.password });
      assert.equal(bodyToken.statusCode, 201, bodyToken.body);
      const aliceToken = bodyToken.json().token as string;
      keep('alice token from POST /api/sessions', aliceToken);
      await hashes();

      // Wrong passwords, for her account and for an email with no account: passwords all the same.
      const wrong = `Wrong-${randomBytes(6).toString('hex')}-guess`;
      keep('a wrong password', wrong, 'text');
      await signin('wrong password', { email: alice.email, password: wrong }, 401);
      const nobody = `Nobody-${randomBytes(6).toString('hex')}-guess`;
      keep('a password tried for an unknown email', nobody, 'text');
      await signin(
        'unknown email',
        { email: `ghost.${randomBytes(4).toString('hex')}@example.com`, password: nobody },
        401,
      );

      // TOTP: the secret, the recovery codes, sign-ins with a code and with a recovery code.
      const setup = await send(t, 'POST', '/api/mfa/totp', {
        token: aliceToken,
        body: { password: alice.password },
      });
      assert.equal(setup.statusCode, 200, setup.body);
      const { secret, uri } = setup.json() as { secret: string; uri: string };
      keep('TOTP secret', secret);
      keep('TOTP secret bytes, hex', base32Decode(secret).toString('hex'));
      keep('TOTP secret bytes, base64', base32Decode(secret).toString('base64').replace(/=+$/, ''));
      keep('TOTP URI', uri, 'text');
      const confirm = await send(t, 'POST', '/api/mfa/totp/confirm', {
        token: aliceToken,
        body: { code: totpAt(secret, now()) },
      });
      assert.equal(confirm.statusCode, 200, confirm.body);
      const recoveryCodes = confirm.json().recoveryCodes as string[];
      assert.equal(recoveryCodes.length, 10);
      for (const [i, code] of recoveryCodes.entries()) {
        keep(`recovery code ${i + 1}`, code);
        keep(`recovery code ${i + 1} without dashes`, code.replaceAll('-', ''));
      }
      offset += STEP_MS;
      await signin('sign-in with a code', {
        email: alice.email,
        password: alice.password,
        code: totpAt(secret, now()),
      });
      await signin('sign-in with a recovery code', {
        email: alice.email,
        password: alice.password,
        code: recoveryCodes[0]!,
      });
      await signin(
        'a spent recovery code',
        { email: alice.email, password: alice.password, code: recoveryCodes[0]! },
        401,
      );

      // A password change (which ends the other sessions), then a reset through the mailed link.
      const changed = `Changed-${randomBytes(6).toString('hex')}-pw`;
      keep('alice changed password', changed, 'text');
      const put = await send(t, 'PUT', `/api/users/${alice.id}`, {
        token: aliceToken,
        body: { email: alice.email, name: alice.name, password: changed, currentPassword: alice.password },
      });
      assert.equal(put.statusCode, 200, put.body);
      await hashes();
      const forgot = await send(t, 'POST', '/api/password/forgot', {
        body: { email: alice.email },
        address: freshAddress('10.63'),
      });
      assert.equal(forgot.statusCode, 202, forgot.body);
      const [resetMail] = await waitForMails(smtp, alice.email, SUBJECTS.reset);
      const resetToken = linkToken(resetMail!, '/reset-password');
      keep('alice reset token', resetToken);
      const reset = `Reset-${randomBytes(6).toString('hex')}-pw`;
      keep('alice reset password', reset, 'text');
      const resetRes = await t.post('/api/password/reset', { token: resetToken, password: reset });
      assert.equal(resetRes.statusCode, 204, resetRes.body);
      tookCookies('reset', resetRes);
      await hashes();
      const afterReset = await signin('sign-in after the reset', {
        email: alice.email,
        password: reset,
        code: totpAt(secret, now() + STEP_MS),
      });
      assert.ok(afterReset);

      // An email change: a verification link to the new address.
      const newEmail = `moved.${randomBytes(4).toString('hex')}@example.com`;
      const moved = await send(t, 'PUT', `/api/users/${alice.id}`, {
        token: afterReset,
        body: { email: newEmail, name: 'Alice Moved', currentPassword: reset },
      });
      assert.equal(moved.statusCode, 200, moved.body);
      const [newVerification] = await waitForMails(smtp, newEmail, SUBJECTS.verify);
      keep('verification token for the new email', linkToken(newVerification!, '/verify-email'));

      // An invitation, its link, and the password set through it.
      const invitedEmail = `invited.${randomBytes(4).toString('hex')}@example.com`;
      const invite = await send(t, 'POST', '/api/admin/users', {
        token: admin.token,
        body: { email: invitedEmail, name: 'Invited Person' },
      });
      assert.equal(invite.statusCode, 201, invite.body);
      const [invitation] = await waitForMails(smtp, invitedEmail, /invited/i);
      const invitationToken = linkToken(invitation!, '/reset-password');
      keep('invitation token', invitationToken);
      const invitedPassword = `Invited-${randomBytes(6).toString('hex')}-pw`;
      keep('password set through the invitation', invitedPassword, 'text');
      assert.equal(
        (await t.post('/api/password/reset', { token: invitationToken, password: invitedPassword }))
          .statusCode,
        204,
      );
      await hashes();

      // Admin changes, and a second account that signs in, fails, and deletes itself.
      const bob = await register(t, newUser({ password: `Bob-${randomBytes(6).toString('hex')}-pw` }));
      keep('bob password', bob.password, 'text');
      await hashes();
      const bobToken = await signin('bob sign-in', { email: bob.email, password: bob.password });
      assert.ok(bobToken);
      for (const [method, url, body] of [
        ['PATCH', `/api/admin/users/${bob.id}`, { name: 'Bob Renamed', role: 'support', roles: ['viewer'] }],
        ['POST', `/api/admin/users/${bob.id}/disable`, { reason: 'checking the audit' }],
        ['POST', `/api/admin/users/${bob.id}/enable`, {}],
        ['POST', `/api/admin/users/${bob.id}/password-reset`, {}],
      ] as const) {
        const res = await send(t, method, url, { token: admin.token, body });
        assert.ok(res.statusCode < 300, `${method} ${url}: ${res.body}`);
      }
      const [bobReset] = await waitForMails(smtp, bob.email, SUBJECTS.reset);
      keep('bob reset token (admin-sent)', linkToken(bobReset!, '/reset-password'));
      const bobAgain = await signin('bob signs in again', { email: bob.email, password: bob.password });
      assert.ok(bobAgain);
      const gone = await send(t, 'DELETE', `/api/users/${bob.id}`, {
        token: bobAgain,
        body: { currentPassword: bob.password },
      });
      assert.equal(gone.statusCode, 204, gone.body);

      // An OpenID Connect client added by the operator: its secret.
      const added = await runProcess(
        process.execPath,
        [CLI, 'clients', 'add', '--name', 'Secret keeper', '--redirect-uri', 'https://app.example.com/cb'],
        { DATABASE_URL: store.url, ENCRYPTION_KEY: ENCRYPTION_KEY.toString('base64') },
      );
      assert.equal(added.code, 0, added.stderr);
      keep('OIDC client secret', JSON.parse(added.stdout).clientSecret);

      // Deliveries were made (and some sent), so their rows are worth searching.
      await receiver.waitFor(1, (r) => r.type === 'user.deleted');
      await receiver.waitFor(1, (r) => r.type === 'password.changed');

      const audit = await database.db.selectFrom('audit_events').selectAll().execute();
      const deliveries = await database.db.selectFrom('webhook_deliveries').selectAll().execute();
      const subscriptions = await database.db.selectFrom('webhook_events').selectAll().execute();
      assert.ok(audit.length >= 30, `audit rows: ${audit.length}`);
      assert.ok(deliveries.length >= 10, `delivery rows: ${deliveries.length}`);
      assert.equal(subscriptions.length, WEBHOOK_EVENT_TYPES.length);
      const rows = [
        ...audit.map((row) => ({ table: 'audit_events', row: row as Record<string, unknown> })),
        ...deliveries.map((row) => ({ table: 'webhook_deliveries', row: row as Record<string, unknown> })),
        ...subscriptions.map((row) => ({ table: 'webhook_events', row: row as Record<string, unknown> })),
      ];
      /** Each row as a whole and each of its columns, lower-cased. */
      const haystacks = rows.flatMap(({ table, row }) => [
        { where: `${table} row`, text: rowText(row).toLowerCase() },
        ...Object.entries(row).map(([column, value]) => ({
          where: `${table}.${column}`,
          text: (value instanceof Date ? value.toISOString() : String(value)).toLowerCase(),
        })),
      ]);

      // The search finds what is meant to be there: a positive control.
      const everything = haystacks.map((h) => h.text).join('\n');
      assert.ok(everything.includes(alice.email.toLowerCase()), 'a delivery’s payload carries the email');
      assert.ok(everything.includes(newEmail.toLowerCase()), 'email.changed keeps the new address');
      assert.ok(everything.includes('"reason":"credentials"'), 'a failed sign-in’s details are searched');

      const kinds = new Set([...secrets.keys()].map((label) => label.replace(/ \d+.*$/, '')));
      assert.ok(secrets.size >= 40, `secrets collected: ${secrets.size}`);
      for (const kind of [
        'alice password',
        'TOTP secret',
        'recovery code',
        'webhook secret',
        'alice reset token',
      ])
        assert.ok(kinds.has(kind), `${kind} was collected`);
      assert.ok(
        [...secrets.keys()].some((label) => label.startsWith('password hash')),
        'hashes were collected',
      );
      assert.ok(
        [...secrets.keys()].some((label) => label.endsWith('device cookie')),
        'device tokens too',
      );

      const found: string[] = [];
      for (const [label, { value, kind }] of secrets) {
        for (const [form, text] of Object.entries(formsOf(value, kind))) {
          if (text.length < SHORTEST) continue;
          const needle = text.toLowerCase();
          for (const { where, text: haystack } of haystacks)
            if (haystack.includes(needle)) found.push(`${label} (${form}) in ${where}`);
        }
      }
      assert.deepEqual(found, [], 'no secret in any form in any row');
      const passwords = [...secrets].filter(([, s]) => s.kind === 'text').map(([, s]) => s.value);
      const raw = rows.map(({ row }) => rowText(row)).join('\n');
      assert.equal(leaksSecret(raw, passwords), false, 'no password, password field or argon2 hash');
    } finally {
      await database.close();
    }
  });
});
