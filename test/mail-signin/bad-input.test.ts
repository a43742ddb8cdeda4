// Bad input to sign-in by mail, in both profiles: every malformed ask is 400 VALIDATION_FAILED in
// Usher's shape (`{error, message}`, the field named) and records nothing; every malformed verify
// request is SIGNIN_FAILED in the profile's shape; a body over the limit is 413 and one that is not
// JSON 415, in the same shapes; never a 500. `redirectTo` is a path on PUBLIC_URL or a URL on an
// origin of CORS_ORIGINS, anything else is refused before anything is recorded.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  askLink,
  assertAccepted,
  assertError,
  assertSigninFailed,
  freshAddress,
  linkTokens,
  mailSigninRows,
  PROFILES,
  PUBLIC_URL,
  postFrom,
  settle,
  signinMails,
  storeReader,
  verifyLink,
} from './support.ts';

const CORS_ORIGIN = 'https://app.example.com';
const ASKS = ['/api/signin/email-link', '/api/signin/email-code'] as const;
const VERIFY = ['/api/signin/email-link/verify', '/api/signin/email-code/verify'] as const;
/** Over the 32 KiB every one of these routes reads. */
const HUGE = 40 * 1024;

/** A POST with a raw body and content type, from a fresh address. */
function raw(
  t: TestApp,
  url: string,
  payload: string,
  contentType = 'application/json',
  address = freshAddress(),
) {
  return t.inject({
    method: 'POST',
    url,
    remoteAddress: address,
    headers: { 'content-type': contentType },
    payload,
  });
}

