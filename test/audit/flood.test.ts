// A flood of throttled sign-ins (issue 40, finding 4), black-box on both stores: a throttled attempt
// costs its client no hashing, so one client could write thousands of audit records a minute and
// push the owner's own events out of their activity. Now each account (or, with no account, each
// network) has one signin.throttled record per method and hour, counted: exactly, by two instances
// at once too; the next hour opens a new one. The owner's activity lists their own events and sums
// every failed and throttled sign-in in one line. Every record keeps 256 characters of User-Agent.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TALLY_WINDOW_MS } from '../../src/audit/sink.ts';
import { type SignedIn, staff } from '../admin/support.ts';
import { NO_THROTTLE, newUser, register, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import {
  type ActivityItem,
  type AuditRecord,
  auditLog,
  freshAddress,
  freshAgent,
  ISO,
  recordsOf,
  send,
} from './support.ts';

/** The pair's third failure is refused: the throttle of CONTRACT, lower. */
const THROTTLE = { ...NO_THROTTLE, perAccountAddress: 2 };
/** What the red team sent: 512 characters of User-Agent. */
const LONG_AGENT = `Flood/${'A'.repeat(506)}`;

describeEachStore(
  'audit log: a flood of throttled sign-ins is one counted record per account and hour',
  (store: Store) => {
    let t: TestApp;
    /** A second instance on the same database. */
    let other: TestApp;
    let admin: SignedIn;
    /** Added to both instances' clock. */
    let offset = 0;
    const now = () => Date.now() + offset;

    before(async () => {
      t = await startApp(store, 'a', { throttle: THROTTLE }, { clock: now });
      other = await startApp(store, 'a', { throttle: THROTTLE }, { clock: now });
      admin = await staff(t, store, 'admin');
    });
    after(async () => {
      await t?.close();
      await other?.close();
    });

    /**
     * The clocks moved to a minute past the next hour: a test's attempts all fall in one window
     * (however long it runs, within 59 minutes), and the throttle's 15 minutes have passed.
     */
    function nextWindow(): void {
      const at = now();
      offset += at - (at % TALLY_WINDOW_MS) + TALLY_WINDOW_MS + 60_000 - at;
    }

    const signin = (
      app: TestApp,
      { email, password }: { email: string; password: string },
      address: string,
      userAgent?: string,
    ) => send(app, 'POST', '/api/signin', { body: { email, password }, address, userAgent });

    /** A user whose pair with `address` is throttled (its failures made, as the throttle allows). */
    async function throttledFrom(address: string) {
      const user = await register(t, newUser());
      const wrong = { email: user.email, password: 'not-the-password-1' };
      for (let i = 0; i < THROTTLE.perAccountAddress; i++)
        assert.equal((await signin(t, wrong, address)).statusCode, 401, `failure ${i + 1}`);
      return { ...user, wrong };
    }

    const throttledOf = (userId: bigint): Promise<AuditRecord[]> =>
      recordsOf(t, admin.token, userId, 'signin.throttled');

    test('the attack: 60 throttled attempts from one client are one signin.throttled record with count 60, its User-Agent cut to 256', async () => {
      nextWindow();
      const address = freshAddress('10.71');
      const user = await throttledFrom(address);
      const first = now();
      for (let i = 0; i < 60; i++)
        assert.equal((await signin(t, user.wrong, address, LONG_AGENT)).statusCode, 429, `attempt ${i + 1}`);
      const records = await throttledOf(user.id);
      assert.equal(records.length, 1, JSON.stringify(records));
      const [record] = records as [AuditRecord];
      assert.equal(record.details.count, 60, JSON.stringify(record));
      assert.equal(record.details.method, 'password');
      assert.equal(record.details.firstAt, record.at);
      assert.match(String(record.details.lastAt), ISO);
      assert.ok(
        Date.parse(record.at) >= first && String(record.details.lastAt) >= record.at,
        JSON.stringify(record),
      );
      assert.equal(record.address, address);
      assert.equal(record.actorId, null);
      assert.equal(record.userAgent, LONG_AGENT.slice(0, 256), 'the first 256 characters of the User-Agent');
      // The judged failures are each recorded still: they cost a hash, and the throttle bounds them.
      assert.equal(
        (await recordsOf(t, admin.token, user.id, 'signin.failed')).length,
        THROTTLE.perAccountAddress,
      );
    });

    test('concurrently, on two instances: 40 throttled attempts at once are counted exactly, in one record', async () => {
      nextWindow();
      const address = freshAddress('10.72');
      const user = await throttledFrom(address);
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          signin(i % 2 === 0 ? t : other, user.wrong, address, freshAgent('burst')),
        ),
      );
      assert.deepEqual(
        answers.map((res) => res.statusCode),
        Array(40).fill(429),
      );
      const records = await throttledOf(user.id);
      assert.equal(records.length, 1, JSON.stringify(records));
      assert.equal(records[0]!.details.count, 40, JSON.stringify(records[0]));
    });

    test('with no account, the record is the network’s, whatever email each attempt names', async (ctx) => {
      nextWindow();
      // The address's own limit, past which every email is refused.
      const strict = await startApp(
        store,
        'a',
        { throttle: { ...NO_THROTTLE, perAddress: 2 } },
        { clock: now },
      );
      ctx.after(() => strict.close());
      const address = freshAddress('10.73');
      const run = `${process.pid}.${Date.now()}`;
      const unknown = (i: number) => ({
        email: `nobody.${i}.${run}@example.com`,
        password: 'whatever-it-is-1',
      });
      for (let i = 0; i < 2; i++) assert.equal((await signin(strict, unknown(i), address)).statusCode, 401);
      for (let i = 2; i < 7; i++) assert.equal((await signin(strict, unknown(i), address)).statusCode, 429);
      const ofNetwork = (await auditLog(t, admin.token, 'type=signin.throttled')).filter(
        (r) => r.address === address,
      );
      assert.equal(ofNetwork.length, 1, JSON.stringify(ofNetwork));
      assert.equal(ofNetwork[0]!.userId, null);
      assert.equal(ofNetwork[0]!.details.count, 5);
      assert.equal(ofNetwork[0]!.details.emailDigest, undefined, 'no email, not even its digest');
    });

    test('the next hour opens a new record; the last one keeps its count', async () => {
      nextWindow();
      const address = freshAddress('10.74');
      const user = await throttledFrom(address);
      for (let i = 0; i < 7; i++) assert.equal((await signin(t, user.wrong, address)).statusCode, 429);
      nextWindow();
      for (let i = 0; i < THROTTLE.perAccountAddress; i++)
        assert.equal(
          (await signin(t, user.wrong, address)).statusCode,
          401,
          'the throttle’s window passed too',
        );
      for (let i = 0; i < 3; i++) assert.equal((await signin(other, user.wrong, address)).statusCode, 429);
      const records = await throttledOf(user.id);
      assert.deepEqual(
        records.map((r) => r.details.count),
        [3, 7],
        JSON.stringify(records),
      );
      assert.ok(Date.parse(records[0]!.at) - Date.parse(records[1]!.at) >= TALLY_WINDOW_MS - 60_000);
    });

    test('the owner’s activity after a flood: their password change is still there, and the failures and throttling are one line', async () => {
      nextWindow();
      const user = await register(t, newUser());
      const signedIn = await signin(t, user, freshAddress('10.75'));
      assert.equal(signedIn.statusCode, 200, signedIn.body);
      const token = sessionToken(signedIn.headers['set-cookie'])!;
      const password = 'a new passphrase 1';
      const changed = await send(t, 'PUT', `/api/users/${user.id}`, {
        token,
        body: { email: user.email, name: user.name, password, currentPassword: user.password },
      });
      assert.equal(changed.statusCode, 200, changed.body);

      // The flood: 60 wrong passwords from as many addresses (each judged: a hash each), then one
      // address past the throttle 60 times.
      const wrong = { email: user.email, password: 'not-the-password-1' };
      for (let i = 0; i < 60; i++)
        assert.equal((await signin(t, wrong, freshAddress('10.76'))).statusCode, 401, `failure ${i + 1}`);
      const address = freshAddress('10.77');
      for (let i = 0; i < THROTTLE.perAccountAddress; i++)
        assert.equal((await signin(t, wrong, address)).statusCode, 401);
      const agent = freshAgent('flood');
      for (let i = 0; i < 60; i++) assert.equal((await signin(t, wrong, address, agent)).statusCode, 429);

      const res = await send(t, 'GET', '/api/account/activity', { token });
      assert.equal(res.statusCode, 200, res.body);
      const items = res.json() as ActivityItem[];
      assert.ok(items.length <= 50, `${items.length}`);
      const types = items.map((i) => i.type);
      assert.ok(types.includes('password.changed'), `the password change is in view: ${types}`);
      assert.ok(
        !types.includes('signin.failed') && !types.includes('signin.throttled'),
        `no attempt listed one by one: ${types}`,
      );
      const lines = items.filter((i) => i.type === 'signin.failures');
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const line = lines[0]!;
      assert.equal(line.details.failed, 60 + THROTTLE.perAccountAddress);
      assert.equal(line.details.throttled, 60);
      assert.equal(line.details.capped, false);
      assert.match(String(line.details.since), ISO);
      assert.equal(line.by, 'unknown');
      assert.equal(line.address, address, 'the newest attempt’s address');
      assert.equal(line.userAgent, agent);
      const throttled = (await throttledOf(user.id))[0]!;
      assert.equal(line.at, throttled.details.lastAt, 'at the last throttled attempt');
      // Newest first, the line in the place of the newest attempt.
      for (let i = 1; i < items.length; i++)
        assert.ok(items[i - 1]!.id > items[i]!.id, JSON.stringify(items));
      assert.equal(items[0]!.type, 'signin.failures');
    });

    test('an account with more than 50 events: 49 of its own, the newest, and the line', async () => {
      nextWindow();
      const user = await register(t, newUser());
      const wrong = { email: user.email, password: 'not-the-password-1' };
      assert.equal((await signin(t, wrong, freshAddress('10.78'))).statusCode, 401);
      let token = '';
      for (let i = 0; i < 52; i++) {
        const res = await signin(t, user, freshAddress('10.78'));
        assert.equal(res.statusCode, 200, res.body);
        token = sessionToken(res.headers['set-cookie'])!;
      }
      const res = await send(t, 'GET', '/api/account/activity', { token });
      assert.equal(res.statusCode, 200, res.body);
      const items = res.json() as ActivityItem[];
      assert.equal(items.length, 50);
      const own = (await auditLog(t, admin.token, `userId=${user.id}`)).filter(
        (r) => r.type !== 'signin.failed',
      );
      assert.deepEqual(
        items.filter((i) => i.type !== 'signin.failures').map((i) => i.id),
        own.slice(0, 49).map((r) => r.id),
        'the 49 newest of its own events',
      );
      const line = items.find((i) => i.type === 'signin.failures');
      assert.deepEqual([line?.details.failed, line?.details.throttled], [1, 0]);
      assert.equal(items.at(-1), line, 'older than all of them: last');
    });
  },
);
