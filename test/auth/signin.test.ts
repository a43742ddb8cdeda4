import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaksSecret, newUser, profileApps, register, startApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

const B_FAILURE_KEYS = ['error', 'message'];

describeEachStore('POST /api/signin', (store) => {
  const { a, b } = profileApps(store);

  test('SPEC 4.1 rules 1-2 (A): the right email and password give 200 and exactly the user object', async () => {
    const u = await register(a);
    const res = await a.post('/api/signin', { email: u.email, password: u.password });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(res.json(), { id: Number(u.id), email: u.email, name: u.name });
    assert.equal(leaksSecret(res.body, [u.password]), false);
  });

  test('SPEC 4.1 (B): success is an object with one key, user, holding the user without password', async () => {
    const u = await register(b);
    const res = await b.post('/api/signin', { email: u.email, password: u.password });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(Object.keys(body), ['user']);
    assert.deepEqual(Object.keys(body.user).sort(), ['createdAt', 'email', 'emailVerified', 'id', 'name']);
    assert.equal(body.user.id, Number(u.id));
    assert.equal(body.error, undefined);
    assert.equal(leaksSecret(res.body, [u.password]), false);
  });

  test('SPEC 7 (A): a wrong password is 401 with exactly {"error":"SIGNIN_FAILED"}', async () => {
    const u = await register(a);
    const res = await a.post('/api/signin', { email: u.email, password: `${u.password}x` });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(res.json(), { error: 'SIGNIN_FAILED' });
  });

  test('SPEC 7 (B): a wrong password is 401 with exactly error SIGNIN_FAILED and a string message', async () => {
    const u = await register(b);
    const res = await b.post('/api/signin', { email: u.email, password: 'not-the-password' });
    assert.equal(res.statusCode, 401);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), B_FAILURE_KEYS);
    assert.equal(body.error, 'SIGNIN_FAILED');
    assert.equal(typeof body.message, 'string');
  });

  for (const t of [
    { name: 'a', app: () => a },
    { name: 'b', app: () => b },
  ]) {
    test(`CONTRACT (${t.name}): an unknown email and a wrong password give the same status and body`, async () => {
      const u = await register(t.app());
      const wrong = await t.app().post('/api/signin', { email: u.email, password: 'wrong-password' });
      const unknown = await t
        .app()
        .post('/api/signin', { email: `nobody.${u.email}`, password: 'wrong-password' });
      assert.equal(unknown.statusCode, 401);
      assert.equal(unknown.statusCode, wrong.statusCode);
      assert.equal(unknown.body, wrong.body);
    });

    test(`SPEC 2 / CONTRACT (${t.name}): an absent email or password counts as empty and fails with 401`, async () => {
      const u = await register(t.app());
      for (const body of [{}, { email: u.email }, { password: u.password }, { email: '', password: '' }]) {
        const res = await t.app().post('/api/signin', body);
        assert.equal(res.statusCode, 401, JSON.stringify(body));
        assert.equal(res.json().error, 'SIGNIN_FAILED');
      }
    });

    test(`CONTRACT (${t.name}): emails compare case-insensitively with surrounding whitespace trimmed`, async () => {
      const u = await register(t.app(), newUser({ email: `Mixed.Case.${Date.now()}@Example.COM` }));
      const res = await t
        .app()
        .post('/api/signin', { email: `  ${u.email.toUpperCase()}\t`, password: u.password });
      assert.equal(res.statusCode, 200);
      const user = t.name === 'a' ? res.json() : res.json().user;
      assert.equal(user.email, u.email, 'the email is shown as registered');
    });

    test(`CONTRACT (${t.name}): a body that is not a JSON object, or a non-string field, is 400 SIGNIN_FAILED`, async () => {
      const u = await register(t.app());
      for (const body of [
        '[]',
        '"text"',
        '42',
        'null',
        JSON.stringify({ email: u.email, password: 12345678 }),
        JSON.stringify({ email: null, password: u.password }),
        JSON.stringify({ email: [u.email], password: u.password }),
        JSON.stringify({ email: u.email, password: { $ne: '' } }),
      ]) {
        const res = await t.app().post('/api/signin', body);
        assert.equal(res.statusCode, 400, body);
        const json = res.json();
        assert.equal(json.error, 'SIGNIN_FAILED', body);
        assert.deepEqual(Object.keys(json).sort(), t.name === 'a' ? ['error'] : B_FAILURE_KEYS);
      }
    });

    test(`CONTRACT (${t.name}): sign-in ignores fields it does not use`, async () => {
      const u = await register(t.app());
      const res = await t
        .app()
        .post('/api/signin', { email: u.email, password: u.password, remember: true, x: null });
      assert.equal(res.statusCode, 200);
    });

    test(`CONTRACT (${t.name}): a failure body never tells whether the email exists`, async () => {
      const responses = await Promise.all([
        t.app().post('/api/signin', { email: 'missing@example.com', password: 'whatever1' }),
        t.app().post('/api/signin', { email: (await register(t.app())).email, password: 'whatever1' }),
      ]);
      assert.equal(responses[0]!.body, responses[1]!.body);
    });
  }

  test('CONTRACT: passwords are stored as argon2id PHC strings with a 16-byte salt, never in plain text', async () => {
    const u = await register(a);
    const database = openTestDatabase(store);
    try {
      const row = await database.db
        .selectFrom('password_credentials')
        .select('hash as password_hash')
        .where('user_id', '=', u.id)
        .executeTakeFirstOrThrow();
      assert.match(
        row.password_hash,
        /^\$argon2id\$v=19\$m=1024,t=1,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/,
      );
      assert.ok(!row.password_hash.includes(u.password));
    } finally {
      await database.close();
    }
  });

  test('CONTRACT: a hash made with older parameters is re-hashed at the next successful sign-in', async () => {
    const u = await register(a);
    const stronger = await startApp(store, 'a', {
      passwordHash: { memoryKiB: 2048, passes: 2, parallelism: 1, concurrency: 2, queueLimit: 1000 },
    });
    const database = openTestDatabase(store);
    const hashOf = async () =>
      (
        await database.db
          .selectFrom('password_credentials')
          .select('hash as password_hash')
          .where('user_id', '=', u.id)
          .executeTakeFirstOrThrow()
      ).password_hash;
    try {
      const wrong = await stronger.post('/api/signin', { email: u.email, password: 'wrong-password' });
      assert.equal(wrong.statusCode, 401);
      assert.match(await hashOf(), /\$m=1024,t=1,p=1\$/, 'a failed sign-in changes nothing');
      const res = await stronger.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 200);
      assert.match(await hashOf(), /\$m=2048,t=2,p=1\$/);
      const again = await stronger.post('/api/signin', { email: u.email, password: u.password });
      assert.equal(again.statusCode, 200, 'the upgraded hash verifies');
    } finally {
      await database.close();
      await stronger.close();
    }
  });

  test('CONTRACT: passwords are compared after NFKC, so NFC, NFD and compatibility forms are one password', async () => {
    const nfc = 'Caf\u00e9-cr\u00e8me-42';
    const u = await register(b, newUser({ password: nfc }));
    for (const form of [nfc.normalize('NFD'), 'Caf\u0065\u0301-cr\u00e8me-\uff14\uff12']) {
      const res = await b.post('/api/signin', { email: u.email, password: form });
      assert.equal(res.statusCode, 200, JSON.stringify(form));
    }
  });

  test('CONTRACT: an unknown email costs a dummy hash, about the time of a wrong password', async () => {
    // A ratio within one run, not an absolute time: with an expensive hash, a lookup that skipped
    // hashing for unknown emails would answer 100 times faster than a wrong password.
    const slow = await startApp(store, 'b', {
      passwordHash: { memoryKiB: 32768, passes: 3, parallelism: 1, concurrency: 1, queueLimit: 1000 },
    });
    try {
      const u = await register(slow);
      const median = async (email: string) => {
        const times: number[] = [];
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          const res = await slow.post('/api/signin', { email, password: 'wrong-password' });
          times.push(performance.now() - started);
          assert.equal(res.statusCode, 401);
        }
        return times.sort((x, y) => x - y)[2]!;
      };
      const wrong = await median(u.email);
      const unknown = await median(`ghost.${u.email}`);
      assert.ok(
        unknown > wrong * 0.5,
        `unknown ${unknown.toFixed(1)} ms vs wrong password ${wrong.toFixed(1)} ms`,
      );
    } finally {
      await slow.close();
    }
  });

  test('CONTRACT: no log line holds the password or its hash', async () => {
    const u = await register(b);
    await b.post('/api/signin', { email: u.email, password: u.password });
    await b.post('/api/signin', { email: u.email, password: 'Wrong-Secret-99' });
    const text = b.logs.join('');
    assert.ok(text.includes('sign-in attempt'), 'sign-in attempts are logged');
    assert.equal(leaksSecret(text, [u.password, 'Wrong-Secret-99']), false);
  });
});
