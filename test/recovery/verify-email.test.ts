// Email verification (CONTRACT "Mail, password reset and email verification"), black-box: the mail
// a registration sends is received by a real SMTP server, its link is followed through HTTP, and
// the user's `emailVerified` (profile B) changes; profile A's user object never changes shape.
// Also: what a verification token refuses (reuse, made up, expired, the wrong purpose), resending,
// HTML escaping of what a user typed, and REQUIRE_VERIFIED_EMAIL at sign-in.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig, type Profile } from '../../src/config.ts';
import { asUser, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { mailingApps, mailsTo, mailTo, SUBJECTS, waitForMails } from '../helpers/mail.ts';
import { linkToken, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PUBLIC_URL = 'https://accounts.usher.example';
const PROFILES: readonly Profile[] = ['a', 'b'];
const EMAIL_VERIFY_TTL_MS = loadConfig({}).tokens.emailVerifyTtlMs;

function assertInvalidToken(res: LightMyRequestResponse, what: string) {
  assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], what);
  assert.equal(body.error, 'INVALID_TOKEN', what);
  assert.equal(typeof body.message, 'string', what);
}

/** Profile A's user object is exactly id, email, name; B's says whether the email is verified. */
function assertUserShape(profile: Profile, user: Record<string, unknown>, verified: boolean, what: string) {
  if (profile === 'a') {
    assert.deepEqual(Object.keys(user).sort(), ['email', 'id', 'name'], what);
  } else {
    assert.equal(user.emailVerified, verified, what);
  }
}

