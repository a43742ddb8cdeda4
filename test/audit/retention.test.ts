// How long the audit log keeps what it records (CONTRACT "Administration": AUDIT_RETENTION_DAYS,
// 90 by default) and what AUDIT_SIGNINS=false leaves out (successful sign-ins, nothing else), on
// both stores. Records are made through HTTP at times the app's clock is moved to; the purge is
// the housekeeping round every instance runs, called here with a clock the test sets; what is
// left is read from the table itself.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type Config, ConfigError, loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { compose, housekeeping } from '../../src/features.ts';
import { staff } from '../admin/support.ts';
import {
  NO_THROTTLE,
  newUser,
  register,
  sessionToken,
  startApp,
  type TestApp,
  testConfig,
} from '../helpers/app.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import { STEP_MS, totpAt, wrongCodeAt } from '../helpers/totp.ts';
import { auditLog, freshAddress, send } from './support.ts';

const DAY = 24 * 3600 * 1000;
const RETENTION_DAYS = 30;
const RETENTION: Config['audit'] = { retentionMs: RETENTION_DAYS * DAY, signins: true };

describe('audit settings', () => {
  test('AUDIT_RETENTION_DAYS: 90 by default, whole days from 1 to 3650, anything else stops the start', () => {
    assert.equal(loadConfig({}).audit.retentionMs, 90 * DAY);
    assert.equal(loadConfig({ AUDIT_RETENTION_DAYS: '7' }).audit.retentionMs, 7 * DAY);
    assert.equal(loadConfig({ AUDIT_RETENTION_DAYS: '3650' }).audit.retentionMs, 3650 * DAY);
    for (const bad of ['0', '-1', '3651', '1.5', 'ninety'])
      assert.throws(
        () => loadConfig({ AUDIT_RETENTION_DAYS: bad }),
        (e: unknown) => e instanceof ConfigError && e.message.startsWith('AUDIT_RETENTION_DAYS'),
        bad,
      );
  });

  test('AUDIT_SIGNINS: on by default; false turns it off', () => {
    assert.equal(loadConfig({}).audit.signins, true);
    assert.equal(loadConfig({ AUDIT_SIGNINS: 'false' }).audit.signins, false);
    assert.equal(loadConfig({ AUDIT_SIGNINS: 'true' }).audit.signins, true);
  });
});

describeEachStore('audit log: retention', (store: Store) => {
  let t: TestApp;
  /** Added to the app's clock: records are made days apart. */
  let offset = 0;
  before(async () => {
    t = await startApp(
      store,
      'b',
      { throttle: { ...NO_THROTTLE }, audit: RETENTION },
      { clock: () => Date.now() + offset },
    );
  });
  after(() => t?.close());

  /** The table itself, and housekeeping run as if it were `at` (epoch ms). */
  async function withDatabase<T>(
    work: (
      db: ReturnType<typeof openDatabase>,
      purgeAt: (at: number) => Promise<void>,
      purgeExpiredAt: (at: number) => Promise<number>,
    ) => Promise<T>,
  ): Promise<T> {
    const config = testConfig(store, 'b', { audit: RETENTION });
    const database = openDatabase(store.url, config.database);
    try {
      return await work(
        database,
        (at) => housekeeping(compose(config, database, { now: () => at })),
        (at) => compose(config, database, { now: () => at }).audit.audit.purgeExpired(),
      );
    } finally {
      await database.close();
    }
  }

  async function rowsOf(db: ReturnType<typeof openDatabase>, userId: bigint) {
    const rows = await db.db
      .selectFrom('audit_events')
      .select(['id', 'type', 'created_at'])
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ id: r.id, type: r.type, at: new Date(r.created_at).getTime() }));
  }

  test('housekeeping removes the records older than the retention and keeps the rest, to the millisecond', async () => {
    const old = await register(t, newUser());
    offset += 10 * DAY;
    const recent = await register(t, newUser());
    const recentToken = sessionToken(
      (await t.post('/api/signin', { email: recent.email, password: recent.password })).headers['set-cookie'],
    );
    assert.ok(recentToken);

    await withDatabase(async (db, purgeAt, purgeExpiredAt) => {
      const [oldRow, ...noMore] = await rowsOf(db, old.id);
      assert.ok(oldRow, 'the old account’s record');
      assert.deepEqual(noMore, [], 'registration leaves one record');
      const recentRows = await rowsOf(db, recent.id);
      assert.deepEqual(
        recentRows.map((r) => r.type),
        ['user.created', 'signin.succeeded'],
      );
      assert.ok(recentRows[0]!.at - oldRow.at >= 10 * DAY, 'made ten days later');

      // Exactly the retention old: kept (older than it is what goes).
      await purgeExpiredAt(oldRow.at + RETENTION.retentionMs);
      assert.equal((await rowsOf(db, old.id)).length, 1, 'kept at exactly the retention');

      // A millisecond more: gone, and nothing newer with it.
      await purgeAt(oldRow.at + RETENTION.retentionMs + 1);
      assert.deepEqual(await rowsOf(db, old.id), [], 'purged past the retention');
      assert.deepEqual(await rowsOf(db, recent.id), recentRows, 'the newer records stay, all of them');

      // Their turn comes as well.
      await purgeAt(recentRows.at(-1)!.at + RETENTION.retentionMs + 1);
      assert.deepEqual(await rowsOf(db, recent.id), []);
    });
  });

  test('a backlog larger than one purge statement (5,000 rows) is removed in one housekeeping round, records within the retention kept', async () => {
    const now = Date.now() + offset;
    const expired = new Date(now - RETENTION.retentionMs - DAY).toISOString();
    const kept = new Date(now - RETENTION.retentionMs + DAY).toISOString();
    const row = (created_at: string, n: number) => ({
      created_at,
      type: 'bulk.row',
      actor_id: null,
      user_id: null,
      address: null,
      user_agent: null,
      details: JSON.stringify({ n }),
    });
    await withDatabase(async (db, purgeAt) => {
      const rows = [
        ...Array.from({ length: 12_000 }, (_, n) => row(expired, n)),
        ...Array.from({ length: 10 }, (_, n) => row(kept, n)),
      ];
      await db.db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += 1000)
          await trx
            .insertInto('audit_events')
            .values(rows.slice(i, i + 1000))
            .execute();
      });
      const count = async () =>
        (
          await db.db.selectFrom('audit_events').select('created_at').where('type', '=', 'bulk.row').execute()
        ).map((r) => new Date(r.created_at).toISOString());
      assert.equal((await count()).length, 12_010);
      await purgeAt(now);
      assert.deepEqual(await count(), Array(10).fill(kept), 'the expired backlog is gone, the rest kept');
    });
  });
});

