// Two-step sign-in with TOTP (CONTRACT "Second factors: TOTP and passkeys", issue 14): set-up,
// confirmation, sign-in with a code or a recovery code, replays refused, the throttle counting bad
// codes, the secret sealed at rest, mails, and nothing secret in the logs. Codes are computed here,
// from the secret the API hands out, at times the test sets on the app's clock.
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type Config, ConfigError, loadConfig, type Profile } from '../../src/config.ts';
import { leaksSecret, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { mailTo, metric, waitForMails } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { base32Decode, hotp, STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';

const SUBJECT = {
  on: /two-step sign-in was turned on/i,
  off: /two-step sign-in was turned off/i,
  recovery: /recovery code was used/i,
};

test('the test computes RFC 6238 codes right (RFC 6238 appendix B, SHA-1)', () => {
  const key = Buffer.from('12345678901234567890');
  assert.equal(hotp(key, Math.floor(59_000 / STEP_MS), 8), '94287082');
  assert.equal(hotp(key, Math.floor(1111111109_000 / STEP_MS), 8), '07081804');
});

test('ENCRYPTION_KEY: 32 bytes in base64, anything else stops the start with a line naming it', () => {
  const key = randomBytes(32);
  assert.deepEqual(loadConfig({ ENCRYPTION_KEY: key.toString('base64') }).encryptionKey, key);
  assert.equal(loadConfig({}).encryptionKey, undefined);
  for (const bad of ['short', randomBytes(16).toString('base64'), `${key.toString('base64')}!`]) {
    assert.throws(
      () => loadConfig({ ENCRYPTION_KEY: bad }),
      (e: unknown) => e instanceof ConfigError && e.message.startsWith('ENCRYPTION_KEY:'),
    );
  }
});

/** 12:00:10 UTC: ten seconds into a step, so ±1 step is unambiguous. */
const T0 = Date.UTC(2026, 10, 23, 12, 0, 10);

describeEachStore('TOTP second factor', (store) => {
  const clock = { now: T0 };
  const tick = (steps = 1) => {
    clock.now += steps * STEP_MS;
  };
  const throttle = {
    windowMs: 3_600_000,
    perAccountAddress: 4,
    perAccount: 1000,
    perAddress: 1000,
    concurrentPerAccount: 1000,
    concurrentPerAddress: 1000,
    deviceTtlMs: 180 * 24 * 3600 * 1000,
  };
  // PostgreSQL has no key file: instances share the database, so the key comes from the setting.
  const configuredKey = randomBytes(32);
  /** The key the apps seal with: the setting on PostgreSQL, the key file beside the SQLite database. */
  const sealingKey = () =>
    store.kind === 'postgres'
      ? configuredKey
      : Buffer.from(readFileSync(keyFilePath(), 'utf8').trim(), 'base64');
  const keyFilePath = () => join(dirname(store.url.slice('sqlite:'.length)), 'usher.key');
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  before(async () => {
    smtp = await startSmtp();
    const overrides: Partial<Config> = {
      mail: mailTo(smtp.url),
      throttle,
      ...(store.kind === 'postgres' ? { encryptionKey: configuredKey } : {}),
    };
    apps.a = await startApp(store, 'a', overrides, { clock: () => clock.now });
    apps.b = await startApp(store, 'b', overrides, { clock: () => clock.now });
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
    await smtp.close();
  });

  let addresses = 0;
  /** A client address no other test uses, so throttle counts never meet across tests. */
  const freshAddress = () => `10.88.${++addresses >> 8}.${addresses & 255}`;

  const send = (
    t: TestApp,
    method: 'POST' | 'DELETE',
    url: string,
    body: object,
    token?: string,
    address = freshAddress(),
  ) =>
    t.inject({
      method,
      url,
      remoteAddress: address,
      headers: {
        'content-type': 'application/json',
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      payload: JSON.stringify(body),
    });
  const signinWith = (t: TestApp, body: object, address?: string) =>
    send(t, 'POST', '/api/signin', body, undefined, address);

  function assertInvalid(res: LightMyRequestResponse, field: string) {
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error, 'VALIDATION_FAILED');
    assert.ok(res.json().message.startsWith(`${field}:`), res.json().message);
  }

  /** A registered, signed-in user with TOTP in force; codes are computed from `secret`. */
  async function withTotp(t: TestApp) {
    const u = await register(t);
    const token = await signIn(t, u);
    const setup = await send(t, 'POST', '/api/mfa/totp', { password: u.password }, token);
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret } = setup.json() as { secret: string };
    const confirmed = await send(
      t,
      'POST',
      '/api/mfa/totp/confirm',
      { code: totpAt(secret, clock.now) },
      token,
    );
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    return { ...u, token, secret, recoveryCodes: confirmed.json().recoveryCodes as string[] };
  }

  test('ISSUE 14: the whole life: set-up, confirmation, sign-in with a code once, a recovery code once, turning off', async () => {
    const t = apps.b;
    const u = await register(t);
    const token = await signIn(t, u);

    assertInvalid(
      await send(t, 'POST', '/api/mfa/totp', { password: 'not-my-password-1' }, token),
      'password',
    );
    assertInvalid(await send(t, 'POST', '/api/mfa/totp', {}, token), 'password');

    const setup = await send(t, 'POST', '/api/mfa/totp', { password: u.password }, token);
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret, uri } = setup.json();
    assert.match(secret, /^[A-Z2-7]{32}$/, '160 bits, base32');
    assert.equal(
      uri,
      `otpauth://totp/Usher:${encodeURIComponent(u.email)}?secret=${secret}&issuer=Usher&algorithm=SHA1&digits=6&period=30`,
    );
    // Pending is not in force.
    assert.equal((await signinWith(t, { email: u.email, password: u.password })).statusCode, 200);

    assertInvalid(
      await send(t, 'POST', '/api/mfa/totp/confirm', { code: wrongCodeAt(secret, clock.now) }, token),
      'code',
    );
    const confirmCode = totpAt(secret, clock.now);
    const confirmed = await send(t, 'POST', '/api/mfa/totp/confirm', { code: confirmCode }, token);
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    const { recoveryCodes } = confirmed.json() as { recoveryCodes: string[] };
    assert.equal(recoveryCodes.length, 10);
    assert.equal(new Set(recoveryCodes).size, 10);
    for (const c of recoveryCodes)
      assert.match(c, /^[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}$/);
    await waitForMails(smtp, u.email, SUBJECT.on);

    // In force: the right password alone is not enough, and the answer says a code is needed.
    const needed = await signinWith(t, { email: u.email, password: u.password });
    assert.equal(needed.statusCode, 401);
    assert.equal(needed.headers['usher-second-factor'], 'totp');
    assert.equal(needed.json().error, 'SIGNIN_FAILED');
    assert.match(needed.json().message, /code/i);
    assert.equal(needed.headers['set-cookie'], undefined);
    // A wrong password is answered as for any account: no header, the same body.
    const wrong = await signinWith(t, { email: u.email, password: 'not-my-password-1', code: '123456' });
    const plain = await register(t);
    const wrongPlain = await signinWith(t, { email: plain.email, password: 'not-my-password-1' });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers['usher-second-factor'], undefined);
    assert.deepEqual(wrong.json(), wrongPlain.json());

    // The confirming code's step is used up already.
    const reused = await signinWith(t, { email: u.email, password: u.password, code: confirmCode });
    assert.equal(reused.statusCode, 401);
    assert.equal(reused.headers['usher-second-factor'], 'totp');

    tick();
    const code = totpAt(secret, clock.now);
    const ok = await signinWith(t, { email: u.email, password: u.password, code });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().user.email, u.email);
    assert.ok(ok.headers['set-cookie'], 'a session cookie');
    const replay = await signinWith(t, { email: u.email, password: u.password, code });
    assert.equal(replay.statusCode, 401, 'the same code is accepted once');
    assert.equal(replay.headers['usher-second-factor'], 'totp');
    // The previous step's code is still within the drift, but older than the one used: refused too.
    const older = await signinWith(t, {
      email: u.email,
      password: u.password,
      code: totpAt(secret, clock.now - STEP_MS),
    });
    assert.equal(older.statusCode, 401);

    const recovery = recoveryCodes[3]!;
    const byRecovery = await signinWith(t, { email: u.email, password: u.password, code: recovery });
    assert.equal(byRecovery.statusCode, 200, byRecovery.body);
    const [notice] = await waitForMails(smtp, u.email, SUBJECT.recovery);
    assert.match(notice!.text, /9 unused recovery codes left/);
    const again = await signinWith(t, { email: u.email, password: u.password, code: recovery });
    assert.equal(again.statusCode, 401, 'a recovery code works once');
    assert.equal(again.headers['usher-second-factor'], 'totp');
    // Any letter case and grouping of another code works.
    const typed = recoveryCodes[4]!.toLowerCase().replaceAll('-', ' ');
    assert.equal(
      (await signinWith(t, { email: u.email, password: u.password, code: typed })).statusCode,
      200,
    );

    assertInvalid(
      await send(t, 'DELETE', '/api/mfa/totp', { password: 'not-my-password-1' }, token),
      'password',
    );
    assert.equal((await signinWith(t, { email: u.email, password: u.password })).statusCode, 401);
    assert.equal((await send(t, 'DELETE', '/api/mfa/totp', { password: u.password }, token)).statusCode, 204);
    await waitForMails(smtp, u.email, SUBJECT.off);
    assert.equal((await signinWith(t, { email: u.email, password: u.password })).statusCode, 200);
    const old = await signinWith(t, { email: u.email, password: u.password, code: recoveryCodes[5] });
    assert.equal(old.statusCode, 200, 'a code sent to an account without TOTP is ignored');

    // CONTRACT: usher_signins_total{method,outcome}; the factor a success also used is counted apart.
    assert.ok((await metric(t, 'usher_signin_second_factors_total', 'factor="totp"')) >= 1);
    assert.ok((await metric(t, 'usher_signin_second_factors_total', 'factor="recovery_code"')) >= 2);
    assert.ok((await metric(t, 'usher_signins_total', 'method="password",outcome="success"')) >= 1);

    // Neither the secret nor any code reached a log line.
    const logs = t.logs.join('');
    assert.ok(!logs.includes(secret), 'the secret is not logged');
    for (const c of [...recoveryCodes, typed, code, confirmCode])
      assert.ok(!logs.includes(c), `${c} is logged`);
    assert.ok(!leaksSecret(logs, [u.password]));
  });

  for (const profile of ['a', 'b'] as const) {
    test(`CONTRACT (${profile}): a code is needed: 401 SIGNIN_FAILED in the profile's shape with Usher-Second-Factor; a wrong password without it`, async () => {
      const t = apps[profile];
      const u = await withTotp(t);
      tick();
      const needed = await signinWith(t, { email: u.email, password: u.password });
      const wrong = await signinWith(t, { email: u.email, password: 'not-my-password-1' });
      assert.equal(needed.statusCode, 401);
      assert.equal(wrong.statusCode, 401);
      assert.equal(needed.headers['usher-second-factor'], 'totp');
      assert.equal(wrong.headers['usher-second-factor'], undefined);
      if (profile === 'a') {
        assert.equal(needed.body, '{"error":"SIGNIN_FAILED"}');
        assert.equal(wrong.body, '{"error":"SIGNIN_FAILED"}');
      } else {
        assert.deepEqual(Object.keys(needed.json()).sort(), ['error', 'message']);
        assert.match(needed.json().message, /code/i);
        assert.doesNotMatch(wrong.json().message, /code/i);
      }
      const badCode = await signinWith(t, {
        email: u.email,
        password: u.password,
        code: wrongCodeAt(u.secret, clock.now),
      });
      assert.equal(badCode.statusCode, 401);
      assert.equal(badCode.headers['usher-second-factor'], 'totp');

      // POST /api/sessions: the same second factor, {error, message} in both profiles.
      const tokenNeeded = await send(t, 'POST', '/api/sessions', { email: u.email, password: u.password });
      assert.equal(tokenNeeded.statusCode, 401);
      assert.equal(tokenNeeded.headers['usher-second-factor'], 'totp');
      assert.deepEqual(Object.keys(tokenNeeded.json()).sort(), ['error', 'message']);
      assert.match(tokenNeeded.json().message, /code/i);
      const code = totpAt(u.secret, clock.now);
      const created = await send(t, 'POST', '/api/sessions', { email: u.email, password: u.password, code });
      assert.equal(created.statusCode, 201, created.body);
      assert.ok(created.json().token);
      const replay = await send(t, 'POST', '/api/sessions', { email: u.email, password: u.password, code });
      assert.equal(replay.statusCode, 401, 'replayed on the other sign-in route');
      assert.equal(replay.headers['usher-second-factor'], 'totp');
    });
  }

  test('ISSUE 14: a code sent in several sign-ins at once grants one session; so does a recovery code', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    tick();
    const code = totpAt(u.secret, clock.now);
    const statuses = async (who: { email: string; password: string }, c: string) =>
      (
        await Promise.all(
          Array.from({ length: 4 }, () =>
            signinWith(t, { email: who.email, password: who.password, code: c }),
          ),
        )
      )
        .map((r) => r.statusCode)
        .sort();
    assert.deepEqual(await statuses(u, code), [200, 401, 401, 401]);
    // Another account: the replays above count as wrong codes, and a few more would start a delay.
    const v = await withTotp(t);
    assert.deepEqual(await statuses(v, v.recoveryCodes[0]!), [200, 401, 401, 401]);
  });

  test('ISSUE 14: one step of clock drift either way is accepted, two are not', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    tick(10);
    const at = (d: number) => totpAt(u.secret, clock.now + d * STEP_MS);
    const status = async (code: string) =>
      (await signinWith(t, { email: u.email, password: u.password, code })).statusCode;
    assert.equal(await status(at(-2)), 401, 'two steps behind');
    assert.equal(await status(at(2)), 401, 'two steps ahead');
    assert.equal(await status(at(-1)), 200, 'one step behind');
    tick(10);
    assert.equal(await status(at(1)), 200, 'one step ahead');
  });

  test('ISSUE 14: failed codes count in the sign-in throttle; after the limit even a good code gets 429', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    tick();
    const address = freshAddress();
    // The right password without a code is a step of a sign-in, not a guess: it does not count.
    for (let i = 0; i < throttle.perAccountAddress + 1; i++) {
      assert.equal((await signinWith(t, { email: u.email, password: u.password }, address)).statusCode, 401);
    }
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      const bad = { email: u.email, password: u.password, code: wrongCodeAt(u.secret, clock.now) };
      assert.equal((await signinWith(t, bad, address)).statusCode, 401, `bad code ${i + 1}`);
    }
    const good = { email: u.email, password: u.password, code: totpAt(u.secret, clock.now) };
    const refused = await signinWith(t, good, address);
    assert.equal(refused.statusCode, 429);
    assert.ok(refused.headers['retry-after']);
    // Bad recovery codes count too, from another address (another account, so that its wrong
    // codes in a row stay below the free ones: those have a delay of their own, tested below).
    const v = await withTotp(t);
    const other = freshAddress();
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      const bad = { email: v.email, password: v.password, code: 'AAAA-AAAA-AAAA' };
      assert.equal((await signinWith(t, bad, other)).statusCode, 401);
    }
    const goodRecovery = { email: v.email, password: v.password, code: v.recoveryCodes[0] };
    assert.equal((await signinWith(t, goodRecovery, other)).statusCode, 429);
    // A good code and password from a clean address is a success.
    assert.equal((await signinWith(t, good)).statusCode, 200);
  });

  test('ISSUE 14: a wrong password on set-up or turning off counts in the sign-in throttle', async () => {
    const t = apps.b;
    const u = await register(t);
    const token = await signIn(t, u);
    const address = freshAddress();
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      const res = await send(t, 'POST', '/api/mfa/totp', { password: `wrong-${i}-password` }, token, address);
      assertInvalid(res, 'password');
    }
    const refused = await send(t, 'POST', '/api/mfa/totp', { password: u.password }, token, address);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal((await signinWith(t, { email: u.email, password: u.password }, address)).statusCode, 429);
    const off = await send(t, 'DELETE', '/api/mfa/totp', { password: u.password }, token, address);
    assert.equal(off.statusCode, 429);
  });

  test('ISSUE 14: set-up while TOTP is on is 409 TOTP_ALREADY_ON; a new set-up replaces a pending one', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    const again = await send(t, 'POST', '/api/mfa/totp', { password: u.password }, u.token);
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().error, 'TOTP_ALREADY_ON');
    const confirmAgain = await send(t, 'POST', '/api/mfa/totp/confirm', { code: '000000' }, u.token);
    assert.equal(confirmAgain.statusCode, 409);

    const v = await register(t);
    const vToken = await signIn(t, v);
    const first = (await send(t, 'POST', '/api/mfa/totp', { password: v.password }, vToken)).json().secret;
    const second = (await send(t, 'POST', '/api/mfa/totp', { password: v.password }, vToken)).json().secret;
    assert.notEqual(first, second);
    const code = totpAt(first, clock.now);
    if (code !== totpAt(second, clock.now)) {
      assertInvalid(await send(t, 'POST', '/api/mfa/totp/confirm', { code }, vToken), 'code');
    }
    const ok = await send(t, 'POST', '/api/mfa/totp/confirm', { code: totpAt(second, clock.now) }, vToken);
    assert.equal(ok.statusCode, 200);
    // Without a session: 401.
    const anonymous = await t.post('/api/mfa/totp', { password: v.password });
    assert.equal(anonymous.statusCode, 401);
  });

  test('ISSUE 14: the secret is stored sealed (AES-256-GCM), recovery codes only as hashes', async () => {
    const t = apps.b;
    const u = await withTotp(t);
    const database = openTestDatabase(store);
    try {
      const row = await database.db
        .selectFrom('totp_factors')
        .selectAll()
        .where('user_id', '=', u.id)
        .executeTakeFirstOrThrow();
      assert.match(row.secret_sealed, /^v1\.[A-Za-z0-9+/]+=*$/);
      const sealed = Buffer.from(row.secret_sealed.slice(3), 'base64');
      assert.ok(!row.secret_sealed.includes(u.secret), 'not the base32 secret');
      assert.ok(!sealed.includes(Buffer.from(u.secret)), 'nor the secret in base64');
      assert.ok(!sealed.includes(base32Decode(u.secret)), 'nor its bytes');
      // AES-256-GCM: 12-byte IV, 16-byte tag, then the ciphertext, the user id authenticated.
      const decipher = createDecipheriv('aes-256-gcm', sealingKey(), sealed.subarray(0, 12));
      decipher.setAAD(Buffer.from(String(u.id)));
      decipher.setAuthTag(sealed.subarray(12, 28));
      const opened = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString();
      assert.equal(opened, u.secret);
      const codes = await database.db
        .selectFrom('recovery_codes')
        .select('code_hash')
        .where('user_id', '=', u.id)
        .execute();
      assert.equal(codes.length, 10);
      for (const { code_hash } of codes) {
        assert.match(code_hash, /^[0-9a-f]{64}$/);
        assert.ok(!u.recoveryCodes.some((c) => code_hash.includes(c.replaceAll('-', ''))));
      }
    } finally {
      await database.close();
    }
    if (store.kind === 'sqlite') {
      assert.equal(statSync(keyFilePath()).mode & 0o777, 0o600, 'the key file is readable by its owner only');
    }
  });

  test('ISSUE 14: a secret sealed for one account does not open for another', async () => {
    const t = apps.b;
    const victim = await withTotp(t);
    const other = await withTotp(t);
    const database = openTestDatabase(store);
    try {
      const sealed = await database.db
        .selectFrom('totp_factors')
        .select('secret_sealed')
        .where('user_id', '=', victim.id)
        .executeTakeFirstOrThrow();
      await database.db
        .updateTable('totp_factors')
        .set({ secret_sealed: sealed.secret_sealed })
        .where('user_id', '=', other.id)
        .execute();
    } finally {
      await database.close();
    }
    tick();
    const res = await signinWith(t, {
      email: other.email,
      password: other.password,
      code: totpAt(victim.secret, clock.now),
    });
    assert.notEqual(res.statusCode, 200);
  });

  if (store.kind === 'postgres') {
    test('ISSUE 14: on PostgreSQL without ENCRYPTION_KEY, set-up is 503 naming ENCRYPTION_KEY and a warning is logged', async () => {
      const t = await startApp(store, 'b');
      try {
        const u = await register(t);
        const token = await signIn(t, u);
        const res = await send(t, 'POST', '/api/mfa/totp', { password: u.password }, token);
        assert.equal(res.statusCode, 503);
        assert.equal(res.json().error, 'UNAVAILABLE');
        assert.match(res.json().message, /ENCRYPTION_KEY/);
        assert.ok(t.logs.some((l) => l.includes('"level":40') && l.includes('ENCRYPTION_KEY')));
      } finally {
        await t.close();
      }
    });

    test('ISSUE 14: with the key gone, a TOTP code answers 503 (not counted) and a recovery code still signs in', async () => {
      const u = await withTotp(apps.b);
      const t = await startApp(store, 'b', { throttle }, { clock: () => clock.now });
      try {
        tick();
        const address = freshAddress();
        const body = { email: u.email, password: u.password, code: totpAt(u.secret, clock.now) };
        for (let i = 0; i < throttle.perAccountAddress + 1; i++) {
          assert.equal((await signinWith(t, body, address)).statusCode, 503);
        }
        const recovery = { ...body, code: u.recoveryCodes[1] };
        assert.equal((await signinWith(t, recovery, address)).statusCode, 200);
      } finally {
        await t.close();
      }
    });
  }
});