describeEachStore('Sign-in by mail: bad input', (store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  const db = storeReader(store);

  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES)
      apps[profile] = await startApp(store, profile, {
        publicUrl: PUBLIC_URL,
        mail: mailTo(smtp.url),
        corsOrigins: [CORS_ORIGIN],
      });
  });
  after(async () => {
    for (const t of Object.values(apps)) await t?.close();
    await smtp?.close();
  });

  /** How many asks were recorded from `address`. */
  const asksFrom = async (address: string) =>
    (await db().db.selectFrom('reset_requests').select('id').where('address', '=', address).execute()).length;

  function assertValidation(res: LightMyRequestResponse, field: string | undefined, what: string) {
    assertError(res, 400, 'VALIDATION_FAILED', what);
    if (field !== undefined) assert.match(res.json().message, new RegExp(`^${field}`), what);
  }

  for (const profile of PROFILES) {
    test(`[${profile}] asks: a missing or non-string email, an unknown field, a body not an object: 400 VALIDATION_FAILED, nothing recorded`, async () => {
      const t = apps[profile];
      const cases: [string, string, string | undefined][] = [
        ['{}', 'no email', 'email'],
        ['{"email":42}', 'a number', 'email'],
        ['{"email":null}', 'null', 'email'],
        ['{"email":true}', 'a boolean', 'email'],
        ['{"email":["a@example.com"]}', 'an array', 'email'],
        ['{"email":{"email":"a@example.com"}}', 'an object', 'email'],
        ['{"email":"a@example.com","admin":true}', 'an unknown field', undefined],
        [`{"email":"${'a'.repeat(1025)}@example.com"}`, 'an email over 1024 characters', 'email'],
        ['[]', 'an array body', undefined],
        ['"a@example.com"', 'a string body', undefined],
        ['null', 'null body', undefined],
        ['{"email":', 'not JSON', undefined],
      ];
      for (const url of ASKS)
        for (const [payload, what, field] of cases) {
          const address = freshAddress();
          const res = await raw(t, url, payload, 'application/json', address);
          assertValidation(res, field, `${url}: ${what}`);
          assert.equal(await asksFrom(address), 0, `${url}: ${what}: nothing recorded`);
        }
      for (const [payload, what] of [
        ['{"email":"a@example.com","redirectTo":42}', 'a number'],
        ['{"email":"a@example.com","redirectTo":null}', 'null'],
        [`{"email":"a@example.com","redirectTo":"/${'x'.repeat(2048)}"}`, 'over 2048 characters'],
      ] as const)
        assertValidation(await raw(t, ASKS[0], payload), 'redirectTo', `redirectTo: ${what}`);
    });

    test(`[${profile}] asks: a body over the limit is 413 PAYLOAD_TOO_LARGE, one that is not JSON 415 UNSUPPORTED_MEDIA_TYPE; nothing recorded`, async () => {
      const t = apps[profile];
      for (const url of ASKS) {
        const address = freshAddress();
        const huge = await raw(
          t,
          url,
          JSON.stringify({ email: `${'a'.repeat(HUGE)}@example.com` }),
          undefined,
          address,
        );
        assertError(huge, 413, 'PAYLOAD_TOO_LARGE', `${url}: huge`);
        const text = await raw(t, url, 'email=a@example.com', 'application/x-www-form-urlencoded', address);
        assertError(text, 415, 'UNSUPPORTED_MEDIA_TYPE', `${url}: a form`);
        assert.equal(await asksFrom(address), 0);
      }
    });

    test(`[${profile}] verify: a missing or non-string field, a field over its length, a body not an object or not JSON: SIGNIN_FAILED in the profile's shape, never a 500`, async () => {
      const t = apps[profile];
      const cases: [string, string, string][] = [
        [VERIFY[0], '{}', 'no token'],
        [VERIFY[0], '{"token":42}', 'a number'],
        [VERIFY[0], '{"token":null}', 'null'],
        [VERIFY[0], '{"token":["x"]}', 'an array'],
        [VERIFY[0], `{"token":"${'A'.repeat(129)}"}`, 'a token over 128 characters'],
        [VERIFY[1], '{"code":"123456"}', 'no email'],
        [VERIFY[1], '{"email":"a@example.com"}', 'no code'],
        [VERIFY[1], '{"email":"a@example.com","code":123456}', 'a number for a code'],
        [VERIFY[1], '{"email":7,"code":"123456"}', 'a number for an email'],
        [VERIFY[1], `{"email":"a@example.com","code":"${'1'.repeat(65)}"}`, 'a code over 64 characters'],
        [VERIFY[1], `{"email":"${'a'.repeat(1025)}","code":"123456"}`, 'an email over 1024 characters'],
      ];
      for (const url of VERIFY) {
        cases.push([url, '[]', 'an array body'], [url, 'null', 'null body'], [url, '{"token":', 'not JSON']);
      }
      for (const [url, payload, what] of cases) {
        const res = await raw(t, url, payload);
        assertSigninFailed(res, profile, 400, `${url}: ${what}`);
      }
      for (const url of VERIFY) {
        assertSigninFailed(
          await raw(t, url, JSON.stringify({ token: 'x'.repeat(HUGE), email: 'a@example.com', code: '1' })),
          profile,
          413,
          `${url}: huge`,
        );
        assertSigninFailed(await raw(t, url, 'token=x', 'text/plain'), profile, 415, `${url}: text`);
      }
    });

    test(`[${profile}] verify: a token or code of the wrong shape is a 401 like any wrong one; unknown fields are ignored`, async () => {
      const t = apps[profile];
      for (const token of [
        'short',
        '../../etc/passwd',
        `${'A'.repeat(42)}=`,
        '\u0000'.repeat(43),
        '🙂'.repeat(20),
      ])
        assertSigninFailed(await verifyLink(t, token), profile, 401, JSON.stringify(token));
      assertSigninFailed(
        await postFrom(t, VERIFY[0], { token: 'E'.repeat(43), extra: { deep: [1, 2] } }),
        profile,
        401,
        'an unknown field',
      );
      for (const code of ['', 'abcdef', '12345', '1234567', '١٢٣٤٥٦', '12 34 56 78'])
        assertSigninFailed(
          await postFrom(t, VERIFY[1], { email: 'a@example.com', code }),
          profile,
          401,
          JSON.stringify(code),
        );
    });
  }

  test('redirectTo: another origin, //host, javascript:, credentials, a backslash, a look-alike origin: 400 VALIDATION_FAILED and nothing mailed', async () => {
    const t = apps.b;
    const u = await register(t);
    for (const target of [
      'https://evil.example/x',
      '//evil.example/x',
      '/\\evil.example',
      'javascript:alert(1)',
      'data:text/html,hi',
      `https://user:pw@${CORS_ORIGIN.slice('https://'.length)}/`,
      `${CORS_ORIGIN}.evil.example/`,
      `${PUBLIC_URL}.evil.example/`,
      'http://app.example.com/',
      '',
      '/a\nb',
    ]) {
      const address = freshAddress();
      const res = await askLink(t, u.email, { redirectTo: target }, { address });
      assertValidation(res, 'redirectTo', JSON.stringify(target));
      assert.equal(await asksFrom(address), 0, `${JSON.stringify(target)}: nothing recorded`);
    }
    await settle(db());
    assert.deepEqual(signinMails(smtp, u.email), [], 'nothing mailed');
    assert.deepEqual(await mailSigninRows(db(), u.email), []);
  });

  test('redirectTo: a path on PUBLIC_URL, PUBLIC_URL itself, an origin of CORS_ORIGINS, and none (/account): Usher-Redirect-To after the link', async () => {
    const t = apps.a;
    for (const [target, expected] of [
      ['/welcome?from=mail#top', `${PUBLIC_URL}/welcome?from=mail#top`],
      [`${PUBLIC_URL}/settings`, `${PUBLIC_URL}/settings`],
      [`${CORS_ORIGIN}/after-signin`, `${CORS_ORIGIN}/after-signin`],
      [undefined, `${PUBLIC_URL}/account`],
    ] as const) {
      const u = await register(t);
      assertAccepted(
        await askLink(t, u.email, target === undefined ? {} : { redirectTo: target }),
        String(target),
      );
      const [token] = await linkTokens(smtp, u.email);
      const res = await verifyLink(t, token);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['usher-redirect-to'], expected, String(target));
    }
  });
});
