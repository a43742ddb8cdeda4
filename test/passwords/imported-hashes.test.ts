// Issue 31, "Users from other systems": hashes made by the libraries those systems use
// (test/passwords/made-hashes.ts) imported through POST /api/admin/users/import, then each user
// signs in through POST /api/signin with their old password, in profile A or B: the hash is
// verified by its own algorithm, replaced by Usher's argon2id at that first success, and the next
// sign-in (in the other profile) verifies the new one. A wrong password is a wrong password
// before and after. The present-password checks (password change, account deletion) accept an
// imported hash too; a stored hash beyond the bounds verifies nothing; imported hashes wait in
// the same hash slots as argon2id.
import assert from 'node:assert/strict';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Config, Profile } from '../../src/config.ts';
import type { Database } from '../../src/db/database.ts';
import { PasswordHasher } from '../../src/passwords/hasher.ts';
import { HashOverloadedError } from '../../src/shared/errors.ts';
import { SigninDevicesRepository } from '../../src/signin/device-repository.ts';
import { UsersRepository } from '../../src/users/repository.ts';
import { staff } from '../admin/support.ts';
import { CHEAP_HASH, NO_THROTTLE, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { argon2Phc, b64, madeHashes } from './made-hashes.ts';

const MARK = 'imported:';
/** Usher's own hashes in these tests (CHEAP_HASH's parameters). */
const USHER_ARGON2ID = /^\$argon2id\$v=19\$m=1024,t=1,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/;

/** Made once: bcrypt and scrypt take a while to make. */
const MADE = madeHashes();

let counter = 0;
const email = (label: string) => `${label}.${++counter}.${process.pid}@import.example`;

/** POST /api/admin/users/import with `lines` as JSON lines. */
export function importLines(t: TestApp, token: string, lines: readonly object[]) {
  return t.inject({
    method: 'POST',
    url: '/api/admin/users/import',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
    payload: lines.map((line) => JSON.stringify(line)).join('\n'),
  });
}

describeEachStore('imported password hashes: verified, re-hashed, signed in again', (store: Store) => {
  const apps = {} as Record<Profile, TestApp>;
  const clock = { skewMs: 0, now: () => Date.now() + clock.skewMs };
  let database: Database;
  let admin: string;
  const config: Partial<Config> = { throttle: { ...NO_THROTTLE } };

  before(async () => {
    apps.a = await startApp(store, 'a', config, { clock: clock.now });
    apps.b = await startApp(store, 'b', config, { clock: clock.now });
    database = openTestDatabase(store);
    admin = (await staff(apps.b, store, 'admin')).token;
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
    await database?.close();
  });

  /** A read of the database (the one place these tests look past the API): the stored hash. */
  async function stored(address: string): Promise<string | undefined> {
    const row = await database.db
      .selectFrom('password_credentials')
      .innerJoin('users', 'users.id', 'password_credentials.user_id')
      .select('password_credentials.hash')
      .where('users.email_key', '=', address.toLowerCase())
      .executeTakeFirst();
    return row?.hash;
  }

  /** Puts a hash into the table as if an import (or an older release) had left it there. */
  async function storeHash(address: string, hash: string): Promise<void> {
    const user = await database.db
      .selectFrom('users')
      .select('id')
      .where('email_key', '=', address.toLowerCase())
      .executeTakeFirstOrThrow();
    await database.db
      .updateTable('password_credentials')
      .set({ hash })
      .where('user_id', '=', user.id)
      .execute();
  }

  const signin = (profile: Profile, address: string, password: string) =>
    apps[profile].post('/api/signin', { email: address, password });

  async function imported(lines: readonly object[]): Promise<void> {
    const res = await importLines(apps.b, admin, lines);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().imported, lines.length, res.body);
  }

  const hashes = MADE.map((made) => ({ ...made, email: email('kind') }));
  before(async () => {
    await imported(hashes.map(({ email, hash }) => ({ email, name: 'Moved In', passwordHash: hash })));
  });

  for (const [i, made] of hashes.entries()) {
    const [first, second]: [Profile, Profile] = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
    test(`${made.label}: signs in (profile ${first.toUpperCase()}), is re-hashed as argon2id, signs in again (${second.toUpperCase()})`, async () => {
      assert.equal(await stored(made.email), MARK + made.hash, 'kept as imported until the first sign-in');

      const wrong = await signin(first, made.email, `${made.password}x`);
      assert.equal(wrong.statusCode, 401, wrong.body);
      assert.equal(await stored(made.email), MARK + made.hash, 'a wrong password changes nothing');

      const right = await signin(first, made.email, made.password);
      assert.equal(right.statusCode, 200, right.body);
      assert.ok(sessionToken(right.headers['set-cookie']), 'a session');
      const rehashed = await stored(made.email);
      assert.match(rehashed ?? '', USHER_ARGON2ID, 're-hashed as argon2id at the first success');

      const again = await signin(second, made.email, made.password);
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(await stored(made.email), rehashed, 'Usher’s own hash is kept');
      const wrongAgain = await signin(second, made.email, `x${made.password}`);
      assert.equal(wrongAgain.statusCode, 401, wrongAgain.body);
    });
  }

  test('an imported argon2id is verified on the password as typed: the other system did not normalise it', async () => {
    // "ﬁ" (U+FB01) is "fi" after NFKC, which Usher's own hashes use; the old system hashed the ligature.
    const password = 'ﬁle-cabinet-7';
    const address = email('ligature');
    await imported([
      {
        email: address,
        name: 'Ligature',
        passwordHash: argon2Phc('argon2id', password, { m: 1024, t: 1, p: 1 }),
      },
    ]);
    assert.equal((await signin('b', address, 'file-cabinet-7')).statusCode, 401, 'not the normalised form');
    assert.equal((await signin('b', address, password)).statusCode, 200);
    assert.match((await stored(address)) ?? '', USHER_ARGON2ID);
    // From now on Usher's rule: both forms are the same password.
    assert.equal((await signin('a', address, 'file-cabinet-7')).statusCode, 200);
  });

  test('a password change and an account deletion take the present password against an imported hash', async () => {
    const [changing, deleting] = [email('change'), email('delete')];
    const [hashOf, oldPassword] = [MADE[0]!.hash, MADE[0]!.password];
    await imported([
      { email: changing, name: 'Changing', passwordHash: hashOf },
      { email: deleting, name: 'Deleting', passwordHash: hashOf },
    ]);
    // A session whose account still has its imported hash (as after a sign-in by another method).
    const session = async (address: string) => {
      const res = await signin('b', address, oldPassword);
      assert.equal(res.statusCode, 200, res.body);
      await storeHash(address, MARK + hashOf);
      return { token: sessionToken(res.headers['set-cookie'])!, id: res.json().user.id as number };
    };

    const c = await session(changing);
    const put = (currentPassword: string) =>
      apps.b.inject({
        method: 'PUT',
        url: `/api/users/${c.id}`,
        headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json' },
        payload: { email: changing, name: 'Changing', password: 'a brand new one 1', currentPassword },
      });
    const refused = await put(`${oldPassword}!`);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(refused.json().message, /^currentPassword: /);
    assert.equal(await stored(changing), MARK + hashOf);
    const changed = await put(oldPassword);
    assert.equal(changed.statusCode, 200, changed.body);
    assert.equal((await signin('a', changing, 'a brand new one 1')).statusCode, 200);
    assert.equal((await signin('a', changing, oldPassword)).statusCode, 401);

    const d = await session(deleting);
    // Past the fresh sign-in window: deleting needs the present password.
    clock.skewMs += 11 * 60 * 1000;
    try {
      const del = (currentPassword: string) =>
        apps.b.inject({
          method: 'DELETE',
          url: `/api/users/${d.id}`,
          headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
          payload: { currentPassword },
        });
      const wrong = await del('not it at all');
      assert.equal(wrong.statusCode, 400, wrong.body);
      assert.equal((await del(oldPassword)).statusCode, 204);
      assert.equal(await stored(deleting), undefined, 'deleted');
    } finally {
      clock.skewMs = 0;
    }
  });

  test('a stored hash beyond the bounds verifies nothing, even with the right password', async () => {
    const address = email('beyond');
    const password = 'within-and-beyond-1';
    const salt = randomBytes(16);
    const within = `$pbkdf2-sha256$i=1000$${b64(salt)}$${b64(pbkdf2Sync(password, salt, 1000, 32, 'sha256'))}`;
    await imported([{ email: address, name: 'Beyond', passwordHash: within }]);
    // One iteration more than the import takes, as a hand-edited table could hold it.
    const beyond = `$pbkdf2-sha256$i=3000001$${b64(salt)}$${b64(pbkdf2Sync(password, salt, 3_000_001, 32, 'sha256'))}`;
    await storeHash(address, MARK + beyond);
    assert.equal((await signin('b', address, password)).statusCode, 401);
    assert.equal(await stored(address), MARK + beyond, 'left as it was');
  });

  test('the re-hash replaces the imported hash only while it is still the stored one', async () => {
    const address = email('race');
    const made = MADE[1]!;
    await imported([{ email: address, name: 'Race', passwordHash: made.hash }]);
    const user = await database.db
      .selectFrom('users')
      .select('id')
      .where('email_key', '=', address)
      .executeTakeFirstOrThrow();
    // The password changed between the sign-in's verification and its re-hash.
    const changed = await new PasswordHasher(CHEAP_HASH).hash('changed meanwhile 1');
    await storeHash(address, changed);
    const users = new UsersRepository(database.db, {
      rowLocks: store.kind === 'postgres',
      devices: (db) => new SigninDevicesRepository(db, { rowLocks: store.kind === 'postgres' }),
    });
    await users.replacePasswordHash(
      user.id,
      MARK + made.hash,
      await new PasswordHasher(CHEAP_HASH).hash(made.password),
    );
    assert.equal(await stored(address), changed, 'the change made meanwhile stays');
  });
});

test('imported hashes are verified in the hash slots and queue: a full queue refuses them as it refuses argon2id', async () => {
  // One slot and one queue place for this lane: a third verification at once is refused.
  const hasher = new PasswordHasher({ ...CHEAP_HASH, concurrency: 1, queueLimit: 2 });
  const bcrypt = `${MARK}${MADE[0]!.hash}`;
  const password = MADE[0]!.password;
  const first = hasher.verify(password, bcrypt);
  const second = hasher.verify(password, bcrypt);
  const third = hasher.verify(password, bcrypt);
  await assert.rejects(third, HashOverloadedError);
  assert.deepEqual(await Promise.all([first, second]), [true, true]);
  assert.equal(await hasher.verify('wrong', bcrypt), false);
});
