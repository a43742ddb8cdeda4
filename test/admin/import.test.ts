// POST /api/admin/users/import (issue 31, CONTRACT "Users from other systems"), black-box on both
// stores: only an admin; JSON lines in, every line checked before any is written; one bad line
// (an unknown hash format, an absurd cost, both password and passwordHash, a misspelt field, not
// JSON) refuses the whole body with each bad line's number and nothing imported; a good body is
// imported with what its lines say (emailVerified, createdAt, the old hash), without mail, and can
// be sent again (its emails are skipped); the audit log has each account and the request.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { eventually, onlyRecord } from '../audit/support.ts';
import { leaksSecret, NO_THROTTLE, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { argon2Phc, b64, madeHashes } from '../passwords/made-hashes.ts';
import { adminView, as, assertError, type SignedIn, staff } from './support.ts';

const MADE = madeHashes();
const bcrypt = MADE[0]!;
const django = MADE.find((m) => m.label.startsWith('Django pbkdf2_sha256'))!;

const uniqueEmail = (label: string) => `${label}.${randomBytes(5).toString('hex')}@import.example`;
const salt = b64(randomBytes(16));
const key = b64(randomBytes(32));

/** Hashes well formed but beyond a bound, each with the words its refusal has. */
const ABSURD: Array<[string, RegExp]> = [
  [`$2b$15$${'a'.repeat(53)}`, /bcrypt cost 15 is outside 4 to 14/],
  [`$2b$03$${'a'.repeat(53)}`, /bcrypt cost 3 is outside 4 to 14/],
  [`$pbkdf2-sha256$i=3000001$${salt}$${key}`, /PBKDF2-SHA256 3000001 iterations is above 3,000,000/],
  [`$pbkdf2-sha256$i=2000000$${salt}$${b64(randomBytes(64))}`, /2000000 iterations × 2 blocks/],
  [
    `$pbkdf2-sha512$1000001$${salt}$${b64(randomBytes(64))}`,
    /PBKDF2-SHA512 1000001 iterations is above 1,000,000/,
  ],
  [`pbkdf2_sha256$3000001$seasalt$${key}=`, /PBKDF2-SHA256 3000001 iterations/],
  [`$scrypt$ln=17,r=8,p=1$${salt}$${key}`, /scrypt 128 × N × r = 128 MiB is above 64 MiB/],
  [`$scrypt$ln=14,r=8,p=17$${salt}$${key}`, /scrypt p=17 is above 16/],
  [`$argon2id$v=19$m=262145,t=1,p=1$${salt}$${key}`, /argon2 m=262145 is outside 8 \(8 × p\) to 262144 KiB/],
  [`$argon2id$v=19$m=65536,t=17,p=1$${salt}$${key}`, /argon2 t=17 is outside 1 to 16/],
  [`$argon2id$v=19$m=65536,t=1,p=17$${salt}$${key}`, /argon2 p=17 is outside 1 to 16/],
  [`$argon2i$v=19$m=131072,t=5,p=1$${salt}$${key}`, /argon2 m × t = 655360 is above 524288/],
  [`$argon2id$v=16$m=65536,t=1,p=1$${salt}$${key}`, /only version 1\.3 \(v=19\)/],
  [`$argon2id$m=65536,t=1,p=1$${salt}$${key}`, /version 1\.0 \(no v=\)/],
  [`$argon2id$v=19$m=65536,t=1,p=1,keyid=abc$${salt}$${key}`, /no keyid or data/],
  [`$argon2id$v=19$m=65536,t=1,p=1$${b64(randomBytes(4))}$${key}`, /salt is 4 bytes; 8 to 64 are accepted/],
  ['md5$seasalt$3f86d0d3d465b7b458c231bf3555c0e3', /is not a format Usher verifies/],
  ['{SSHA}abcdefgh', /is not a format Usher verifies/],
];

describeEachStore('admin API: users import', (store: Store) => {
  let t: TestApp;
  let database: Database;
  let admin: SignedIn;
  let support: SignedIn;
  let user: SignedIn;
  before(async () => {
    t = await startApp(store, 'b', { throttle: { ...NO_THROTTLE } });
    database = openTestDatabase(store);
    admin = await staff(t, store, 'admin');
    support = await staff(t, store, 'support');
    user = await staff(t, store, 'user');
  });
  after(async () => {
    await t?.close();
    await database?.close();
  });

  const post = (token: string | undefined, body: string, type = 'application/x-ndjson') =>
    t.inject({
      method: 'POST',
      url: '/api/admin/users/import',
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': type },
      payload: body,
    });
  const lines = (...rows: unknown[]) =>
    rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n');

  /** The id of the account with this email, or undefined (through the admin search). */
  async function idOf(email: string): Promise<bigint | undefined> {
    const res = await as(t, admin.token).get(`/api/admin/users?q=${encodeURIComponent(email)}`);
    assert.equal(res.statusCode, 200, res.body);
    const found = (res.json() as Array<{ id: number; email: string }>).find((u) => u.email === email);
    return found && BigInt(found.id);
  }

  test('only an admin: 401 without a session, 403 for a user and for support, and nothing is imported', async () => {
    const email = uniqueEmail('guarded');
    const body = lines({ email, name: 'Guarded', passwordHash: bcrypt.hash });
    assertError(await post(undefined, body), 401, 'UNAUTHENTICATED', 'no session');
    assertError(await post(user.token, body), 403, 'FORBIDDEN', 'a user');
    assertError(await post(support.token, body), 403, 'FORBIDDEN', 'support');
    assert.equal(await idOf(email), undefined);
    await eventually(t, admin.token, 'admin.refused', (r) => r.actorId === Number(support.id));
  });

  test('a good body: 200 with the report; each account as its line says, with its old password and no mail', async () => {
    const [hashed, verified, plain, bare] = ['hashed', 'verified', 'plain', 'bare'].map(uniqueEmail);
    const res = await post(
      admin.token,
      `\uFEFF${lines(
        { email: hashed!, name: 'Hashed', passwordHash: bcrypt.hash, createdAt: '2019-03-04T05:06:07Z' },
        '',
        {
          email: verified!,
          name: 'Verified',
          passwordHash: django.hash,
          emailVerified: true,
          createdAt: '2021-06-01T10:00:00.5+02:00',
          ignored: { nested: 'fields' },
        },
        { email: plain!, name: 'Plain', password: 'plain old pass 1', emailVerified: false },
        { email: bare!, name: 'Bare', password: null, passwordHash: null },
      )}\r\n`,
    );
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { lines: 4, imported: 4, skipped: 0 });
    assert.ok(!leaksSecret(res.body, [bcrypt.hash, django.hash, 'plain old pass 1']), res.body);

    const viewOf = async (email: string) => adminView(t, admin.token, (await idOf(email))!);
    const first = await viewOf(hashed!);
    assert.equal(first.createdAt, '2019-03-04T05:06:07.000Z');
    assert.equal(first.emailVerified, false);
    assert.equal(first.password, true);
    const second = await viewOf(verified!);
    assert.equal(second.createdAt, '2021-06-01T08:00:00.500Z');
    assert.equal(second.emailVerified, true);
    assert.equal((await viewOf(bare!)).password, false, 'no password: an account without one');

    assert.equal((await t.post('/api/signin', { email: hashed, password: bcrypt.password })).statusCode, 200);
    assert.equal(
      (await t.post('/api/signin', { email: verified, password: django.password })).statusCode,
      200,
    );
    assert.equal(
      (await t.post('/api/signin', { email: plain, password: 'plain old pass 1' })).statusCode,
      200,
    );

    const mails = await database.db
      .selectFrom('mail_outbox')
      .select('recipient')
      .where('recipient', 'in', [hashed!, verified!, plain!, bare!])
      .execute();
    assert.deepEqual(mails, [], 'imported users are sent nothing');

    const again = await post(
      admin.token,
      lines({ email: hashed!.toUpperCase(), name: 'Again', passwordHash: bcrypt.hash }),
    );
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), { lines: 1, imported: 0, skipped: 1 }, 'sent again: skipped');
  });

  test('one bad line refuses the whole body, naming every bad line; nothing is imported', async () => {
    const [good1, good2, bad] = ['good1', 'good2', 'bad'].map(uniqueEmail);
    const unknown = 'sha1$seasalt$cff36ea83f5706ce9aa7454e63e431fc726b2dc8';
    const res = await post(
      admin.token,
      lines(
        { email: good1, name: 'Good One', passwordHash: bcrypt.hash }, // 1
        { email: bad, name: 'Unknown', passwordHash: unknown }, // 2
        { email: bad, name: 'Costly', passwordHash: ABSURD[0]![0] }, // 3
        '', // 4
        { email: bad, name: 'Both', password: 'both of them 1', passwordHash: bcrypt.hash }, // 5
        { email: bad, name: 'Misspelt', password_hash: bcrypt.hash }, // 6
        '{"email": "not json', // 7
        { email: 'not an email', name: 'No', passwordHash: bcrypt.hash }, // 8
        { email: bad, name: 'Unverified', emailVerified: 'yes' }, // 9
        { email: bad, name: 'Later', createdAt: '2999-01-01T00:00:00Z' }, // 10
        { email: good2, name: 'Good Two', passwordHash: django.hash }, // 11
      ),
    );
    assertError(res, 400, 'VALIDATION_FAILED', 'bad lines');
    const { message } = res.json() as { message: string };
    assert.match(message, /^8 of 10 lines refused; nothing was imported\./);
    const named = [...message.matchAll(/ line (\d+): /g)].map((m) => Number(m[1]));
    assert.deepEqual(named, [2, 3, 5, 6, 7, 8, 9, 10]);
    assert.match(message, /line 2: passwordHash: is not a format Usher verifies/);
    assert.match(message, /line 3: passwordHash: bcrypt cost 15/);
    assert.match(message, /line 5: passwordHash: cannot come with password/);
    assert.match(
      message,
      /line 6: password_hash: is not a field of an import line; the field is passwordHash/,
    );
    assert.match(message, /line 7: not a JSON object/);
    assert.match(message, /line 8: email: /);
    assert.match(message, /line 9: emailVerified: must be true or false/);
    assert.match(message, /line 10: createdAt: must not be in the future/);
    assert.ok(!message.includes(unknown) && !message.includes(bcrypt.hash), 'no hash repeated');
    assert.equal(await idOf(good1!), undefined, 'nothing imported');
    assert.equal(await idOf(good2!), undefined, 'nothing imported');
  });

  test('a hash with an absurd cost, or a form Usher does not verify, is a bad line', async () => {
    for (const [hash, reason] of ABSURD) {
      const email = uniqueEmail('absurd');
      const res = await post(admin.token, lines({ email, name: 'Absurd', passwordHash: hash }));
      assertError(res, 400, 'VALIDATION_FAILED', hash);
      assert.match(
        res.json().message,
        /^1 of 1 lines refused; nothing was imported\. line 1: passwordHash: /,
        hash,
      );
      assert.match(res.json().message, reason, hash);
      assert.equal(await idOf(email), undefined, hash);
    }
    // At the bounds: taken (argon2 m × t exactly 524,288 KiB, scrypt exactly 64 MiB).
    const atBounds = [
      argon2Phc('argon2id', 'x', { m: 8, t: 1, p: 1 }).replace('m=8,t=1', 'm=262144,t=2'),
      `$scrypt$ln=16,r=8,p=1$${salt}$${key}`,
      `$2b$14$${'a'.repeat(53)}`,
      `$pbkdf2-sha256$i=3000000$${salt}$${key}`,
    ];
    const res = await post(
      admin.token,
      lines(
        ...atBounds.map((passwordHash) => ({ email: uniqueEmail('bound'), name: 'Bound', passwordHash })),
      ),
    );
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().imported, atBounds.length);
  });

  test('bodies the route does not read: empty, too many lines, not JSON lines, too large', async () => {
    assertError(await post(admin.token, ''), 400, 'VALIDATION_FAILED', 'empty');
    assertError(await post(admin.token, '\n \r\n'), 400, 'VALIDATION_FAILED', 'blank lines only');
    const many = Array.from({ length: 1001 }, (_, i) => ({ email: `many${i}@import.example`, name: 'Many' }));
    const tooMany = await post(admin.token, lines(...many));
    assertError(tooMany, 400, 'VALIDATION_FAILED', 'too many lines');
    assert.match(tooMany.json().message, /more than 1000 lines/);
    assert.equal(await idOf('many0@import.example'), undefined);
    const json = await post(
      admin.token,
      JSON.stringify({ email: uniqueEmail('json'), name: 'J' }),
      'application/json',
    );
    assertError(json, 415, 'UNSUPPORTED_MEDIA_TYPE', 'application/json');
    assert.match(json.json().message, /application\/x-ndjson/);
    const large = await post(admin.token, 'x'.repeat(4 * 1024 * 1024 + 1));
    assertError(large, 413, 'PAYLOAD_TOO_LARGE', 'too large');
  });

  test('audited: each account as user.created (via import) by the admin, and the request as admin.users.imported; a refused body as admin.refused', async () => {
    const email = uniqueEmail('audited');
    const agent = `ImportTest/${randomBytes(4).toString('hex')}`;
    const res = await t.inject({
      method: 'POST',
      url: '/api/admin/users/import',
      headers: {
        authorization: `Bearer ${admin.token}`,
        'content-type': 'application/x-ndjson',
        'user-agent': agent,
      },
      payload: lines(
        { email, name: 'Audited', passwordHash: bcrypt.hash },
        { email: admin.email, name: 'Me' },
      ),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { lines: 2, imported: 1, skipped: 1 });
    const id = (await idOf(email))!;
    const created = await onlyRecord(t, admin.token, id, 'user.created');
    assert.equal(created.actorId, Number(admin.id));
    assert.deepEqual(created.details, { via: 'import' });
    assert.equal(created.userAgent, agent);
    const request = await eventually(t, admin.token, 'admin.users.imported', (r) => r.userAgent === agent);
    assert.equal(request.actorId, Number(admin.id));
    assert.equal(request.userId, null);
    assert.deepEqual(request.details, { lines: 2, imported: 1, skipped: 1 });
    assert.ok(!leaksSecret(JSON.stringify([created, request]), [bcrypt.hash]));

    const refusedAgent = `${agent}-refused`;
    const refused = await t.inject({
      method: 'POST',
      url: '/api/admin/users/import',
      headers: {
        authorization: `Bearer ${admin.token}`,
        'content-type': 'application/x-ndjson',
        'user-agent': refusedAgent,
      },
      payload: lines({ email: uniqueEmail('refused'), name: 'R', passwordHash: 'nope' }),
    });
    assert.equal(refused.statusCode, 400, refused.body);
    const record = await eventually(t, admin.token, 'admin.refused', (r) => r.userAgent === refusedAgent);
    assert.equal(record.actorId, Number(admin.id));
    assert.equal(record.details.route, '/api/admin/users/import');
    assert.equal(record.details.status, 400);
  });
});
