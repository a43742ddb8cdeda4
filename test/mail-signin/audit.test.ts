// What sign-in by mail leaves behind (CONTRACT "Accounts and sign-in methods": the same audit
// record and metric as every method; docs/audit.md; webhooks): signin.succeeded with method
// email_link or email_code, signin.failed with its reason, signin.throttled, email.verified and
// user.created via the method, read back through GET /api/admin/audit; the webhook events a real
// receiver gets (verified by standardwebhooks); usher_signins_total{method,outcome} on GET /metrics.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { as, type SignedIn, staff } from '../admin/support.ts';
import {
  type AuditRecord,
  assertRecord,
  auditLog,
  emailDigest,
  eventually,
  freshAgent,
  onlyRecord,
  recordsOf,
} from '../audit/support.ts';
import { NO_THROTTLE, register, sessionToken, type TestApp } from '../helpers/app.ts';
import { mailTo, metric } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { listeningReceiver, of, webhookApp } from '../webhooks/support.ts';
import {
  askCode,
  askLink,
  assertAccepted,
  codes,
  freshAddress,
  linkTokens,
  otherCode,
  PUBLIC_URL,
  unknownEmail,
  verifyCode,
  verifyLink,
} from './support.ts';

/** The third failure of a pair is refused, and the fifth from an address. */
const LOW_THROTTLE = { ...NO_THROTTLE, perAccountAddress: 2, perAddress: 4 };

