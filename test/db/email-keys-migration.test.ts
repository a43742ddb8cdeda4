// Migration 0028 (issue 40, finding 5; decisions 352-355): a database made before it, whose keys
// were trim() and toLowerCase(), is migrated by starting the app. Every key is recomputed (NFKC,
// lower case, NFKC, IDNA domain); accounts whose new keys are one are not merged: the account that
// held the key keeps it, else the oldest takes it, and the others stay on their old key, listed in
// email_key_collisions, one warning per set at start (ids, no address) and `usher users
// collisions`. An unverified account's address is stored in its NFKC form; a verified one is kept.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from '../../src/db/database.ts';
import { schemaMigrations } from '../../src/features.ts';
import { PasswordHasher } from '../../src/passwords/hasher.ts';
import { asUser, CHEAP_HASH, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { waitUntil } from '../helpers/mail.ts';
import { runProcess } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CLI = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
const MIGRATION = '2026-12-07-0028-email-keys';
const AT = '2026-12-01T10:00:00.000Z';
const VERIFIED = 'verified';

/** The accounts as the database held them, in id order: [label, email, verified?]. */
const ROWS = [
  ['fullwidth kate', '\uFF4B\uFF41\uFF54\uFF45.T@example.com', VERIFIED],
  ['kate', 'kate.T@example.com', VERIFIED],
  ['fullwidth greg', '\uFF47\uFF52\uFF45\uFF47.T@example.com', ''],
  ['half-fullwidth greg', '\uFF47reg.T@example.com', ''],
  ['kelvin kane', '\u212Aane.T@example.com', ''],
  ['hal at an IDN', 'hal.T@exämple.com', VERIFIED],
] as const;
type Label = (typeof ROWS)[number][0];

describeEachStore('migration 0028: one email key', (store) => {
  let database: Database;
  let t: TestApp | undefined;
  const ids = new Map<Label, bigint>();
  const migrated = new Map<Label, { email: string; email_key: string }>();
  const password = (label: Label) => `the passphrase of ${label}`;
  before(async () => {
    database = openTestDatabase(store);
    const all = schemaMigrations();
    const names = Object.keys(all(database.dialect)).sort();
    const previous = names[names.indexOf(MIGRATION) - 1]!;
    const migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => all(database.dialect) },
    });
    const { error } = await migrator.migrateTo(previous);
    if (error) throw error;
    const hasher = new PasswordHasher(CHEAP_HASH);
    // As the app wrote them before: the key trimmed and lower-cased, nothing more.
    for (const [label, email, verified] of ROWS) {
      const { rows } = await sql<{ id: bigint | number }>`insert into users
        (email, email_key, name, name_key, created_at, updated_at, email_verified_at)
        values (${email}, ${email.toLowerCase()}, ${label}, ${label}, ${AT}, ${AT}, ${verified ? AT : null})
        returning id`.execute(database.db);
      const id = BigInt(rows[0]!.id);
      ids.set(label, id);
      await sql`insert into password_credentials (user_id, hash, changed_at)
        values (${id}, ${await hasher.hash(password(label))}, 0)`.execute(database.db);
    }
    t = await startApp(store, 'b');
    // As the migration left them, before any test changes one (the tests run in a random order).
    for (const label of ids.keys())
      migrated.set(
        label,
        await database.db
          .selectFrom('users')
          .select(['email', 'email_key'])
          .where('id', '=', ids.get(label)!)
          .executeTakeFirstOrThrow(),
      );
  });
  after(async () => {
    await t?.close();
    await database.close();
  });

  const row = (label: Label) => ({ ...migrated.get(label)! });

  test('keys are recomputed; the colliding accounts are not merged: the holder keeps the key, the later one keeps its old key', async () => {
    assert.deepEqual(row('kate'), { email: 'kate.T@example.com', email_key: 'kate.t@example.com' });
    assert.deepEqual(row('fullwidth kate'), {
      email: '\uFF4B\uFF41\uFF54\uFF45.T@example.com',
      email_key: '\uFF4B\uFF41\uFF54\uFF45.t@example.com',
    });
    // Neither held greg.t@: the older takes it (unverified: its address in NFKC form), the other waits.
    assert.deepEqual(row('fullwidth greg'), {
      email: 'greg.T@example.com',
      email_key: 'greg.t@example.com',
    });
    assert.deepEqual(row('half-fullwidth greg'), {
      email: '\uFF47reg.T@example.com',
      email_key: '\uFF47reg.t@example.com',
    });
    assert.deepEqual(row('kelvin kane'), {
      email: 'Kane.T@example.com',
      email_key: 'kane.t@example.com',
    });
    // Verified: the address its owner proved is kept; the key is the IDNA one.
    assert.deepEqual(row('hal at an IDN'), {
      email: 'hal.T@exämple.com',
      email_key: 'hal.t@xn--exmple-cua.com',
    });
  });

  test('sign-in: each address reaches the account that holds its key', async () => {
    const signIn = (email: string, label: Label) =>
      t!.post('/api/signin', { email, password: password(label) });
    for (const [email, label] of [
      ['KATE.t@example.com', 'kate'],
      ['hal.t@xn--exmple-cua.com', 'hal at an IDN'],
      ['hal.t@exämple.com', 'hal at an IDN'],
      ['greg.t@example.com', 'fullwidth greg'],
    ] as const) {
      const res = await signIn(email, label);
      assert.equal(res.statusCode, 200, `${email}: ${res.body}`);
      assert.equal(BigInt(res.json().user.id), ids.get(label), email);
    }
    // The kept-apart account's address is the holder's key now: its own password does not open it.
    const apart = await signIn('\uFF4B\uFF41\uFF54\uFF45.T@example.com', 'fullwidth kate');
    assert.equal(apart.statusCode, 401, apart.body);
  });

  test('one warning per collision set at start, with the ids and no address', async () => {
    const collisionWarnings = () =>
      t!.logs
        .join('')
        .split('\n')
        .filter((line) => line !== '')
        .map(
          (line) => JSON.parse(line) as { level: number; msg: string; holder?: string; keptApart?: string[] },
        )
        .filter((line) => line.msg.startsWith('email key collision:'));
    // Written once the schema is ready, in the background of the start (a read that failed on a
    // busy server is tried again: its "could not be read" line is not a set).
    await waitUntil(() => collisionWarnings().length >= 2, 10_000, 'the collision warnings');
    const warnings = collisionWarnings();
    assert.equal(warnings.length, 2, JSON.stringify(warnings));
    const sets = warnings.map((w) => [w.holder, w.keptApart]).sort();
    const id = (label: Label) => ids.get(label)!.toString();
    assert.deepEqual(
      sets,
      [
        [id('kate'), [id('fullwidth kate')]],
        [id('fullwidth greg'), [id('half-fullwidth greg')]],
      ].sort(),
    );
    for (const w of warnings) {
      assert.equal(w.level, 40);
      assert.doesNotMatch(JSON.stringify(w), /example\.com|kate|greg/i, 'no address in the log');
    }
  });

  test('usher users collisions [--json] lists each set (exit 1 while any remains), --help says what it is; an admin giving a kept-apart account another address resolves its set', async () => {
    const env = { DATABASE_URL: store.url };
    const json = await runProcess(process.execPath, [CLI, 'users', 'collisions', '--json'], env);
    assert.equal(json.code, 1, json.stderr);
    const sets = json.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            emailKey: string;
            holder: { id: number };
            keptApart: { id: number; email: string }[];
          },
      );
    assert.deepEqual(
      sets.map((s) => [s.emailKey, BigInt(s.holder.id), s.keptApart.map((u) => BigInt(u.id))]),
      [
        ['greg.t@example.com', ids.get('fullwidth greg'), [ids.get('half-fullwidth greg')]],
        ['kate.t@example.com', ids.get('kate'), [ids.get('fullwidth kate')]],
      ],
    );
    const table = await runProcess(process.execPath, [CLI, 'users', 'collisions'], env);
    assert.equal(table.code, 1, table.stderr);
    assert.match(table.stdout, /kept apart/);
    assert.ok(table.stdout.includes('kate.T@example.com'), table.stdout);
    const help = await runProcess(process.execPath, [CLI, 'users', 'collisions', '--help'], env);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: usher users collisions \[--json\]/);

    // An admin giving the kept-apart account another address resolves its set.
    const admin = ids.get('kate')!;
    await sql`update users set role = 'admin' where id = ${admin}`.execute(database.db);
    const signIn = await t!.post('/api/signin', { email: 'kate.T@example.com', password: password('kate') });
    const token = signIn.json().token as string | undefined;
    const cookie = signIn.headers['set-cookie'];
    const res = await t!.inject({
      method: 'PATCH',
      url: `/api/admin/users/${ids.get('half-fullwidth greg')}`,
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : { cookie: String(cookie).split(';')[0]! }),
      },
      payload: JSON.stringify({ email: 'gregory.T@example.com' }),
    });
    assert.equal(res.statusCode, 200, res.body);
    const resolved = await runProcess(process.execPath, [CLI, 'users', 'collisions', '--json'], {
      DATABASE_URL: store.url,
    });
    assert.deepEqual(
      resolved.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).emailKey),
      ['kate.t@example.com'],
    );
  });
});

