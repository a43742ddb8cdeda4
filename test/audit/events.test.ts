// The audit log's records, one account event at a time (CONTRACT "Administration", docs/audit.md),
// black-box on both stores: each flow is driven through HTTP from its own client address and with
// its own User-Agent, then the record it left is read back through GET /api/admin/audit and checked
// whole: type, the account it is about, who did it, from where, with which details, and an ISO `at`.
// Sign-ins (success, wrong password, unknown email, throttled, disabled, TOTP, wrong code, passkey),
// sign-out and ended sessions, password change and reset, email change and verification, second
// factors added and removed, registration and deletion, admin changes and a refused admin call, a
// provider's sign-in, link and unlink, and the operator's CLI (role, client, keys).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../src/config.ts';
import { type SignedIn, staff } from '../admin/support.ts';
import { NO_THROTTLE, newUser, register, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { SoftAuthenticator } from '../helpers/passkey.ts';
import { runProcess } from '../helpers/process.ts';
import { linkToken, startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';
import { Browser, listeningUsher, PROVIDER, providerPerson, type Usher } from '../oauth/support.ts';
import {
  type AuditRecord,
  assertRecord,
  auditLog,
  emailDigest,
  eventually,
  freshAddress,
  freshAgent,
  ISO,
  onlyRecord,
  RECORD_KEYS,
  recordsOf,
  send,
} from './support.ts';

const PUBLIC_URL = 'https://id.example.test';
const ORIGIN = 'https://id.example.test';
const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const ENCRYPTION_KEY = randomBytes(32);
/** The throttle of the app that shows throttled sign-ins: the third failure of a pair is refused. */
const LOW_THROTTLE = { ...NO_THROTTLE, perAccountAddress: 2 };

/** The details of a tallied signin.throttled record. */
const TALLY_KEYS = ['count', 'firstAt', 'lastAt', 'method', 'retryAfterSeconds'];

/** Every type docs/audit.md lists. */
const DOCUMENTED_TYPES = new Set([
  'signin.succeeded',
  'signin.failed',
  'signin.throttled',
  'mfa.used',
  'signout',
  'session.ended',
  'password.changed',
  'password.reset',
  'email.changed',
  'email.verified',
  'mfa.totp_added',
  'mfa.totp_removed',
  'mfa.passkey_added',
  'mfa.passkey_removed',
  'identity.linked',
  'identity.unlinked',
  'user.created',
  'user.updated',
  'user.role_changed',
  'user.deleted',
  'oidc.client.added',
  'oidc.client.removed',
  'oidc.client.secret_rotated',
  'oidc.key.rotated',
  'oidc.key.retired',
  'admin.users.searched',
  'admin.user.viewed',
  'admin.user.updated',
  'admin.user.disabled',
  'admin.user.enabled',
  'admin.user.deleted',
  'admin.user.sessions_ended',
  'admin.user.mfa_removed',
  'admin.user.password_reset_sent',
  'admin.user.verification_sent',
  'admin.user.invited',
  'admin.audit.viewed',
  'admin.webhook.created',
  'admin.webhook.deleted',
  'admin.webhook.viewed',
  'admin.webhooks.listed',
  'admin.webhook.deliveries_viewed',
  'admin.webhook.delivery_retried',
  'admin.refused',
]);

describeEachStore(
  'audit log: every account event is recorded with its actor, address and details',
  (store: Store) => {
    let smtp: TestSmtp;
    let t: TestApp;
    /** The same database behind a low sign-in throttle. */
    let low: TestApp;
    let admin: SignedIn;
    /** Added to the apps' clock: TOTP codes of the next step, without waiting for it. */
    let offset = 0;
    const now = () => Date.now() + offset;

    before(async () => {
      smtp = await startSmtp();
      const overrides: Partial<Config> = {
        publicUrl: PUBLIC_URL,
        mail: mailTo(smtp.url),
        throttle: { ...NO_THROTTLE },
        encryptionKey: ENCRYPTION_KEY,
      };
      t = await startApp(store, 'b', overrides, { clock: now });
      low = await startApp(store, 'a', { ...overrides, throttle: LOW_THROTTLE }, { clock: now });
      admin = await staff(t, store, 'admin');
    });
    after(async () => {
      await t?.close();
      await low?.close();
      await smtp?.close();
    });

    /** A password sign-in from `address` with `userAgent`; the answer and its session token. */
    async function signin(
      app: TestApp,
      body: { email: string; password: string; code?: string },
      address: string,
      userAgent: string,
    ) {
      const { email, password, code } = body;
      const res = await send(app, 'POST', '/api/signin', {
        body: code === undefined ? { email, password } : { email, password, code },
        address,
        userAgent,
      });
      return { res, token: sessionToken(res.headers['set-cookie']) };
    }

    /** A registered user signed in from `address`: their token and the id of that session. */
    async function signedIn(address = freshAddress(), userAgent = freshAgent('sign-in')) {
      const user = await register(t, newUser());
      const { res, token } = await signin(t, user, address, userAgent);
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(token);
      return { ...user, token, sessionId: await currentSessionId(token) };
    }

    async function currentSessionId(token: string): Promise<string> {
      const res = await send(t, 'GET', '/api/sessions', { token });
      assert.equal(res.statusCode, 200, res.body);
      const current = (res.json() as { id: string; current: boolean }[]).find((s) => s.current);
      assert.ok(current, 'the session is listed');
      return current.id;
    }

    const one = (userId: bigint, type: string) => onlyRecord(t, admin.token, userId, type);
    const all = (userId: bigint, type: string) => recordsOf(t, admin.token, userId, type);

    test('registration: user.created about the new account, by it, from its address and User-Agent, via registration', async () => {
      const address = freshAddress();
      const userAgent = freshAgent('registration');
      const body = newUser();
      const res = await send(t, 'POST', '/api/users', { body, address, userAgent });
      assert.equal(res.statusCode, 201, res.body);
      const id = BigInt(res.json().id);
      assertRecord(await one(id, 'user.created'), {
        type: 'user.created',
        userId: id,
        actorId: id,
        address,
        userAgent,
        details: { via: 'registration' },
      });
    });

    test('a request with no address of its own is recorded from 127.0.0.1; a very long User-Agent is kept to 256 characters', async () => {
      const userAgent = `Long/${'x'.repeat(2000)}`;
      const res = await t.inject({
        method: 'POST',
        url: '/api/users',
        headers: { 'content-type': 'application/json', 'user-agent': userAgent },
        payload: JSON.stringify(newUser()),
      });
      assert.equal(res.statusCode, 201, res.body);
      const record = await one(BigInt(res.json().id), 'user.created');
      assert.equal(record.address, '127.0.0.1');
      assert.equal(record.userAgent, userAgent.slice(0, 256));
    });

    test('a password sign-in: signin.succeeded by the user, with method password and the id of the session it granted', async () => {
      const address = freshAddress();
      const userAgent = freshAgent('sign-in');
      const user = await signedIn(address, userAgent);
      assertRecord(await one(user.id, 'signin.succeeded'), {
        type: 'signin.succeeded',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { method: 'password', sessionId: user.sessionId },
      });
    });

    test('a wrong password: signin.failed (credentials) about the account, by no one, from the address that tried', async () => {
      const user = await register(t, newUser());
      const address = freshAddress();
      const userAgent = freshAgent('wrong password');
      const { res } = await signin(
        t,
        { email: user.email, password: 'not-the-password-1' },
        address,
        userAgent,
      );
      assert.equal(res.statusCode, 401, res.body);
      assertRecord(await one(user.id, 'signin.failed'), {
        type: 'signin.failed',
        userId: user.id,
        actorId: null,
        address,
        userAgent,
        details: { method: 'password', reason: 'credentials' },
      });
    });

    test('an unknown email: signin.failed about no account, keeping only the SHA-256 of the trimmed lower-cased email, which is nowhere in clear', async () => {
      const local = `Nobody.${randomBytes(5).toString('hex')}`;
      const typed = `  ${local}@Example.COM `;
      const folded = typed.trim().toLowerCase();
      const address = freshAddress();
      const userAgent = freshAgent('unknown email');
      const { res } = await signin(t, { email: typed, password: 'whatever-it-is-1' }, address, userAgent);
      assert.equal(res.statusCode, 401, res.body);
      const digest = emailDigest(typed);
      assert.match(digest, /^[0-9a-f]{64}$/);
      const record = (await auditLog(t, admin.token, 'type=signin.failed')).find(
        (r) => r.details.emailDigest === digest,
      );
      assert.ok(record, 'a signin.failed record with the digest');
      assertRecord(record, {
        type: 'signin.failed',
        userId: null,
        actorId: null,
        address,
        userAgent,
        details: { method: 'password', reason: 'credentials', emailDigest: digest },
      });
      const text = JSON.stringify(record).toLowerCase();
      assert.ok(!text.includes(folded), `the email is not in the record: ${text}`);
      assert.ok(!text.includes(local.toLowerCase()), `nor its local part: ${text}`);
      assert.ok(!text.includes(encodeURIComponent(folded)), `nor URL-encoded: ${text}`);
      assert.ok(!text.includes(Buffer.from(folded).toString('base64').toLowerCase()), 'nor in base64');
    });

    test('a throttled sign-in: signin.throttled about the account, by no one, with method, retryAfterSeconds and its tally; for an unknown email about the network, with no email at all', async () => {
      const user = await register(t, newUser());
      const address = freshAddress();
      const userAgent = freshAgent('throttled');
      const wrong = { email: user.email, password: 'not-the-password-1' };
      for (let i = 0; i < LOW_THROTTLE.perAccountAddress; i++)
        assert.equal((await signin(low, wrong, address, userAgent)).res.statusCode, 401, `failure ${i + 1}`);
      const { res } = await signin(low, { email: user.email, password: user.password }, address, userAgent);
      assert.equal(res.statusCode, 429, res.body);
      const record = await one(user.id, 'signin.throttled');
      assertRecord(record, { type: 'signin.throttled', userId: user.id, actorId: null, address, userAgent });
      assert.deepEqual(Object.keys(record.details).sort(), TALLY_KEYS);
      assert.equal(record.details.method, 'password');
      assert.equal(record.details.count, 1);
      assert.equal(record.details.firstAt, record.at);
      assert.equal(record.details.lastAt, record.at);
      assert.ok(
        Number.isInteger(record.details.retryAfterSeconds) &&
          (record.details.retryAfterSeconds as number) > 0,
        JSON.stringify(record.details),
      );
      assert.equal(
        (await all(user.id, 'signin.failed')).length,
        LOW_THROTTLE.perAccountAddress,
        'each judged failure has its own signin.failed',
      );

      const unknown = `throttled.${randomBytes(5).toString('hex')}@example.com`;
      for (let i = 0; i < LOW_THROTTLE.perAccountAddress; i++)
        await signin(low, { email: unknown, password: 'whatever-it-is-1' }, address, userAgent);
      const refused = await signin(low, { email: unknown, password: 'whatever-it-is-1' }, address, userAgent);
      assert.equal(refused.res.statusCode, 429, refused.res.body);
      // Not by the email's digest: an attacker would make a new one per attempt.
      const throttled = (await auditLog(t, admin.token, 'type=signin.throttled')).find(
        (r) => r.userId === null && r.address === address,
      );
      assert.ok(throttled, 'a signin.throttled record about no account, from the address');
      assertRecord(throttled, { type: 'signin.throttled', userId: null, actorId: null, address, userAgent });
      assert.deepEqual(Object.keys(throttled.details).sort(), TALLY_KEYS);
      assert.equal(throttled.details.count, 1);
      assert.ok(!JSON.stringify(throttled).toLowerCase().includes(unknown), 'the email is not in clear');
    });

    test('disabling and enabling: admin.user.disabled/enabled by the admin with the reason, the sessions it ended, and the right password then signin.failed (disabled)', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('admin disables');
      const reason = `audit ${randomBytes(3).toString('hex')}`;
      const disabled = await send(t, 'POST', `/api/admin/users/${user.id}/disable`, {
        token: admin.token,
        body: { reason },
        address,
        userAgent,
      });
      assert.equal(disabled.statusCode, 200, disabled.body);
      assertRecord(await one(user.id, 'admin.user.disabled'), {
        type: 'admin.user.disabled',
        userId: user.id,
        actorId: admin.id,
        address,
        userAgent,
        details: { reason },
      });
      assertRecord(await one(user.id, 'session.ended'), {
        type: 'session.ended',
        userId: user.id,
        actorId: admin.id,
        address,
        userAgent,
        details: { sessionIds: [user.sessionId], reason: 'disabled' },
      });

      const from = freshAddress();
      const agent = freshAgent('disabled sign-in');
      const { res } = await signin(t, user, from, agent);
      assert.equal(res.statusCode, 403, res.body);
      assertRecord(await one(user.id, 'signin.failed'), {
        type: 'signin.failed',
        userId: user.id,
        actorId: null,
        address: from,
        userAgent: agent,
        details: { method: 'password', reason: 'disabled' },
      });

      const enabled = await send(t, 'POST', `/api/admin/users/${user.id}/enable`, {
        token: admin.token,
        body: {},
        address,
        userAgent,
      });
      assert.equal(enabled.statusCode, 200, enabled.body);
      assertRecord(await one(user.id, 'admin.user.enabled'), {
        type: 'admin.user.enabled',
        userId: user.id,
        actorId: admin.id,
        address,
        userAgent,
        details: {},
      });
    });

    test('an admin changing the role: user.role_changed from and to, via admin, by the admin; marking the email verified: email.verified via admin', async () => {
      const user = await register(t, newUser());
      const address = freshAddress();
      const userAgent = freshAgent('admin patches');
      const patch = (body: unknown) =>
        send(t, 'PATCH', `/api/admin/users/${user.id}`, { token: admin.token, body, address, userAgent });
      const res = await patch({ role: 'support' });
      assert.equal(res.statusCode, 200, res.body);
      assertRecord(await one(user.id, 'user.role_changed'), {
        type: 'user.role_changed',
        userId: user.id,
        actorId: admin.id,
        address,
        userAgent,
        details: { from: 'user', to: 'support', via: 'admin' },
      });
      const call = await one(user.id, 'admin.user.updated');
      assertRecord(call, {
        type: 'admin.user.updated',
        userId: user.id,
        actorId: admin.id,
        address,
        userAgent,
      });
      assert.deepEqual(call.details.changed, ['role']);

      assert.equal((await patch({ emailVerified: true })).statusCode, 200);
      assertRecord(await one(user.id, 'email.verified'), {
        type: 'email.verified',
        userId: user.id,
        actorId: admin.id,
        address,
        userAgent,
        details: { via: 'admin' },
      });
    });

    test('an admin ending a user’s sessions and changing their email: admin.user.sessions_ended with the count, admin.user.updated listing email, by the admin', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('admin ends sessions');
      const by = { token: admin.token, address, userAgent };
      const ended = await send(t, 'DELETE', `/api/admin/users/${user.id}/sessions`, by);
      assert.equal(ended.statusCode, 204, ended.body);
      const expected = { userId: user.id, actorId: admin.id, address, userAgent };
      const call = await one(user.id, 'admin.user.sessions_ended');
      assertRecord(call, { ...expected, type: 'admin.user.sessions_ended' });
      assert.equal(call.details.sessions, 1);
      const to = `admin.moved.${randomBytes(4).toString('hex')}@example.com`;
      const patched = await send(t, 'PATCH', `/api/admin/users/${user.id}`, { ...by, body: { email: to } });
      assert.equal(patched.statusCode, 200, patched.body);
      const updated = await one(user.id, 'admin.user.updated');
      assertRecord(updated, { ...expected, type: 'admin.user.updated' });
      assert.deepEqual(updated.details.changed, ['email']);
    });

    test('an admin changing the email and the name together: admin.user.updated lists both', async () => {
      const user = await register(t, newUser());
      const to = `admin.both.${randomBytes(4).toString('hex')}@example.com`;
      const res = await send(t, 'PATCH', `/api/admin/users/${user.id}`, {
        token: admin.token,
        body: { email: to, name: 'Renamed By Admin' },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().name, 'Renamed By Admin', 'the name did change');
      const changed = (await one(user.id, 'admin.user.updated')).details.changed as string[];
      assert.deepEqual([...changed].sort(), ['email', 'name']);
    });

    test('an admin changing the email: email.changed with from and to, by the admin', async () => {
      const user = await register(t, newUser());
      const to = `admin.to.${randomBytes(4).toString('hex')}@example.com`;
      const res = await send(t, 'PATCH', `/api/admin/users/${user.id}`, {
        token: admin.token,
        body: { email: to },
      });
      assert.equal(res.statusCode, 200, res.body);
      const record = await one(user.id, 'email.changed');
      assert.deepEqual(record.details, { from: user.email, to, via: 'admin' });
      assert.equal(record.actorId, Number(admin.id));
    });

    test('an admin ending a user’s sessions: session.ended with their ids, as disabling the account records', async () => {
      const user = await signedIn();
      const ended = await send(t, 'DELETE', `/api/admin/users/${user.id}/sessions`, { token: admin.token });
      assert.equal(ended.statusCode, 204, ended.body);
      const record = await one(user.id, 'session.ended');
      assert.deepEqual(record.details.sessionIds, [user.sessionId]);
      assert.equal(record.actorId, Number(admin.id));
    });

    test('a refused admin call: admin.refused by the caller (a plain user, or support where admin is needed), with the method, route, params and status', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('refused');
      const res = await send(t, 'GET', '/api/admin/users', { token: user.token, address, userAgent });
      assert.equal(res.statusCode, 403, res.body);
      const refused = await eventually(t, admin.token, 'admin.refused', (r) => r.actorId === Number(user.id));
      assertRecord(refused, {
        type: 'admin.refused',
        userId: null,
        actorId: user.id,
        address,
        userAgent,
        details: { method: 'GET', route: '/api/admin/users', params: {}, status: 403 },
      });

      const support = await staff(t, store, 'support');
      const target = await register(t, newUser());
      const patch = await send(t, 'PATCH', `/api/admin/users/${target.id}`, {
        token: support.token,
        body: { name: 'Not allowed' },
        address,
        userAgent,
      });
      assert.equal(patch.statusCode, 403, patch.body);
      const byStaff = await eventually(
        t,
        admin.token,
        'admin.refused',
        (r) => r.actorId === Number(support.id),
      );
      assertRecord(byStaff, {
        type: 'admin.refused',
        userId: null,
        actorId: support.id,
        address,
        userAgent,
        details: {
          method: 'PATCH',
          route: '/api/admin/users/:id',
          params: { id: String(target.id) },
          status: 403,
        },
      });
    });

    test('TOTP: mfa.totp_added; the first step alone leaves nothing; a wrong code signin.failed (second-factor); a code mfa.used and signin.succeeded with factor totp; a recovery code the same with recovery_code; turning off mfa.totp_removed', async () => {
      const address = freshAddress();
      const userAgent = freshAgent('totp');
      const user = await signedIn(address, userAgent);
      const me = { token: user.token, address, userAgent };
      const setup = await send(t, 'POST', '/api/mfa/totp', { ...me, body: { password: user.password } });
      assert.equal(setup.statusCode, 200, setup.body);
      const { secret } = setup.json() as { secret: string };
      const confirmed = await send(t, 'POST', '/api/mfa/totp/confirm', {
        ...me,
        body: { code: totpAt(secret, now()) },
      });
      assert.equal(confirmed.statusCode, 200, confirmed.body);
      const { recoveryCodes } = confirmed.json() as { recoveryCodes: string[] };
      assertRecord(await one(user.id, 'mfa.totp_added'), {
        type: 'mfa.totp_added',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { recoveryCodes: recoveryCodes.length },
      });
      offset += STEP_MS;

      const firstStep = await signin(t, user, address, userAgent);
      assert.equal(firstStep.res.statusCode, 401);
      assert.equal(firstStep.res.headers['usher-second-factor'], 'totp');
      assert.deepEqual(await all(user.id, 'signin.failed'), [], 'asking for the code is not a failure');

      const wrong = await signin(t, { ...user, code: wrongCodeAt(secret, now()) }, address, userAgent);
      assert.equal(wrong.res.statusCode, 401);
      assertRecord(await one(user.id, 'signin.failed'), {
        type: 'signin.failed',
        userId: user.id,
        actorId: null,
        address,
        userAgent,
        details: { method: 'password', reason: 'second-factor' },
      });

      const byCode = await signin(t, { ...user, code: totpAt(secret, now()) }, address, userAgent);
      assert.equal(byCode.res.statusCode, 200, byCode.res.body);
      const codeSession = await currentSessionId(byCode.token!);
      assertRecord(await one(user.id, 'mfa.used'), {
        type: 'mfa.used',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { factor: 'totp', method: 'password' },
      });
      const succeeded = (await all(user.id, 'signin.succeeded')).find(
        (r) => r.details.sessionId === codeSession,
      );
      assert.ok(succeeded, 'the sign-in with the code is recorded');
      assertRecord(succeeded, {
        type: 'signin.succeeded',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { method: 'password', factor: 'totp', sessionId: codeSession },
      });

      const byRecovery = await signin(t, { ...user, code: recoveryCodes[0]! }, address, userAgent);
      assert.equal(byRecovery.res.statusCode, 200, byRecovery.res.body);
      const recoverySession = await currentSessionId(byRecovery.token!);
      const used = await all(user.id, 'mfa.used');
      assert.equal(used.length, 2);
      assert.deepEqual(used[0]!.details, { factor: 'recovery_code', method: 'password' }, 'newest first');
      const byRecoveryRecord = (await all(user.id, 'signin.succeeded')).find(
        (r) => r.details.sessionId === recoverySession,
      );
      assert.deepEqual(byRecoveryRecord?.details, {
        method: 'password',
        factor: 'recovery_code',
        sessionId: recoverySession,
      });

      const off = await send(t, 'DELETE', '/api/mfa/totp', { ...me, body: { password: user.password } });
      assert.equal(off.statusCode, 204, off.body);
      assertRecord(await one(user.id, 'mfa.totp_removed'), {
        type: 'mfa.totp_removed',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { via: 'self' },
      });
    });

    test('sign-out: signout about the user with the session ended, from its address and User-Agent', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('sign-out');
      const res = await send(t, 'POST', '/api/signout', { token: user.token, address, userAgent });
      assert.equal(res.statusCode, 204, res.body);
      const record = await one(user.id, 'signout');
      assertRecord(record, {
        type: 'signout',
        userId: user.id,
        actorId: record.actorId,
        address,
        userAgent,
        details: { sessionIds: [user.sessionId], reason: 'signout' },
      });
    });

    test('sign-out: the signout record names the user who signed out as its actor (as ending one’s own session by id does)', async () => {
      const user = await signedIn();
      assert.equal((await send(t, 'POST', '/api/signout', { token: user.token })).statusCode, 204);
      assert.equal((await one(user.id, 'signout')).actorId, Number(user.id), 'POST /api/signout');

      const other = await signedIn();
      const byId = await send(t, 'DELETE', `/api/sessions/${other.sessionId}`, { token: other.token });
      assert.equal(byId.statusCode, 204, byId.body);
      assert.equal((await one(other.id, 'signout')).actorId, Number(other.id), 'DELETE its own session');
    });

    test('ending one’s own session by id is a signout by the user; ending another session, or all others, is session.ended (revoked) with their ids', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('sessions');
      const second = await signin(t, user, freshAddress(), freshAgent('second'));
      const third = await signin(t, user, freshAddress(), freshAgent('third'));
      const fourth = await signin(t, user, freshAddress(), freshAgent('fourth'));
      const [secondId, thirdId, fourthId] = await Promise.all(
        [second, third, fourth].map((s) => currentSessionId(s.token!)),
      );
      const me = { token: user.token, address, userAgent };

      assert.equal((await send(t, 'DELETE', `/api/sessions/${secondId}`, me)).statusCode, 204);
      assertRecord(await one(user.id, 'session.ended'), {
        type: 'session.ended',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { sessionIds: [secondId], reason: 'revoked' },
      });

      assert.equal((await send(t, 'DELETE', '/api/sessions', me)).statusCode, 204);
      const [others] = await all(user.id, 'session.ended');
      assertRecord(others!, { type: 'session.ended', userId: user.id, actorId: user.id, address, userAgent });
      assert.equal(others!.details.reason, 'revoked');
      assert.deepEqual([...(others!.details.sessionIds as string[])].sort(), [thirdId, fourthId].sort());

      const own = await send(t, 'DELETE', `/api/sessions/${user.sessionId}`, {
        token: user.token,
        address,
        userAgent,
      });
      assert.equal(own.statusCode, 204, own.body);
      assertRecord(await one(user.id, 'signout'), {
        type: 'signout',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { sessionIds: [user.sessionId], reason: 'signout' },
      });
    });

    test('a password change: password.changed via change by the user, and session.ended (password_changed) for the other sessions', async () => {
      const user = await signedIn();
      const other = await signin(t, user, freshAddress(), freshAgent('other device'));
      const otherId = await currentSessionId(other.token!);
      const address = freshAddress();
      const userAgent = freshAgent('password change');
      const res = await send(t, 'PUT', `/api/users/${user.id}`, {
        token: user.token,
        address,
        userAgent,
        body: {
          email: user.email,
          name: user.name,
          password: 'a new passphrase 1',
          currentPassword: user.password,
        },
      });
      assert.equal(res.statusCode, 200, res.body);
      assertRecord(await one(user.id, 'password.changed'), {
        type: 'password.changed',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { via: 'change' },
      });
      assertRecord(await one(user.id, 'session.ended'), {
        type: 'session.ended',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { sessionIds: [otherId], reason: 'password_changed' },
      });
    });

    test('an email change: email.changed with from and to, and user.updated listing email; a new name alone: user.updated listing name', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('email change');
      const to = `changed.${randomBytes(4).toString('hex')}@example.com`;
      const res = await send(t, 'PUT', `/api/users/${user.id}`, {
        token: user.token,
        address,
        userAgent,
        body: { email: to, name: user.name, currentPassword: user.password },
      });
      assert.equal(res.statusCode, 200, res.body);
      const expected = { userId: user.id, actorId: user.id, address, userAgent };
      assertRecord(await one(user.id, 'email.changed'), {
        ...expected,
        type: 'email.changed',
        details: { from: user.email, to },
      });
      assertRecord(await one(user.id, 'user.updated'), {
        ...expected,
        type: 'user.updated',
        details: { changed: ['email'] },
      });
      const renamed = await send(t, 'PUT', `/api/users/${user.id}`, {
        token: user.token,
        address,
        userAgent,
        body: { email: to, name: 'Renamed For Audit' },
      });
      assert.equal(renamed.statusCode, 200, renamed.body);
      const [latest] = await all(user.id, 'user.updated');
      assertRecord(latest!, { ...expected, type: 'user.updated', details: { changed: ['name'] } });
    });

    test('email verification through the mailed link: email.verified via link, by the account, from the address that followed it', async () => {
      const user = await register(t, newUser());
      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.verify);
      const address = freshAddress();
      const userAgent = freshAgent('verify link');
      const res = await send(t, 'POST', '/api/email/verify', {
        body: { token: linkToken(mail!, '/verify-email') },
        address,
        userAgent,
      });
      assert.equal(res.statusCode, 204, res.body);
      assertRecord(await one(user.id, 'email.verified'), {
        type: 'email.verified',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { via: 'link' },
      });
    });

    test('a password reset through the mailed link: password.reset and email.verified via reset, by the account’s owner, from the link’s address; its sessions ended (password_reset)', async () => {
      const user = await signedIn();
      const asked = await send(t, 'POST', '/api/password/forgot', {
        body: { email: user.email },
        address: freshAddress(),
      });
      assert.equal(asked.statusCode, 202, asked.body);
      const [mail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
      const address = freshAddress();
      const userAgent = freshAgent('reset link');
      const res = await send(t, 'POST', '/api/password/reset', {
        body: { token: linkToken(mail!, '/reset-password'), password: 'a reset passphrase 1' },
        address,
        userAgent,
      });
      assert.equal(res.statusCode, 204, res.body);
      const expected = { userId: user.id, actorId: user.id, address, userAgent };
      assertRecord(await one(user.id, 'password.reset'), {
        ...expected,
        type: 'password.reset',
        details: { via: 'reset' },
      });
      assertRecord(await one(user.id, 'email.verified'), {
        ...expected,
        type: 'email.verified',
        details: { via: 'reset' },
      });
      // Its actor is not asserted: the reset names the owner on password.reset and email.verified
      // only, and leaves the ended sessions' record to the request's actor (no one signed in).
      const ended = await one(user.id, 'session.ended');
      assertRecord(ended, {
        ...expected,
        actorId: ended.actorId,
        type: 'session.ended',
        details: { sessionIds: [user.sessionId], reason: 'password_reset' },
      });
    });

    test('passkeys: registering one is mfa.passkey_added and removing it mfa.passkey_removed (its id and name), by the user; signing in with it is signin.succeeded with method passkey', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('passkeys');
      const me = { token: user.token, address, userAgent };
      const authenticator = new SoftAuthenticator(ORIGIN);
      const options = await send(t, 'POST', '/api/passkeys/register/options', { ...me, body: {} });
      assert.equal(options.statusCode, 200, options.body);
      const made = await send(t, 'POST', '/api/passkeys/register', {
        ...me,
        body: { credential: authenticator.create(options.json()) },
      });
      assert.equal(made.statusCode, 201, made.body);
      const passkey = made.json() as { id: string; name: string };
      const expected = { userId: user.id, actorId: user.id, address, userAgent };
      assertRecord(await one(user.id, 'mfa.passkey_added'), {
        ...expected,
        type: 'mfa.passkey_added',
        details: { passkeyId: passkey.id, name: passkey.name },
      });

      const from = freshAddress();
      const agent = freshAgent('passkey sign-in');
      const signinOptions = await send(t, 'POST', '/api/signin/passkey/options', { body: {}, address: from });
      assert.equal(signinOptions.statusCode, 200, signinOptions.body);
      const byPasskey = await send(t, 'POST', '/api/signin/passkey', {
        body: { credential: authenticator.get(signinOptions.json()) },
        address: from,
        userAgent: agent,
      });
      assert.equal(byPasskey.statusCode, 200, byPasskey.body);
      const sessionId = await currentSessionId(sessionToken(byPasskey.headers['set-cookie'])!);
      const [latest] = await all(user.id, 'signin.succeeded');
      assertRecord(latest!, {
        type: 'signin.succeeded',
        userId: user.id,
        actorId: user.id,
        address: from,
        userAgent: agent,
        details: { method: 'passkey', sessionId },
      });

      const removed = await send(t, 'DELETE', `/api/passkeys/${passkey.id}`, me);
      assert.equal(removed.statusCode, 204, removed.body);
      assertRecord(await one(user.id, 'mfa.passkey_removed'), {
        ...expected,
        type: 'mfa.passkey_removed',
        details: { passkeyId: passkey.id, name: passkey.name },
      });
    });

    test('deleting one’s account: user.deleted via self by the user, kept after the account is gone', async () => {
      const user = await signedIn();
      const address = freshAddress();
      const userAgent = freshAgent('delete account');
      const res = await send(t, 'DELETE', `/api/users/${user.id}`, { token: user.token, address, userAgent });
      assert.equal(res.statusCode, 204, res.body);
      assertRecord(await one(user.id, 'user.deleted'), {
        type: 'user.deleted',
        userId: user.id,
        actorId: user.id,
        address,
        userAgent,
        details: { via: 'self', email: user.email },
      });
    });

    describe('the operator’s CLI', () => {
      const env = () => ({ DATABASE_URL: store.url, ENCRYPTION_KEY: ENCRYPTION_KEY.toString('base64') });
      const cli = (...args: string[]) => runProcess(process.execPath, [CLI, ...args], env());
      const operator = { actorId: null, address: null, userAgent: 'usher CLI' };

      test('users set-role: user.role_changed via cli, as the operator (no actor, no address, User-Agent "usher CLI")', async () => {
        const user = await register(t, newUser());
        const run = await cli('users', 'set-role', '--email', user.email, 'support');
        assert.equal(run.code, 0, run.stderr);
        assertRecord(await one(user.id, 'user.role_changed'), {
          ...operator,
          type: 'user.role_changed',
          userId: user.id,
          details: { from: 'user', to: 'support', via: 'cli' },
        });
      });

      test('clients add and keys rotate: oidc.client.added (its id and settings, never its secret) and oidc.key.rotated (the new kids), as the operator', async () => {
        const added = await cli(
          'clients',
          'add',
          '--name',
          'Audited app',
          '--redirect-uri',
          'https://app.example.com/cb',
        );
        assert.equal(added.code, 0, added.stderr);
        const { clientId, clientSecret } = JSON.parse(added.stdout) as {
          clientId: string;
          clientSecret: string;
        };
        assert.ok(clientSecret, 'a confidential client has a secret');
        const client = (await auditLog(t, admin.token, 'type=oidc.client.added')).find(
          (r) => r.details.clientId === clientId,
        );
        assert.ok(client, 'the record of the client');
        assertRecord(client, { ...operator, type: 'oidc.client.added', userId: null });
        assert.equal(client.details.name, 'Audited app');
        assert.deepEqual(client.details.redirectUris, ['https://app.example.com/cb']);
        assert.ok(!JSON.stringify(client).includes(clientSecret), 'the secret is not in the record');

        const rotated = await cli('keys', 'rotate');
        assert.equal(rotated.code, 0, rotated.stderr);
        const kids = [...rotated.stdout.matchAll(/new \S+ key (\S+):/g)].map((m) => m[1]!);
        assert.ok(kids.length > 0, rotated.stdout);
        const [keys] = await auditLog(t, admin.token, 'type=oidc.key.rotated');
        assert.ok(keys, 'a oidc.key.rotated record');
        assertRecord(keys, { ...operator, type: 'oidc.key.rotated', userId: null });
        assert.deepEqual([...(keys.details.kids as string[])].sort(), [...kids].sort());
      });
    });

    test('every record in the log, whatever flows ran before, has exactly the record’s fields, an ISO `at` and a type docs/audit.md lists', async () => {
      // A flow of its own, so there is something to read whatever order the tests ran in.
      const user = await signedIn();
      await signin(
        t,
        { email: user.email, password: 'not-the-password-1' },
        freshAddress(),
        freshAgent('wrong'),
      );
      assert.equal((await send(t, 'POST', '/api/signout', { token: user.token })).statusCode, 204);
      const seen: AuditRecord[] = [];
      for (let page = 1; ; page++) {
        const res = await send(t, 'GET', `/api/admin/audit?size=100&page=${page}`, { token: admin.token });
        assert.equal(res.statusCode, 200, res.body);
        const records = res.json() as AuditRecord[];
        seen.push(...records);
        if (records.length < 100) break;
      }
      const types = new Set(seen.map((r) => r.type));
      for (const type of [
        'user.created',
        'signin.succeeded',
        'signin.failed',
        'signout',
        'admin.audit.viewed',
      ])
        assert.ok(types.has(type), `a ${type} record: ${[...types]}`);
      for (const record of seen) {
        assert.deepEqual(Object.keys(record).sort(), RECORD_KEYS, JSON.stringify(record));
        assert.match(record.at, ISO, JSON.stringify(record));
        assert.ok(Math.abs(Date.parse(record.at) - now()) < 3600_000, `a time of this run: ${record.at}`);
        assert.ok(DOCUMENTED_TYPES.has(record.type), `${record.type} is documented`);
      }
    });
  },
);

