// Multi-step changes commit together or not at all (issue 12): a failure injected into the second
// step, with a trigger that refuses it in the database itself, must leave the first undone.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { compose } from '../../src/features.ts';
import { asUser, register, signIn, startApp, type TestApp, testConfig } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';

/** Makes every DELETE FROM sessions fail, as a lost connection or a full disk would. */
async function refuseSessionDeletes(database: Database): Promise<() => Promise<void>> {
  if (database.dialect === 'sqlite') {
    await sql`create trigger refuse_session_delete before delete on sessions
      begin select raise(abort, 'injected failure'); end`.execute(database.db);
    return async () => {
      await sql`drop trigger refuse_session_delete`.execute(database.db);
    };
  }
  await sql`create function refuse_session_delete() returns trigger language plpgsql as
    $$ begin raise exception 'injected failure'; end $$`.execute(database.db);
  await sql`create trigger refuse_session_delete before delete on sessions
    for each row execute function refuse_session_delete()`.execute(database.db);
  return async () => {
    await sql`drop trigger refuse_session_delete on sessions`.execute(database.db);
    await sql`drop function refuse_session_delete()`.execute(database.db);
  };
}

const signInStatus = async (t: TestApp, email: string, password: string) =>
  (await t.post('/api/signin', { email, password })).statusCode;

describeEachStore('Transactions', (store: Store) => {
  let t: TestApp;
  let database: Database;
  before(async () => {
    t = await startApp(store, 'b');
    database = openTestDatabase(store);
  });
  after(async () => {
    await database.close();
    await t.close();
  });

  test('ISSUE 12: a password change whose session revocation fails is rolled back: the old password still works, the new one does not', async () => {
    const u = await register(t);
    const me = asUser(t, await signIn(t, u));
    await signIn(t, u); // another session, which the change must end
    const restore = await refuseSessionDeletes(database);
    try {
      const res = await me.put(`/api/users/${u.id}`, {
        email: u.email,
        name: u.name,
        password: 'a-brand-new-pass',
        currentPassword: u.password,
      });
      assert.equal(res.statusCode, 500);
      assert.equal(res.json().error, 'INTERNAL');
    } finally {
      await restore();
    }
    assert.equal(await signInStatus(t, u.email, u.password), 200, 'the old password is still the password');
    assert.equal(await signInStatus(t, u.email, 'a-brand-new-pass'), 401, 'the new password was not saved');
  });

  test('ISSUE 12: the same through the admin CLI’s set-password', async () => {
    const u = await register(t);
    await signIn(t, u); // a session for the change to end
    const services = compose(testConfig(store, 'b'), database);
    const restore = await refuseSessionDeletes(database);
    try {
      await assert.rejects(services.users.users.setPassword(u.email, 'another-new-pass'), /injected failure/);
    } finally {
      await restore();
    }
    assert.equal(await signInStatus(t, u.email, u.password), 200);
    assert.equal(await signInStatus(t, u.email, 'another-new-pass'), 401);
  });

  test('ISSUE 12: without a failure both steps happen: the new password works and the other session ended', async () => {
    const u = await register(t);
    const mine = await signIn(t, u);
    const other = await signIn(t, u);
    const res = await asUser(t, mine).put(`/api/users/${u.id}`, {
      email: u.email,
      name: u.name,
      password: 'a-third-new-pass',
      currentPassword: u.password,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(
      (await asUser(t, other).put(`/api/users/${u.id}`, { email: u.email, name: 'x' })).statusCode,
      401,
    );
    assert.equal(
      (await asUser(t, mine).put(`/api/users/${u.id}`, { email: u.email, name: 'y' })).statusCode,
      200,
    );
    assert.equal(await signInStatus(t, u.email, 'a-third-new-pass'), 200);
  });
});
