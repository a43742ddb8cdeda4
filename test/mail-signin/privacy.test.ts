// Sign-in by mail tells no one which emails have accounts, and keeps no secret where it could leak
// (CONTRACT "Sign-in by mail, languages, and users from other systems"; the project's rule: nothing
// secret in any response or log). Shown by what the server did, never by how long it took: the
// asks' answers (status, headers but the date and request id, body) and the rows they write are
// the same for a known and an unknown email; a code for an unknown email answers exactly as a wrong
// code for a known one, and a link never mailed as a used one. No link token or code is in a log
// line, an answer (but the second-factor ticket, which is no token of the mail), or a stored row
// (the mail outbox aside: it holds the mail until it is sent, as it does a reset link).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Profile } from '../../src/config.ts';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { mailTo } from '../helpers/mail.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  askCode,
  askLink,
  assertAccepted,
  assertSameAnswer,
  assertSigninFailed,
  codes,
  freshAddress,
  linkTokens,
  mailSigninRows,
  otherCode,
  PROFILES,
  PUBLIC_URL,
  settle,
  storedText,
  storeReader,
  type TestDatabase,
  unknownEmail,
  verifyCode,
  verifyLink,
} from './support.ts';

/** `code` as a number of its own in `text` (not a part of a longer run of digits). */
const holdsCode = (text: string, code: string) => new RegExp(`(?<![0-9])${code}(?![0-9])`).test(text);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The asks recorded from `address`, as the server wrote them (but their ids, times and emails). */
async function asksFrom(db: TestDatabase, address: string) {
  return db.db
    .selectFrom('reset_requests')
    .select(['kind', 'address', 'done', 'redirect_to', 'locale'])
    .where('address', '=', address)
    .orderBy('id')
    .execute();
}