// SQLite runs a migration without a transaction around it: a process killed half-way through 0028
// leaves some keys recomputed and the migration unrecorded. The next start runs it again and ends
// in the same state (no duplicate table, index or collision row).
describeEachStore('migration 0028 run again after a kill (SQLite)', (store) => {
  test('a start after an unrecorded run finishes it: the same keys, the same collision sets', async (t) => {
    if (store.kind !== 'sqlite') return t.skip('PostgreSQL runs each migration in a transaction');
    const database = openTestDatabase(store);
    let app: TestApp | undefined;
    try {
      const all = schemaMigrations();
      const names = Object.keys(all(database.dialect)).sort();
      const migrator = new Migrator({
        db: database.db,
        provider: { getMigrations: async () => all(database.dialect) },
      });
      const { error } = await migrator.migrateTo(names[names.indexOf(MIGRATION) - 1]!);
      if (error) throw error;
      for (const [label, email] of ROWS)
        await sql`insert into users (email, email_key, name, name_key, created_at, updated_at)
          values (${email}, ${email.toLowerCase()}, ${label}, ${label}, ${AT}, ${AT})`.execute(database.db);
      const once = await migrator.migrateTo(MIGRATION);
      if (once.error) throw once.error;
      const after = () =>
        sql<{ id: number; email_key: string }>`select id, email_key from users order by id`.execute(
          database.db,
        );
      const keys = (await after()).rows;
      // As if the process died before Kysely recorded the migration.
      await sql`delete from kysely_migration where name = ${MIGRATION}`.execute(database.db);
      app = await startApp(store, 'b');
      assert.deepEqual((await after()).rows, keys);
      const collisions = await sql<{
        user_id: number;
      }>`select user_id from email_key_collisions order by user_id`.execute(database.db);
      assert.equal(collisions.rows.length, 2);
    } finally {
      await app?.close();
      await database.close();
    }
  });
});

