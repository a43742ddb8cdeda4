import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaksSecret, newUser, profileApps, register } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

describeEachStore('POST /api/users (registration)', (store) => {
  const { a, b } = profileApps(store);

  test("CONTRACT: registration gives 201, the profile's user object and Location: /api/users/{id}", async () => {
    const body = newUser();
    const resA = await a.post('/api/users', body);
    assert.equal(resA.statusCode, 201);
    const userA = resA.json();
    assert.deepEqual(Object.keys(userA).sort(), ['email', 'id', 'name']);
    assert.equal(resA.headers.location, `/api/users/${userA.id}`);
    assert.equal(leaksSecret(resA.body, [body.password]), false);

    const resB = await b.post('/api/users', newUser());
    assert.equal(resB.statusCode, 201);
    assert.deepEqual(Object.keys(resB.json()).sort(), ['createdAt', 'email', 'emailVerified', 'id', 'name']);
    assert.equal(resB.headers.location, `/api/users/${resB.json().id}`);
  });

  test('CONTRACT: the registered user can be read back and signs in', async () => {
    const u = await register(b);
    assert.equal((await b.get(`/api/users/${u.id}`)).json().email, u.email);
    assert.equal((await b.post('/api/signin', { email: u.email, password: u.password })).statusCode, 200);
  });

  test('CONTRACT: a duplicate email in any letter case or padding is 409 EMAIL_TAKEN', async () => {
    const u = await register(a);
    for (const email of [u.email, u.email.toUpperCase(), `  ${u.email}  `]) {
      const res = await b.post('/api/users', newUser({ email }));
      assert.equal(res.statusCode, 409, email);
      assert.equal(res.json().error, 'EMAIL_TAKEN');
      assert.equal(typeof res.json().message, 'string');
    }
  });

  test('CONTRACT: the email is shown as registered (case kept, surrounding whitespace trimmed)', async () => {
    const res = await b.post('/api/users', newUser({ email: '  Grace.Hopper@Navy.MIL ', name: '  Grace  ' }));
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().email, 'Grace.Hopper@Navy.MIL');
    assert.equal(res.json().name, 'Grace');
  });

  const invalid: Array<[string, unknown, string]> = [
    ['a missing email', { name: 'N', password: 'long-enough' }, 'email'],
    ['a missing name', { email: 'x1@example.com', password: 'long-enough' }, 'name'],
    ['a missing password', { email: 'x2@example.com', name: 'N' }, 'password'],
    ['an email that is not an address', newUser({ email: 'not-an-email' }), 'email'],
    ['an email with a space', newUser({ email: 'a b@example.com' }), 'email'],
    ['an email without a domain dot', newUser({ email: 'a@localhost' }), 'email'],
    ['an email over 254 characters', newUser({ email: `${'a'.repeat(243)}@example.com` }), 'email'],
    ['an empty name', newUser({ name: '' }), 'name'],
    ['a name of only spaces', newUser({ name: '   ' }), 'name'],
    ['a name over 100 characters', newUser({ name: 'n'.repeat(101) }), 'name'],
    ['a password of 7 characters', newUser({ password: '1234567' }), 'password'],
    ['a password over 1024 characters', newUser({ password: 'p'.repeat(1025) }), 'password'],
    ['a number where a string belongs (no coercion)', { ...newUser(), password: 12345678901 }, 'password'],
    ['null where a string belongs (no coercion)', { ...newUser(), name: null }, 'name'],
    ['an unknown field', { ...newUser(), role: 'admin' }, 'role'],
    ['an array body', [newUser()], 'body'],
    ['a string body', 'just text', 'body'],
  ];
  for (const [what, body, field] of invalid) {
    test(`CONTRACT: ${what} is 400 VALIDATION_FAILED naming ${field}`, async () => {
      const res = await b.post('/api/users', body === 'just text' ? '"just text"' : body);
      assert.equal(res.statusCode, 400, res.body);
      const json = res.json();
      assert.deepEqual(Object.keys(json).sort(), ['error', 'message']);
      assert.equal(json.error, 'VALIDATION_FAILED');
      assert.match(json.message, new RegExp(`^${field}\\b`));
    });
  }

  test('CONTRACT: an email of exactly 254 characters and a name of 100 are accepted', async () => {
    const email = `${'a'.repeat(242)}@example.com`;
    assert.equal(email.length, 254);
    const res = await b.post('/api/users', newUser({ email, name: 'n'.repeat(100) }));
    assert.equal(res.statusCode, 201, res.body);
  });

  test('CONTRACT: password length counts Unicode code points after NFKC, any characters allowed', async () => {
    // 8 astral characters are 16 UTF-16 units but 8 code points: accepted.
    assert.equal((await b.post('/api/users', newUser({ password: '🔑'.repeat(8) }))).statusCode, 201);
    // 7 code points: refused even though it is 14 UTF-16 units.
    assert.equal((await b.post('/api/users', newUser({ password: '🔑'.repeat(7) }))).statusCode, 400);
    // No composition rules: all lower-case letters is fine.
    assert.equal((await b.post('/api/users', newUser({ password: 'abcdefgh' }))).statusCode, 201);
    // A password of exactly 1024 characters is accepted.
    assert.equal((await b.post('/api/users', newUser({ password: 'x'.repeat(1024) }))).statusCode, 201);
  });

  test('CONTRACT: an unknown field is never stored', async () => {
    const res = await b.post('/api/users', { ...newUser(), id: 1, createdAt: '2000-01-01T00:00:00Z' });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().message, /^(id|createdAt)\b/);
  });

  test('CONTRACT: profile A serves registration too (identical beyond the spec)', async () => {
    const res = await a.post('/api/users', newUser());
    assert.equal(res.statusCode, 201);
  });
});