describeEachStore('Sign-in by mail: enumeration and secrets', (store) => {
  let smtp: TestSmtp;
  const apps = {} as Record<Profile, TestApp>;
  const db = storeReader(store);

  before(async () => {
    smtp = await startSmtp();
    for (const profile of PROFILES)
      apps[profile] = await startApp(store, profile, { publicUrl: PUBLIC_URL, mail: mailTo(smtp.url) });
  });
  after(async () => {
    for (const t of Object.values(apps)) await t?.close();
    await smtp?.close();
  });

  for (const profile of PROFILES) {
    test(`[${profile}] a link ask and a code ask answer a known and an unknown email alike, and record them alike`, async () => {
      const t = apps[profile];
      const known = await register(t);
      const unknown = unknownEmail();
      for (const kind of ['link', 'code'] as const) {
        const ask = (email: string, address: string) =>
          kind === 'link'
            ? askLink(t, email, { redirectTo: '/next' }, { address })
            : askCode(t, email, { address });
        const knownAddress = freshAddress();
        const unknownAddress = freshAddress();
        const forKnown = await ask(known.email, knownAddress);
        const forUnknown = await ask(unknown, unknownAddress);
        assertAccepted(forKnown, `${kind}: known`);
        assertSameAnswer(forKnown, forUnknown, `${kind}: known and unknown`);
        assert.equal(forKnown.headers['cache-control'], 'no-store');

        await settle(db());
        const rows = (address: string) =>
          asksFrom(db(), address).then((r) =>
            r.map((row) => ({ ...row, address: '', done: Number(row.done) })),
          );
        assert.deepEqual(await rows(unknownAddress), await rows(knownAddress), `${kind}: the same row`);
        assert.equal((await rows(knownAddress)).length, 1);
      }
    });

    test(`[${profile}] a code for an email with no account answers exactly as a wrong code for a known one (with or without a live code)`, async () => {
      const t = apps[profile];
      const withCode = await register(t);
      const withoutCode = await register(t);
      assertAccepted(await askCode(t, withCode.email), 'ask');
      const [code] = await codes(smtp, withCode.email);
      const address = freshAddress();
      const answers: [string, LightMyRequestResponse][] = [
        [
          'a wrong code for a known email',
          await verifyCode(t, withCode.email, otherCode(code!), { address }),
        ],
        [
          'a code for a known email with none live',
          await verifyCode(t, withoutCode.email, code, { address }),
        ],
        ['a code for an email with no account', await verifyCode(t, unknownEmail(), code, { address })],
        ['a code not of six digits', await verifyCode(t, unknownEmail(), 'abc', { address })],
      ];
      assertSigninFailed(answers[0]![1], profile, 401, answers[0]![0]);
      for (const [what, res] of answers.slice(1)) assertSameAnswer(answers[0]![1], res, what);
    });

    test(`[${profile}] a link never mailed answers exactly as a used one, and as a token of another shape`, async () => {
      const t = apps[profile];
      const u = await register(t);
      assertAccepted(await askLink(t, u.email), 'ask');
      const [token] = await linkTokens(smtp, u.email);
      assert.equal((await verifyLink(t, token)).statusCode, 200);
      const used = await verifyLink(t, token);
      assertSigninFailed(used, profile, 401, 'a used link');
      for (const [what, other] of [
        ['never mailed', 'D'.repeat(43)],
        ['too short', 'abc'],
        ['not base64url', '!'.repeat(43)],
        ['empty', ''],
      ] as const)
        assertSameAnswer(used, await verifyLink(t, other), what);
    });
  }

  test('no link token or code in any log line, answer or stored row; stored only as hashes that an unkeyed hash of the code does not match', async () => {
    const t = apps.b;
    const u = await register(t);
    const answers: LightMyRequestResponse[] = [];
    answers.push(await askLink(t, u.email, { redirectTo: '/after' }));
    answers.push(await askCode(t, u.email));
    const [token] = await linkTokens(smtp, u.email);
    const [code] = await codes(smtp, u.email);
    assert.match(token!, /^[A-Za-z0-9_-]{43}$/, 'a 256-bit token');

    const rows = await mailSigninRows(db(), u.email);
    assert.equal(rows.length, 2);
    const link = rows.find((r) => r.kind === 'link')!;
    const stored = rows.find((r) => r.kind === 'code')!;
    assert.equal(link.secret_hash, sha256(token!), "the link's SHA-256");
    assert.match(stored.secret_hash, /^[0-9a-f]{64}$/);
    assert.notEqual(stored.secret_hash, sha256(code!), 'not an unkeyed hash of the code');
    assert.match(String(stored.salt), /^[0-9a-f]{32}$/, 'a key of its own');

    // Wrong codes, and a code and a link each used once (the code signs in, voiding the link).
    answers.push(await verifyCode(t, u.email, otherCode(code!)));
    answers.push(await verifyCode(t, u.email, `${code!.slice(0, 3)} ${code!.slice(3)}`));
    answers.push(await verifyLink(t, token));
    answers.push(await verifyCode(t, u.email, code));
    assert.equal(answers[3]!.statusCode, 200, `the code with a space: ${answers[3]!.body}`);

    const logs = t.logs.join('');
    assert.ok(logs.length > 0);
    assert.ok(!logs.includes(token!), 'the token is in the logs');
    assert.ok(!holdsCode(logs, code!), 'the code is in the logs');
    for (const res of answers) {
      const text = `${JSON.stringify(res.headers)}\n${res.body}`;
      assert.ok(!text.includes(token!), `the token is in an answer: ${text}`);
      assert.ok(!holdsCode(text, code!), `the code is in an answer: ${text}`);
    }
    const everything = await storedText(db(), ['mail_outbox']);
    assert.ok(everything.includes(link.secret_hash), 'the dump covers mail_signins');
    assert.ok(!everything.includes(token!), 'the token is stored');
    assert.ok(!holdsCode(everything, code!), 'the code is stored');
    assert.ok(!everything.includes(sha256(code!)), "the code's unkeyed hash is stored");
  });
});