// What an account migration 0028 kept apart can do afterwards (decision 356): it saves its own
// profile on the key it holds; its deletion forgets its own known devices, not the holder's; and a
// key its holder gives up (deleted, or moved to another address) goes at once to the oldest
// account kept waiting for it. Each set is one test's, so the tests run in any order.
const APART_ROWS = [
  ['root', 'root.U@example.com', VERIFIED],
  ['anna', 'anna.U@example.com', VERIFIED],
  ['fullwidth anna', '\uFF41\uFF4E\uFF4E\uFF41.U@example.com', VERIFIED],
  ['bert', 'bert.U@example.com', VERIFIED],
  ['fullwidth bert', '\uFF42\uFF45\uFF52\uFF54.U@example.com', ''],
  ['cora', 'cora.U@example.com', VERIFIED],
  ['fullwidth cora', '\uFF43\uFF4F\uFF52\uFF41.U@example.com', VERIFIED],
  ['half-fullwidth cora', '\uFF43ora.U@example.com', ''],
  ['dora', 'dora.U@example.com', VERIFIED],
  ['fullwidth dora', '\uFF44\uFF4F\uFF52\uFF41.U@example.com', ''],
] as const;
type ApartLabel = (typeof APART_ROWS)[number][0];

describeEachStore('migration 0028: accounts kept apart, afterwards', (store) => {
  let database: Database;
  let t: TestApp | undefined;
  const ids = new Map<ApartLabel, bigint>();
  /** Session tokens the kept-apart accounts had before the migration (they cannot sign in by email). */
  const sessions = new Map<ApartLabel, string>();
  const password = (label: ApartLabel) => `the passphrase of ${label}`;
  const email = (label: ApartLabel) => APART_ROWS.find(([l]) => l === label)![1];
  const digest = (key: string) => createHash('sha256').update(key).digest('hex');
  /** A known device remembered under `key` (its account's key then), named after its label. */
  const device = (label: ApartLabel) => `device of ${label}`;
  const devicesOf = async (key: string) =>
    (
      await database.db
        .selectFrom('signin_devices')
        .select('token_digest')
        .where('account_digest', '=', digest(key))
        .execute()
    )
      .map((row) => row.token_digest)
      .sort();
  const keyOf = async (label: ApartLabel) =>
    (
      await database.db
        .selectFrom('users')
        .select('email_key')
        .where('id', '=', ids.get(label)!)
        .executeTakeFirstOrThrow()
    ).email_key;
  const waitingFor = async (label: ApartLabel) =>
    (
      await database.db
        .selectFrom('email_key_collisions')
        .select('email_key')
        .where('user_id', '=', ids.get(label)!)
        .executeTakeFirst()
    )?.email_key;
  const signIn = (address: string, label: ApartLabel) =>
    t!.post('/api/signin', { email: address, password: password(label) });
  const tokenOf = (res: Awaited<ReturnType<typeof signIn>>) =>
    (res.json().token as string | undefined) ?? sessionToken(res.headers['set-cookie'])!;
  /** PATCH /api/admin/users/{id} or DELETE it, as the admin. */
  const asAdmin = async (method: 'PATCH' | 'DELETE', label: ApartLabel, body?: unknown) => {
    const res = await signIn(email('root'), 'root');
    assert.equal(res.statusCode, 200, res.body);
    return t!.inject({
      method,
      url: `/api/admin/users/${ids.get(label)}`,
      headers: {
        authorization: `Bearer ${tokenOf(res)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  };

  before(async () => {
    database = openTestDatabase(store);
    const all = schemaMigrations();
    const names = Object.keys(all(database.dialect)).sort();
    const migrator = new Migrator({
      db: database.db,
      provider: { getMigrations: async () => all(database.dialect) },
    });
    const { error } = await migrator.migrateTo(names[names.indexOf(MIGRATION) - 1]!);
    if (error) throw error;
    const hasher = new PasswordHasher(CHEAP_HASH);
    const now = new Date();
    for (const [label, address, verified] of APART_ROWS) {
      const { rows } = await sql<{ id: bigint | number }>`insert into users
        (email, email_key, name, name_key, created_at, updated_at, email_verified_at)
        values (${address}, ${address.toLowerCase()}, ${label}, ${label}, ${AT}, ${AT}, ${verified ? AT : null})
        returning id`.execute(database.db);
      const id = BigInt(rows[0]!.id);
      ids.set(label, id);
      await sql`insert into password_credentials (user_id, hash, changed_at)
        values (${id}, ${await hasher.hash(password(label))}, 0)`.execute(database.db);
      // Each account has a known device under its key as it was, and a session of its own.
      await database.db
        .insertInto('signin_devices')
        .values({
          token_digest: device(label),
          account_digest: digest(address.toLowerCase()),
          remembered_at: now.getTime(),
          known_until: now.getTime() + 86_400_000,
        })
        .execute();
      const token = randomBytes(32).toString('base64url');
      await database.db
        .insertInto('sessions')
        .values({
          token_hash: createHash('sha256').update(token).digest('hex'),
          public_id: randomBytes(12).toString('base64url'),
          user_id: id,
          created_at: now.toISOString(),
          last_seen_at: now.toISOString(),
          expires_at: new Date(now.getTime() + 86_400_000).toISOString(),
          user_agent: null,
        })
        .execute();
      sessions.set(label, token);
    }
    await sql`update users set role = 'admin' where id = ${ids.get('root')!}`.execute(database.db);
    t = await startApp(store, 'b');
    for (const label of ['fullwidth anna', 'fullwidth bert', 'fullwidth cora', 'fullwidth dora'] as const)
      assert.ok(await waitingFor(label), `${label} is kept apart by the migration`);
  });
  after(async () => {
    await t?.close();
    await database.close();
  });

  test('a kept-apart account saves its name and its password on the key it holds (200), and keeps its session; the holder keeps its key', async () => {
    const apart = asUser(t!, sessions.get('fullwidth anna')!);
    const id = ids.get('fullwidth anna')!;
    const oldKey = email('fullwidth anna').toLowerCase();
    const named = await apart.put(`/api/users/${id}`, {
      email: email('fullwidth anna'),
      name: 'Anna Renamed',
    });
    assert.equal(named.statusCode, 200, named.body);
    assert.equal(named.json().email, email('fullwidth anna'));
    assert.equal(named.json().name, 'Anna Renamed');
    const next = 'a new passphrase of fullwidth anna';
    const changed = await apart.put(`/api/users/${id}`, {
      email: email('fullwidth anna'),
      name: 'Anna Renamed',
      password: next,
      currentPassword: password('fullwidth anna'),
    });
    assert.equal(changed.statusCode, 200, changed.body);
    // The session that made the change stays: the way it signed in still works.
    assert.equal((await apart.get('/api/account')).statusCode, 200);
    // An admin's PATCH of the same address is no change of address either.
    const byAdmin = await asAdmin('PATCH', 'fullwidth anna', {
      email: email('fullwidth anna'),
      name: 'Anna by the admin',
    });
    assert.equal(byAdmin.statusCode, 200, byAdmin.body);
    assert.equal(byAdmin.json().name, 'Anna by the admin');
    // Still kept apart, on its old key with its own devices; the holder signs in as before.
    assert.equal(await keyOf('fullwidth anna'), oldKey);
    assert.equal(await waitingFor('fullwidth anna'), 'anna.u@example.com');
    assert.deepEqual(await devicesOf(oldKey), [device('fullwidth anna')]);
    assert.deepEqual(await devicesOf('anna.u@example.com'), [device('anna')]);
    const holder = await signIn('ANNA.u@example.com', 'anna');
    assert.equal(holder.statusCode, 200, holder.body);
    assert.equal(BigInt(holder.json().user.id), ids.get('anna'));
    // Its address in NFKC form is still its own address, kept as stored (a client sends back what
    // it was shown, which checkEmail normalises)...
    const ascii = await apart.put(`/api/users/${id}`, { email: 'anna.U@example.com', name: 'Anna Renamed' });
    assert.equal(ascii.statusCode, 200, ascii.body);
    assert.equal(ascii.json().email, email('fullwidth anna'));
    // ...but the holder's address in another letter case is a new one, and taken (the new password proven).
    const taken = await apart.put(`/api/users/${id}`, {
      email: 'ANNA.U@example.com',
      name: 'Anna Renamed',
      currentPassword: next,
    });
    assert.equal(taken.statusCode, 409, taken.body);
    assert.equal(taken.json().error, 'EMAIL_TAKEN');
  });

  test("deleting a kept-apart account forgets its own known devices, not the holder's", async () => {
    const apart = asUser(t!, sessions.get('fullwidth bert')!);
    const deleted = await apart.delete(`/api/users/${ids.get('fullwidth bert')}`);
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.deepEqual(await devicesOf(email('fullwidth bert').toLowerCase()), []);
    assert.deepEqual(await devicesOf('bert.u@example.com'), [device('bert')]);
    assert.equal(await keyOf('bert'), 'bert.u@example.com');
  });

  test("a holder's deletion hands the key to the oldest account kept waiting for it, with its devices; the next one waits on", async () => {
    const deleted = await asAdmin('DELETE', 'cora');
    assert.equal(deleted.statusCode, 204, deleted.body);
    assert.equal(await keyOf('fullwidth cora'), 'cora.u@example.com');
    assert.equal(await waitingFor('fullwidth cora'), undefined);
    // The holder's devices went with it; the new holder's came along from its old key.
    assert.deepEqual(await devicesOf('cora.u@example.com'), [device('fullwidth cora')]);
    assert.deepEqual(await devicesOf(email('fullwidth cora').toLowerCase()), []);
    // Its password opens it by the address now, as for any holder; its address is kept as it was.
    const res = await signIn('cora.U@example.com', 'fullwidth cora');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(BigInt(res.json().user.id), ids.get('fullwidth cora'));
    assert.equal(res.json().user.email, email('fullwidth cora'));
    // No one else can take the address: the set has a holder again, and the later account waits.
    assert.equal(await waitingFor('half-fullwidth cora'), 'cora.u@example.com');
    const json = await runProcess(process.execPath, [CLI, 'users', 'collisions', '--json'], {
      DATABASE_URL: store.url,
    });
    const set = json.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            emailKey: string;
            holder: { id: number } | null;
            keptApart: { id: number }[];
          },
      )
      .find((s) => s.emailKey === 'cora.u@example.com');
    assert.deepEqual(set && [BigInt(set.holder!.id), set.keptApart.map((u) => BigInt(u.id))], [
      ids.get('fullwidth cora'),
      [ids.get('half-fullwidth cora')],
    ]);
  });

  test("a holder's new address (an admin's PATCH) hands its old key to the account kept waiting for it", async () => {
    const moved = await asAdmin('PATCH', 'dora', { email: 'dorothy.U@example.com' });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.equal(await keyOf('fullwidth dora'), 'dora.u@example.com');
    assert.equal(await waitingFor('fullwidth dora'), undefined);
    assert.deepEqual(await devicesOf('dora.u@example.com'), [device('fullwidth dora')]);
    assert.deepEqual(await devicesOf('dorothy.u@example.com'), [device('dora')]);
    const res = await signIn('dora.U@example.com', 'fullwidth dora');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(BigInt(res.json().user.id), ids.get('fullwidth dora'));
  });
});