describeEachStore('audit log: AUDIT_SIGNINS=false', (store: Store) => {
  let t: TestApp;
  let offset = 0;
  const throttle = { ...NO_THROTTLE, perAccountAddress: 2 };
  before(async () => {
    t = await startApp(
      store,
      'b',
      {
        throttle,
        audit: { ...RETENTION, signins: false },
        encryptionKey: randomBytes(32),
      },
      { clock: () => Date.now() + offset },
    );
  });
  after(() => t?.close());

  test('successful sign-ins are not recorded; failed, throttled and second-factor sign-ins, codes used and sign-outs still are', async () => {
    const admin = await staff(t, store, 'admin');
    const user = await register(t, newUser());
    const address = freshAddress('10.62');
    const signin = (body: Record<string, string>, from = address) =>
      send(t, 'POST', '/api/signin', { body: { email: user.email, ...body }, address: from });

    const ok = await signin({ password: user.password }, freshAddress('10.62'));
    assert.equal(ok.statusCode, 200, ok.body);
    const token = sessionToken(ok.headers['set-cookie'])!;

    // TOTP, and a sign-in with a code: the code's use is still recorded.
    const setup = await send(t, 'POST', '/api/mfa/totp', { token, body: { password: user.password } });
    assert.equal(setup.statusCode, 200, setup.body);
    const { secret } = setup.json() as { secret: string };
    const confirm = await send(t, 'POST', '/api/mfa/totp/confirm', {
      token,
      body: { code: totpAt(secret, Date.now() + offset) },
    });
    assert.equal(confirm.statusCode, 200, confirm.body);
    offset += STEP_MS;
    const withCode = await signin(
      { password: user.password, code: totpAt(secret, Date.now() + offset) },
      freshAddress('10.62'),
    );
    assert.equal(withCode.statusCode, 200, withCode.body);
    const wrongCode = await signin(
      { password: user.password, code: wrongCodeAt(secret, Date.now() + offset) },
      freshAddress('10.62'),
    );
    assert.equal(wrongCode.statusCode, 401, wrongCode.body);

    for (let i = 0; i < throttle.perAccountAddress; i++)
      assert.equal((await signin({ password: 'not-the-password-1' })).statusCode, 401);
    assert.equal((await signin({ password: 'not-the-password-1' })).statusCode, 429);
    assert.equal((await send(t, 'POST', '/api/signout', { token })).statusCode, 204);

    const types = (await auditLog(t, admin.token, `userId=${user.id}`)).map((r) => r.type);
    assert.ok(!types.includes('signin.succeeded'), `no signin.succeeded: ${types}`);
    for (const type of [
      'user.created',
      'mfa.totp_added',
      'mfa.used',
      'signin.failed',
      'signin.throttled',
      'signout',
    ])
      assert.ok(types.includes(type), `${type} is still recorded: ${types}`);
    const failed = (await auditLog(t, admin.token, `userId=${user.id}&type=signin.failed`)).map(
      (r) => r.details.reason,
    );
    assert.deepEqual(failed.sort(), ['credentials', 'credentials', 'second-factor']);
    // Nor was the admin's own sign-in recorded.
    assert.deepEqual(await auditLog(t, admin.token, `userId=${admin.id}&type=signin.succeeded`), []);
  });
});
