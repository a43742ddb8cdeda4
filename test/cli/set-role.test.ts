// `usher users set-role --email E ROLE` (CONTRACT "Administration", issue 29) as an operator runs
// it: a real CLI process on the database of a running app. The role it sets is the one the admin
// API checks, from the user's next request on; a bad role is a usage error (exit 2, with the
// command's usage); an unknown email fails with a non-zero exit.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NO_THROTTLE, newUser, register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { runProcess } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));

describeEachStore('usher users set-role', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b', { throttle: { ...NO_THROTTLE } });
  });
  after(() => t?.close());

  const cli = (...args: string[]) =>
    runProcess(process.execPath, [CLI, ...args], { DATABASE_URL: store.url });
  const adminApi = (token: string, method: 'GET' | 'PATCH' = 'GET', url = '/api/admin/users') =>
    t.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(method === 'PATCH' ? { payload: JSON.stringify({ name: 'Changed by CLI-made staff' }) } : {}),
    });

  test('set-role admin: the admin API works for that user, on the session they already had', async () => {
    const user = await register(t, newUser());
    const token = await signIn(t, user);
    assert.equal((await adminApi(token)).statusCode, 403, 'a user before');
    const run = await cli('users', 'set-role', '--email', user.email, 'admin');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, new RegExp(`user ${user.id} .*is now admin`));
    const search = await adminApi(token);
    assert.equal(search.statusCode, 200, search.body);
    const target = await register(t, newUser());
    const patched = await adminApi(token, 'PATCH', `/api/admin/users/${target.id}`);
    assert.equal(patched.statusCode, 200, patched.body);
    const view = await adminApi(token, 'GET', `/api/admin/users/${user.id}`);
    assert.equal(view.json().role, 'admin');
    // A fresh sign-in is an admin too.
    assert.equal((await adminApi(await signIn(t, user))).statusCode, 200);
  });

  test('set-role support and back to user: reads allowed, changes refused; then nothing (the email in any case)', async () => {
    const admin = await register(t, newUser());
    assert.equal((await cli('users', 'set-role', '--email', admin.email, 'admin')).code, 0);
    const user = await register(t, newUser());
    const token = await signIn(t, user);
    const support = await cli('users', 'set-role', '--email', `  ${user.email.toUpperCase()} `, 'support');
    assert.equal(support.code, 0, support.stderr);
    assert.equal((await adminApi(token)).statusCode, 200);
    const refused = await adminApi(token, 'PATCH', `/api/admin/users/${user.id}`);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().error, 'FORBIDDEN');
    const back = await cli('users', 'set-role', '--email', user.email, 'user');
    assert.equal(back.code, 0, back.stderr);
    const none = await adminApi(token);
    assert.equal(none.statusCode, 403);
    assert.equal(none.json().error, 'FORBIDDEN');
  });

  test('a bad or missing role is a usage error: exit 2 with the usage of set-role, and the role is unchanged', async () => {
    const user = await register(t, newUser());
    const token = await signIn(t, user);
    for (const args of [
      ['users', 'set-role', '--email', user.email, 'root'],
      ['users', 'set-role', '--email', user.email, 'Admin'],
      ['users', 'set-role', '--email', user.email, ''],
      ['users', 'set-role', '--email', user.email],
    ]) {
      const run = await cli(...args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /Usage: usher users set-role --email E ROLE/, args.join(' '));
      assert.match(run.stderr, /user, support or admin/, args.join(' '));
      assert.equal(run.stdout, '');
    }
    const noEmail = await cli('users', 'set-role', 'admin');
    assert.equal(noEmail.code, 2, noEmail.stderr);
    assert.match(noEmail.stderr, /--email is required/);
    assert.match(noEmail.stderr, /Usage: usher users set-role/);
    assert.equal((await adminApi(token)).statusCode, 403, 'still a user');
  });

  test('an unknown email exits non-zero, says so on stderr, and makes nobody admin', async () => {
    const email = `nobody.${process.pid}.${Date.now()}@example.com`;
    const run = await cli('users', 'set-role', '--email', email, 'admin');
    assert.notEqual(run.code, 0);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /USER_NOT_FOUND/);
    assert.equal(run.stdout, '');
    // Registering that email afterwards gives an ordinary user.
    const user = await register(t, newUser({ email }));
    assert.equal((await adminApi(await signIn(t, user))).statusCode, 403);
  });

  test('--help describes set-role', async () => {
    const run = await cli('users', 'set-role', '--help');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Usage: usher users set-role --email E ROLE/);
  });
});
