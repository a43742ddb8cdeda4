// The hot lookups' two paths (db/prepared.ts): straight to the connection, with rows as arrays, and
// through Kysely (inside a transaction, or while a transaction holds SQLite's one connection),
// whose row objects are turned into the same arrays. Both must give the same user and session,
// value for value and type for type, and the direct one on SQLite must be there at once.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Kysely } from 'kysely';
import { SignerRepository } from '../../src/auth/signer-repository.ts';
import type { Database } from '../../src/db/database.ts';
import { positionsOf, runPrepared, slotted } from '../../src/db/prepared.ts';
import type { Tables } from '../../src/db/schema.ts';
import { schemaMigrations } from '../../src/features.ts';
import { SessionsRepository } from '../../src/sessions/repository.ts';
import { SigninDevicesRepository } from '../../src/signin/device-repository.ts';
import { UsersRepository } from '../../src/users/repository.ts';
import { register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';

/** The users repository as services.ts builds it. */
const usersOn = (db: Kysely<Tables>, rowLocks: boolean) =>
  new UsersRepository(db, { rowLocks, devices: (on) => new SigninDevicesRepository(on, { rowLocks }) });

test('ISSUE 26: positionsOf names each select-list entry by what it comes back as, at its place in the list', () => {
  const at = positionsOf([
    'sessions.public_id',
    'users.email as owner_email',
    'name',
    'users.created_at',
  ] as const);
  assert.deepEqual({ ...at }, { public_id: 0, owner_email: 1, name: 2, created_at: 3 });
  assert.ok(Object.isFrozen(at));
});

describeEachStore('Hot lookups: direct and through Kysely', (store: Store) => {
  let t: TestApp;
  let database: Database;
  let user: Awaited<ReturnType<typeof register>>;
  let tokenHash: string;
  before(async () => {
    t = await startApp(store, 'b');
    database = openTestDatabase(store);
    // As the server's start does: the direct path needs the connection Kysely opens on first use.
    await database.migrate(schemaMigrations());
    user = await register(t);
    tokenHash = createHash('sha256')
      .update(await signIn(t, user))
      .digest('hex');
  });
  after(async () => {
    await database.close();
    await t.close();
  });

  test('a user by id: the same record on the direct path and inside a transaction', async () => {
    const direct = usersOn(database.db, store.kind === 'postgres').findById(user.id);
    if (store.kind === 'sqlite') assert.equal(direct instanceof Promise, false, 'answered at once on SQLite');
    const found = await direct;
    assert.deepEqual(found, {
      id: user.id,
      email: user.email,
      name: user.name,
      createdAt: found?.createdAt,
      emailVerified: false,
      role: 'user',
      disabled: false,
      locale: 'en',
    });
    assert.ok(found?.createdAt instanceof Date);
    assert.equal(found.createdAt.toISOString(), user.res.json().createdAt);
    const inTransaction = await database.db
      .transaction()
      .execute(async (trx) => usersOn(trx, store.kind === 'postgres').findById(user.id));
    assert.deepEqual(inTransaction, found);
    assert.equal(await usersOn(database.db, store.kind === 'postgres').findById(user.id + 1000n), undefined);
  });

  test('a session by its token: the same record on the direct path and inside a transaction', async () => {
    const direct = new SessionsRepository(database.db).find(tokenHash);
    if (store.kind === 'sqlite') assert.equal(direct instanceof Promise, false, 'answered at once on SQLite');
    const found = await direct;
    assert.ok(found);
    assert.equal(found.userId, user.id);
    assert.match(found.id, /^[0-9a-f]{32}$/);
    for (const time of [found.createdAt, found.lastSeenAt, found.expiresAt]) assert.ok(time instanceof Date);
    assert.ok(found.expiresAt > found.createdAt);
    assert.deepEqual(
      { ...found.owner, created_at: found.owner.created_at.toISOString() },
      {
        id: user.id,
        email: user.email,
        name: user.name,
        created_at: user.res.json().createdAt,
        email_verified_at: null,
        role: 'user',
        disabled_at: null,
        roles: '[]',
        locale: 'en',
      },
    );
    const inTransaction = await database.db
      .transaction()
      .execute(async (trx) => new SessionsRepository(trx).find(tokenHash));
    assert.deepEqual(inTransaction, found);
    assert.equal(await new SessionsRepository(database.db).find('0'.repeat(64)), undefined);
  });

  test('on SQLite, a lookup while a transaction holds the connection waits for it and gives the same record', {
    skip: store.kind !== 'sqlite' && "PostgreSQL's pool has no single connection to hold",
  }, async () => {
    const users = usersOn(database.db, false);
    const before = await users.findById(user.id);
    let during: unknown;
    await database.db.transaction().execute(async (trx) => {
      await usersOn(trx, false).findById(user.id);
      const lookup = users.findById(user.id);
      assert.equal(lookup instanceof Promise, true, 'the held connection sends the lookup through Kysely');
      during = lookup;
    });
    assert.deepEqual(await during, before);
  });

  test('a slotted query: each value goes where its slot is, whatever order Kysely compiles them in, constants stay', async () => {
    const query = slotted(['name', 'id'], (s) =>
      database.db
        .selectFrom('users')
        .select(['id', 'name'])
        // The slots appear in the SQL in the other order than listed, one of them twice, and a
        // constant between them.
        .where('id', '=', s.id)
        .where('email', '!=', 'nobody@example.invalid')
        .where((eb) => eb.or([eb('name', '=', s.name), eb('id', '=', s.id)])),
    );
    assert.match(query.query.name, /^usher_[A-Za-z0-9_-]{24}$/);
    assert.deepEqual(query.parameters({ name: 'N', id: 7n }), [7n, 'nobody@example.invalid', 'N', 7n]);
    // Run twice: on PostgreSQL the second run uses the statement the connection kept.
    for (let run = 0; run < 2; run++) {
      const rows = await runPrepared(
        database.db,
        query.query,
        query.parameters({ name: user.name, id: user.id }),
      );
      assert.deepEqual(rows, [[user.id, user.name]]);
    }
    const none = await runPrepared(
      database.db,
      query.query,
      query.parameters({ name: 'x', id: user.id + 1000n }),
    );
    assert.deepEqual(none, []);
  });

  test("a sign-in's signer by email: the same on the direct path and inside a transaction", async () => {
    const found = await new SignerRepository(database.db).findSigner(user.email.toLowerCase());
    assert.ok(found);
    assert.equal(found.user.id, user.id);
    assert.equal(found.user.createdAt.toISOString(), user.res.json().createdAt);
    assert.match(found.passwordHash ?? '', /^\$argon2id\$/);
    assert.equal(found.totp, undefined, 'no TOTP factor');
    const inTransaction = await database.db
      .transaction()
      .execute(async (trx) => new SignerRepository(trx).findSigner(user.email.toLowerCase()));
    assert.deepEqual(inTransaction, found);
    assert.equal(await new SignerRepository(database.db).findSigner('nobody@example.invalid'), undefined);
  });
});