describeEachStore('Sign-in by mail: audit records, webhooks and metrics', (store) => {
  let smtp: TestSmtp;
  /** Profile B, sign-up by mail on. */
  let t: TestApp;
  /** Profile A on the same database, behind a low throttle. */
  let low: TestApp;
  let admin: SignedIn;

  before(async () => {
    smtp = await startSmtp();
    const overrides = { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url), emailSigninCreatesAccounts: true };
    t = await webhookApp(store, {}, overrides, 'b');
    low = await webhookApp(store, {}, { ...overrides, throttle: LOW_THROTTLE }, 'a');
    admin = await staff(t, store, 'admin');
  });
  after(async () => {
    await t?.close();
    await low?.close();
    await smtp?.close();
  });

  /** A verify request from `address` with `userAgent`. */
  const from = (address: string, userAgent: string) => ({ address, headers: { 'user-agent': userAgent } });

  /** The id of the session a token belongs to. */
  async function sessionIdOf(token: string): Promise<string> {
    const res = await t.inject({
      method: 'GET',
      url: '/api/session',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().session.id;
  }

  /** The one record of `type` made by a request with `userAgent`. */
  async function byAgent(type: string, userAgent: string): Promise<AuditRecord> {
    return eventually(t, admin.token, type, (r) => r.userAgent === userAgent);
  }

  test('a link: signin.succeeded (method email_link, its session) and email.verified (via email_link), by the user, from the address that used it; webhooks user.signed_in and email.verified', async (ctx) => {
    const { receiver } = await listeningReceiver(ctx, t, admin.token, ['user.signed_in', 'email.verified']);
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'ask');
    const [token] = await linkTokens(smtp, u.email);
    const address = freshAddress();
    const userAgent = freshAgent('email link');
    const res = await verifyLink(t, token, from(address, userAgent));
    assert.equal(res.statusCode, 200, res.body);
    const sessionId = await sessionIdOf(sessionToken(res.headers['set-cookie'])!);

    const who = { userId: u.id, actorId: u.id, address, userAgent };
    assertRecord(await onlyRecord(t, admin.token, u.id, 'signin.succeeded'), {
      type: 'signin.succeeded',
      ...who,
      details: { method: 'email_link', sessionId },
    });
    const verified = await onlyRecord(t, admin.token, u.id, 'email.verified');
    assert.equal(verified.actorId, Number(u.id));
    assert.deepEqual(verified.details, { via: 'email_link' });

    const received = await receiver.waitFor(2, of(u.id));
    assert.ok(
      received.every((r) => r.verified),
      'verified by standardwebhooks',
    );
    assert.deepEqual(received.map((r) => [r.type, r.data]).sort(), [
      ['email.verified', { userId: Number(u.id), email: u.email }],
      ['user.signed_in', { userId: Number(u.id), method: 'email_link', sessionId }],
    ]);
  });

  test('a code: signin.succeeded (method email_code) and email.verified (via email_code) once; a second code sign-in verifies nothing again', async () => {
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    const address = freshAddress();
    const userAgent = freshAgent('email code');
    const res = await verifyCode(t, u.email, code, from(address, userAgent));
    assert.equal(res.statusCode, 200, res.body);
    const sessionId = await sessionIdOf(sessionToken(res.headers['set-cookie'])!);
    assertRecord(await onlyRecord(t, admin.token, u.id, 'signin.succeeded'), {
      type: 'signin.succeeded',
      userId: u.id,
      actorId: u.id,
      address,
      userAgent,
      details: { method: 'email_code', sessionId },
    });
    assert.deepEqual((await onlyRecord(t, admin.token, u.id, 'email.verified')).details, {
      via: 'email_code',
    });

    assertAccepted(await askCode(t, u.email), 'ask again');
    const [, again] = await codes(smtp, u.email, 2);
    assert.equal((await verifyCode(t, u.email, again)).statusCode, 200);
    assert.equal((await recordsOf(t, admin.token, u.id, 'signin.succeeded')).length, 2);
    assert.equal((await recordsOf(t, admin.token, u.id, 'email.verified')).length, 1, 'verified once');
  });

  test('failures: signin.failed (credentials) for a link never mailed (about no account), a wrong code (about the account), and a code for an email with no account (its digest only)', async () => {
    const address = freshAddress();

    const linkAgent = freshAgent('bad link');
    assert.equal((await verifyLink(t, 'C'.repeat(43), from(address, linkAgent))).statusCode, 401);
    assertRecord(await byAgent('signin.failed', linkAgent), {
      type: 'signin.failed',
      userId: null,
      actorId: null,
      address,
      userAgent: linkAgent,
      details: { method: 'email_link', reason: 'credentials' },
    });

    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    const codeAgent = freshAgent('wrong code');
    assert.equal((await verifyCode(t, u.email, otherCode(code!), from(address, codeAgent))).statusCode, 401);
    assertRecord(await byAgent('signin.failed', codeAgent), {
      type: 'signin.failed',
      userId: u.id,
      actorId: null,
      address,
      userAgent: codeAgent,
      details: { method: 'email_code', reason: 'credentials' },
    });

    const nobody = unknownEmail();
    const nobodyAgent = freshAgent('unknown email');
    assert.equal((await verifyCode(t, nobody, '123456', from(address, nobodyAgent))).statusCode, 401);
    const record = await byAgent('signin.failed', nobodyAgent);
    assertRecord(record, {
      type: 'signin.failed',
      userId: null,
      actorId: null,
      address,
      userAgent: nobodyAgent,
      details: { method: 'email_code', reason: 'credentials', emailDigest: emailDigest(nobody) },
    });
    assert.ok(!JSON.stringify(record).includes(nobody), 'the email is not in the record');
  });

  test('a code for an account that has no live code: signin.failed about the account, not an emailDigest as if it had none (docs/audit.md)', async () => {
    const u = await register(t);
    const address = freshAddress();
    const userAgent = freshAgent('code, none live');
    assert.equal((await verifyCode(t, u.email, '123456', from(address, userAgent))).statusCode, 401);
    assertRecord(await byAgent('signin.failed', userAgent), {
      type: 'signin.failed',
      userId: u.id,
      actorId: null,
      address,
      userAgent,
      details: { method: 'email_code', reason: 'credentials' },
    });
  });

  test('a disabled account: signin.failed with reason disabled, for a link and for a code', async () => {
    const u = await register(t);
    assertAccepted(await askLink(t, u.email), 'link');
    const [token] = await linkTokens(smtp, u.email);
    assert.equal((await as(t, admin.token).post(`/api/admin/users/${u.id}/disable`, {})).statusCode, 200);
    assert.equal((await verifyLink(t, token)).statusCode, 403);
    assertAccepted(await askCode(t, u.email), 'code');
    const [code] = await codes(smtp, u.email);
    assert.equal((await verifyCode(t, u.email, code)).statusCode, 403);
    const failed = await recordsOf(t, admin.token, u.id, 'signin.failed');
    assert.deepEqual(
      failed.map((r) => r.details).sort((a, b) => String(a.method).localeCompare(String(b.method))),
      [
        { method: 'email_code', reason: 'disabled' },
        { method: 'email_link', reason: 'disabled' },
      ],
    );
  });

  test('wrong codes past the throttle: signin.throttled about the account, with method email_code, retryAfterSeconds and its count', async () => {
    const u = await register(low);
    assertAccepted(await askCode(low, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    const address = freshAddress();
    for (let i = 0; i < LOW_THROTTLE.perAccountAddress; i++)
      assert.equal((await verifyCode(low, u.email, otherCode(code!), { address })).statusCode, 401);
    const userAgent = freshAgent('throttled code');
    const refused = await verifyCode(low, u.email, code, from(address, userAgent));
    assert.equal(refused.statusCode, 429, refused.body);
    const record = await byAgent('signin.throttled', userAgent);
    assertRecord(record, {
      type: 'signin.throttled',
      userId: u.id,
      actorId: null,
      address,
      userAgent,
    });
    // Tallied (one record per account, method and hour): this is the first, counted once.
    assert.deepEqual(Object.keys(record.details).sort(), [
      'count',
      'firstAt',
      'lastAt',
      'method',
      'retryAfterSeconds',
    ]);
    assert.equal(record.details.count, 1);
    assert.equal(record.details.method, 'email_code');
    assert.equal(record.details.retryAfterSeconds, Number(refused.headers['retry-after']));
  });

  test('sign-up by a code: user.created (via email_code) by the new account, then email.verified and signin.succeeded; the webhooks user.created and email.verified', async (ctx) => {
    const { receiver } = await listeningReceiver(ctx, t, admin.token, ['user.created', 'email.verified']);
    const email = unknownEmail('newcomer');
    assertAccepted(await askCode(t, email), 'ask');
    const [code] = await codes(smtp, email);
    const address = freshAddress();
    const userAgent = freshAgent('sign-up by code');
    const res = await verifyCode(t, email, code, from(address, userAgent));
    assert.equal(res.statusCode, 200, res.body);
    const id = BigInt(res.json().user.id);

    const created = await onlyRecord(t, admin.token, id, 'user.created');
    assert.equal(created.actorId, Number(id));
    assert.deepEqual(created.details, { via: 'email_code' });
    assert.deepEqual((await onlyRecord(t, admin.token, id, 'email.verified')).details, { via: 'email_code' });
    assert.equal((await onlyRecord(t, admin.token, id, 'signin.succeeded')).details.method, 'email_code');

    const received = await receiver.waitFor(2, of(id));
    assert.deepEqual(
      received.map((r) => r.type),
      ['user.created', 'email.verified'],
    );
    const [made, verified] = received;
    assert.equal(made!.data.via, 'email_code');
    assert.equal(made!.data.email, email);
    assert.equal(made!.data.name, email.split('@')[0]);
    assert.deepEqual(verified!.data, { userId: Number(id), email });
    assert.ok(
      received.every((r) => r.verified),
      'verified by standardwebhooks',
    );
  });

  test('sign-up by a link: user.created via email_link', async () => {
    const email = unknownEmail('newcomer');
    assertAccepted(await askLink(t, email), 'ask');
    const [token] = await linkTokens(smtp, email);
    const res = await verifyLink(t, token);
    assert.equal(res.statusCode, 200, res.body);
    const id = BigInt(res.json().user.id);
    assert.deepEqual((await onlyRecord(t, admin.token, id, 'user.created')).details, { via: 'email_link' });
  });

  for (const method of ['email_link', 'email_code'] as const) {
    test(`usher_signins_total{method="${method}"}: each success, failure, disabled and throttled attempt counted once`, async () => {
      const app = low;
      const count = (outcome: string) =>
        metric(app, 'usher_signins_total', `method="${method}",outcome="${outcome}"`);
      const before = {
        success: await count('success'),
        failure: await count('failure'),
        disabled: await count('disabled'),
        throttled: await count('throttled'),
      };
      const u = await register(app);
      const victim = await register(app);
      const address = freshAddress();
      let failures: number;
      if (method === 'email_link') {
        assertAccepted(await askLink(app, u.email), 'ask');
        const [token] = await linkTokens(smtp, u.email);
        assert.equal((await verifyLink(app, token)).statusCode, 200);
        failures = LOW_THROTTLE.perAddress;
        for (let i = 0; i < failures; i++)
          assert.equal((await verifyLink(app, token, { address })).statusCode, 401, 'a used link');
        assert.equal((await verifyLink(app, token, { address })).statusCode, 429);
        assertAccepted(await askLink(app, victim.email), 'ask');
        const [other] = await linkTokens(smtp, victim.email);
        await as(app, admin.token).post(`/api/admin/users/${victim.id}/disable`, {});
        assert.equal((await verifyLink(app, other)).statusCode, 403);
      } else {
        assertAccepted(await askCode(app, u.email), 'ask');
        const [code] = await codes(smtp, u.email);
        assert.equal((await verifyCode(app, u.email, code)).statusCode, 200);
        failures = LOW_THROTTLE.perAccountAddress;
        for (let i = 0; i < failures; i++)
          assert.equal((await verifyCode(app, u.email, code, { address })).statusCode, 401, 'a used code');
        assert.equal((await verifyCode(app, u.email, code, { address })).statusCode, 429);
        assertAccepted(await askCode(app, victim.email), 'ask');
        const [other] = await codes(smtp, victim.email);
        await as(app, admin.token).post(`/api/admin/users/${victim.id}/disable`, {});
        assert.equal((await verifyCode(app, victim.email, other)).statusCode, 403);
      }
      assert.equal(await count('success'), before.success + 1, 'success');
      assert.equal(await count('failure'), before.failure + failures, 'failure');
      assert.equal(await count('disabled'), before.disabled + 1, 'disabled');
      assert.equal(await count('throttled'), before.throttled + 1, 'throttled');
    });
  }

  test('the audit log lists mail sign-ins under type=signin', async () => {
    const u = await register(t);
    assertAccepted(await askCode(t, u.email), 'ask');
    const [code] = await codes(smtp, u.email);
    assert.equal((await verifyCode(t, u.email, code)).statusCode, 200);
    const records = await auditLog(t, admin.token, `userId=${u.id}&type=signin`);
    assert.deepEqual(
      records.map((r) => [r.type, r.details.method]),
      [['signin.succeeded', 'email_code']],
    );
  });
});