describeEachStore('audit log: provider identities', (store: Store) => {
  let provider: TestOidcProvider;
  let usher: Usher;
  let admin: SignedIn;
  before(async () => {
    provider = await startOidcProvider();
    usher = await listeningUsher(store, 'b', provider);
    admin = await staff(usher.t, store, 'admin');
  });
  after(async () => {
    await usher?.t.close();
    await provider?.close();
  });

  test('a provider’s first sign-in: user.created via oauth with the provider, identity.linked and signin.succeeded (oauth), by the new account', async () => {
    const person = providerPerson(provider);
    const browser = new Browser();
    const flow = await browser.flow(usher, provider, { login: person.login });
    assert.equal(flow.callback.status, 303);
    assert.ok(flow.session, 'signed in');
    const me = await send(usher.t, 'GET', '/api/account', { token: flow.session });
    assert.equal(me.statusCode, 200, me.body);
    const id = BigInt(me.json().user.id);
    const [identity] = me.json().identities as { id: string; provider: string }[];
    assert.ok(identity);
    const records = await auditLog(usher.t, admin.token, `userId=${id}`);
    const of = (type: string) => {
      const found = records.filter((r) => r.type === type);
      assert.equal(found.length, 1, `one ${type}: ${JSON.stringify(records)}`);
      return found[0]!;
    };
    const from = of('user.created');
    assert.equal(from.address, '127.0.0.1');
    assert.ok(from.userAgent, 'the browser’s User-Agent');
    const expected = { userId: id, actorId: id, address: '127.0.0.1', userAgent: from.userAgent };
    assertRecord(from, { ...expected, type: 'user.created', details: { via: 'oauth', provider: PROVIDER } });
    const linked = of('identity.linked');
    assertRecord(linked, { ...expected, type: 'identity.linked' });
    assert.equal(linked.details.identityId, identity.id);
    assert.equal(linked.details.provider, PROVIDER);
    const signedIn = of('signin.succeeded');
    assertRecord(signedIn, { ...expected, type: 'signin.succeeded' });
    assert.equal(signedIn.details.method, 'oauth');
  });

  test('linking from the account and unlinking: identity.linked and identity.unlinked by the user, with the identity and provider', async () => {
    const user = await register(usher.t, newUser());
    const browser = new Browser();
    const token = await browser.passwordSignIn(usher, user);
    const person = providerPerson(provider);
    const flow = await browser.flow(usher, provider, {
      login: person.login,
      intent: 'link',
      redirectTo: '/account',
    });
    assert.equal(flow.callback.status, 303);
    const listed = await send(usher.t, 'GET', '/api/identities', { token });
    const [identity] = listed.json() as { id: string }[];
    assert.ok(identity, listed.body);
    const linked = await onlyRecord(usher.t, admin.token, user.id, 'identity.linked');
    assertRecord(linked, {
      type: 'identity.linked',
      userId: user.id,
      actorId: user.id,
      address: '127.0.0.1',
      userAgent: linked.userAgent,
    });
    assert.equal(linked.details.identityId, identity.id);
    assert.equal(linked.details.provider, PROVIDER);

    const address = freshAddress();
    const userAgent = freshAgent('unlink');
    const res = await send(usher.t, 'DELETE', `/api/identities/${identity.id}`, {
      token,
      address,
      userAgent,
    });
    assert.equal(res.statusCode, 204, res.body);
    const unlinked = await onlyRecord(usher.t, admin.token, user.id, 'identity.unlinked');
    assertRecord(unlinked, {
      type: 'identity.unlinked',
      userId: user.id,
      actorId: user.id,
      address,
      userAgent,
    });
    assert.equal(unlinked.details.identityId, identity.id);
    assert.equal(unlinked.details.provider, PROVIDER);
  });
});