async function userById(t: TestApp, id: bigint): Promise<Record<string, unknown>> {
  const res = await t.get(`/api/users/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

const verify = (t: TestApp, token: string) => t.post('/api/email/verify', { token });

describeEachStore('email verification', (store) => {
  const mailing = mailingApps(store, PUBLIC_URL);
  const apps = mailing.apps;
  let smtp: TestSmtp;
  before(() => {
    smtp = mailing.smtp;
  });

  /** The one verification mail `email` received, and its link and token. */
  async function verificationMail(email: string) {
    const [mail] = await waitForMails(smtp, email, SUBJECTS.verify);
    const token = linkToken(mail!, '/verify-email');
    return { mail: mail!, token, url: `${PUBLIC_URL}/verify-email#token=${token}` };
  }

  for (const profile of PROFILES) {
    test(`[${profile}] registration mails a link to PUBLIC_URL/verify-email; following it verifies the email, once`, async () => {
      const t = apps[profile];
      const user = await register(t);
      assertUserShape(profile, user.res.json(), false, 'the registration answer');

      const { mail, token, url } = await verificationMail(user.email);
      assert.match(mail.subject, /^Confirm your email address$/);
      assert.match(token, /^[A-Za-z0-9_-]{43}$/, 'a 256-bit base64url token');
      assert.ok(mail.text.includes(url), `the text part has the link in full: ${mail.text}`);
      assert.ok(mail.html.includes(`href="${url}"`), `the HTML part links to it: ${mail.html}`);
      assert.ok(mail.html.includes(`>${url}</p>`), `the HTML part writes it out: ${mail.html}`);
      // Nobody has proven the address yet: nothing the registrant chose is in the mail.
      assert.ok(mail.html.includes('<p>Hello,</p>'), `the HTML part has the same content: ${mail.html}`);
      assert.ok(mail.text.startsWith('Hello,\n'), mail.text);
      assert.ok(!mail.text.includes(user.name) && !mail.html.includes(user.name), 'no name in it');

      assertUserShape(profile, await userById(t, user.id), false, 'before verifying');
      const res = await verify(t, token);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
      assertUserShape(profile, await userById(t, user.id), true, 'after verifying');
      const signin = await t.post('/api/signin', { email: user.email, password: user.password });
      assert.equal(signin.statusCode, 200, signin.body);
      if (profile === 'a') assertUserShape('a', signin.json(), true, 'the sign-in answer');
      else assertUserShape('b', signin.json().user, true, 'the sign-in answer');

      assertInvalidToken(await verify(t, token), 'the same token a second time');
      assert.equal(mailsTo(smtp, user.email).length, 1, 'registration sent exactly one mail');
    });
  }

  test('made-up tokens, and tokens for the other purpose, are INVALID_TOKEN', async () => {
    const t = apps.b;
    assertInvalidToken(await verify(t, randomBytes(32).toString('base64url')), 'a well-formed made-up token');
    assertInvalidToken(await verify(t, 'not-a-token'), 'a short token');
    assertInvalidToken(await verify(t, ''), 'an empty token');
    const missing = await t.post('/api/email/verify', {});
    assert.equal(missing.statusCode, 400, missing.body);
    assert.equal(missing.json().error, 'VALIDATION_FAILED');

    // A reset token is no verification token, and the other way round; both stay good for their own use.
    const user = await register(t);
    const { token: verifyToken } = await verificationMail(user.email);
    assert.equal((await t.post('/api/password/forgot', { email: user.email })).statusCode, 202);
    const [resetMail] = await waitForMails(smtp, user.email, SUBJECTS.reset);
    const resetToken = linkToken(resetMail!, '/reset-password');
    assertInvalidToken(await verify(t, resetToken), 'a password-reset token');
    assert.equal((await userById(t, user.id)).emailVerified, false);
    assertInvalidToken(
      await t.post('/api/password/reset', { token: verifyToken, password: 'another password' }),
      'a verification token used to reset the password',
    );
    assert.equal((await verify(t, verifyToken)).statusCode, 204);
  });

  test('a token is good until EMAIL_VERIFY_TTL after it was made, and INVALID_TOKEN after', async () => {
    let offset = 0;
    const t = await startApp(
      store,
      'b',
      { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) },
      { clock: () => Date.now() + offset },
    );
    try {
      const early = await register(t);
      const late = await register(t);
      const earlyToken = (await verificationMail(early.email)).token;
      const lateToken = (await verificationMail(late.email)).token;

      offset = EMAIL_VERIFY_TTL_MS - 60_000;
      assert.equal((await verify(t, earlyToken)).statusCode, 204, 'a minute before it expires');
      assert.equal((await userById(t, early.id)).emailVerified, true);

      offset = EMAIL_VERIFY_TTL_MS + 1000;
      assertInvalidToken(await verify(t, lateToken), 'a second after it expired');
      assert.equal((await userById(t, late.id)).emailVerified, false, 'the expired link verified nothing');
    } finally {
      await t.close();
    }
  });

  test('resend with a session: 202 and a new link that works; without a session: 401', async () => {
    const t = apps.b;
    const user = await register(t);
    const first = await verificationMail(user.email);
    const session = await signIn(t, user);

    const res = await asUser(t, session).post('/api/email/verify/resend', {});
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(res.json(), { status: 'accepted' });
    const mails = await waitForMails(smtp, user.email, SUBJECTS.verify, 2);
    assert.equal(mails.length, 2);
    const second = linkToken(mails[1]!, '/verify-email');
    assert.notEqual(second, first.token, 'a new token');
    assert.equal((await verify(t, second)).statusCode, 204);
    assert.equal((await userById(t, user.id)).emailVerified, true);

    const anonymous = await t.inject({ method: 'POST', url: '/api/email/verify/resend' });
    assert.equal(anonymous.statusCode, 401, anonymous.body);
    assert.equal(anonymous.json().error, 'UNAUTHENTICATED');
    const forged = await asUser(t, randomBytes(32).toString('base64url')).post(
      '/api/email/verify/resend',
      {},
    );
    assert.equal(forged.statusCode, 401, forged.body);
  });

  test('resend for an email already verified answers 202 and sends nothing', async () => {
    const t = apps.b;
    const user = await register(t);
    assert.equal((await verify(t, (await verificationMail(user.email)).token)).statusCode, 204);
    const session = await signIn(t, user);
    assert.equal((await asUser(t, session).post('/api/email/verify/resend', {})).statusCode, 202);

    // A resend for another (unverified) account, recorded after ours: mail goes out in the order
    // it was recorded, so once this one arrived, any mail for `user` would have too.
    const marker = await register(t);
    await verificationMail(marker.email);
    const markerSession = await signIn(t, marker);
    assert.equal((await asUser(t, markerSession).post('/api/email/verify/resend', {})).statusCode, 202);
    await waitForMails(smtp, marker.email, SUBJECTS.verify, 2);
    assert.equal(mailsTo(smtp, user.email, SUBJECTS.verify).length, 1, 'no second link once verified');
  });

  test('a name with markup is left out of mail to the unverified address, and escaped in the HTML part once it is verified', async () => {
    const t = apps.b;
    const name = `Mallory <script>alert(1)</script> & "double" 'single'`;
    const user = await register(t, newUser({ name }));
    const { mail, token } = await verificationMail(user.email);
    assert.ok(!mail.html.includes('Mallory') && !mail.text.includes('Mallory'), 'no name before verifying');
    assert.equal((await verify(t, token)).statusCode, 204);
    assert.equal((await t.post('/api/password/forgot', { email: user.email })).statusCode, 202);
    const [reset] = await waitForMails(smtp, user.email, SUBJECTS.reset);

    const m = reset!;
    assert.ok(!m.html.includes('<script'), `no raw <script> in the HTML part: ${m.html}`);
    assert.ok(!m.html.includes(`"double"`) && !m.html.includes(`'single'`), 'quotes escaped');
    assert.ok(
      m.html.includes(
        'Hello Mallory &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;double&quot; &#39;single&#39;,',
      ),
      `the name escaped in the HTML part: ${m.html}`,
    );
    assert.ok(m.text.includes(`Hello ${name},`), `the name as typed in the text part: ${m.text}`);
  });

  for (const profile of PROFILES) {
    test(`[${profile}] REQUIRE_VERIFIED_EMAIL: the right password for an unverified account is 403 SIGNIN_FAILED until the email is verified`, async () => {
      const t = await startApp(store, profile, {
        publicUrl: PUBLIC_URL,
        mail: mailTo(smtp.url),
        requireVerifiedEmail: true,
      });
      try {
        const user = await register(t);
        const signin = () => t.post('/api/signin', { email: user.email, password: user.password });

        const refused = await signin();
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal(refused.headers['set-cookie'], undefined, 'no session');
        if (profile === 'a') {
          assert.deepEqual(refused.json(), { error: 'SIGNIN_FAILED' });
        } else {
          assert.deepEqual(Object.keys(refused.json()).sort(), ['error', 'message']);
          assert.equal(refused.json().error, 'SIGNIN_FAILED');
          assert.match(refused.json().message, /confirm your email/i);
        }

        const wrong = await t.post('/api/signin', { email: user.email, password: 'not the password' });
        assert.equal(wrong.statusCode, 401, wrong.body);
        assert.equal(wrong.headers['set-cookie'], undefined);
        if (profile === 'a') assert.deepEqual(wrong.json(), { error: 'SIGNIN_FAILED' });
        else assert.doesNotMatch(wrong.json().message, /confirm/i, 'a wrong password says nothing more');

        assert.equal((await verify(t, (await verificationMail(user.email)).token)).statusCode, 204);
        const allowed = await signin();
        assert.equal(allowed.statusCode, 200, allowed.body);
        assert.match(String(allowed.headers['set-cookie']), /usher_session=/);
      } finally {
        await t.close();
      }
    });
  }
});
