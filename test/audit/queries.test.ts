// Reading the audit log (CONTRACT "Administration", docs/audit.md), black-box on both stores:
// GET /api/admin/audit for support and admins, with its filters (userId, a type exactly or as a
// dotted prefix, since inclusive and until exclusive), the collection's paging headers, the count
// capped past 10,000, bad query values refused as 400 INVALID_QUERY, who may read it, and the read
// recorded itself; GET /api/account/activity, each user's own last 50 events, newest first, without
// staff's reads and without staff's addresses.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { assertError, type SignedIn, staff } from '../admin/support.ts';
import { NO_THROTTLE, newUser, register, sessionToken, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';
import {
  ACTIVITY_KEYS,
  type ActivityItem,
  type AuditRecord,
  auditLog,
  eventually,
  freshAddress,
  freshAgent,
  ISO,
  RECORD_KEYS,
  send,
} from './support.ts';

const MINUTE = 60_000;
const DAY = 24 * 3600 * 1000;

/** Strictly decreasing ids: newest first. */
function assertNewestFirst(items: readonly { id: number }[], what: string): void {
  for (let i = 1; i < items.length; i++)
    assert.ok(items[i - 1]!.id > items[i]!.id, `${what}: ${items[i - 1]!.id} before ${items[i]!.id}`);
}

/** The Link header's targets by relation. */
function links(header: string | string[] | number | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of String(header ?? '').split(', ')) {
    const match = /^<([^>]+)>; rel="(\w+)"$/.exec(part);
    if (match) out[match[2]!] = match[1]!;
  }
  return out;
}

describeEachStore('audit log: GET /api/admin/audit and GET /api/account/activity', (store: Store) => {
  let t: TestApp;
  let admin: SignedIn;
  let support: SignedIn;
  let plain: SignedIn;
  /** Added to the app's clock, to space records out in time. */
  let offset = 0;

  before(async () => {
    t = await startApp(store, 'a', { throttle: { ...NO_THROTTLE } }, { clock: () => Date.now() + offset });
    admin = await staff(t, store, 'admin');
    support = await staff(t, store, 'support');
    plain = await staff(t, store, 'user');
  });
  after(() => t?.close());

  /** A registered user, signed in; some wrong passwords too when `failures` is given. */
  async function active(failures = 0) {
    const user = await register(t, newUser());
    for (let i = 0; i < failures; i++) {
      const wrong = await send(t, 'POST', '/api/signin', {
        body: { email: user.email, password: 'not-the-password-1' },
        address: freshAddress(),
      });
      assert.equal(wrong.statusCode, 401);
    }
    const address = freshAddress();
    const userAgent = freshAgent('sign-in');
    const res = await send(t, 'POST', '/api/signin', {
      body: { email: user.email, password: user.password },
      address,
      userAgent,
    });
    assert.equal(res.statusCode, 200, res.body);
    return { ...user, token: sessionToken(res.headers['set-cookie'])!, address, userAgent };
  }

  const read = (query: string, token = admin.token) => send(t, 'GET', `/api/admin/audit?${query}`, { token });
  const activity = async (token: string) => {
    const res = await send(t, 'GET', '/api/account/activity', { token });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as ActivityItem[];
  };

  describe('GET /api/admin/audit', () => {
    test('userId: only the records about that account, newest first, each with the record’s fields', async () => {
      const a = await active(1);
      const b = await active(1);
      const records = await auditLog(t, admin.token, `userId=${a.id}`);
      assert.ok(records.length >= 3, JSON.stringify(records));
      for (const r of records) {
        assert.equal(r.userId, Number(a.id), JSON.stringify(r));
        assert.deepEqual(Object.keys(r).sort(), RECORD_KEYS);
        assert.match(r.at, ISO);
      }
      assertNewestFirst(records, 'userId');
      const types = records.map((r) => r.type);
      for (const type of ['user.created', 'signin.failed', 'signin.succeeded'])
        assert.ok(types.includes(type), `${type} in ${types}`);
      const ofB = new Set((await auditLog(t, admin.token, `userId=${b.id}`)).map((r) => r.id));
      assert.ok(ofB.size >= 3);
      assert.ok(
        records.every((r) => !ofB.has(r.id)),
        'none of the other account’s records',
      );
    });

    test('type: an exact type, or a whole dotted prefix (signin finds signin.succeeded and signin.failed, not signout); a part of a word finds nothing', async () => {
      const user = await active(1);
      assert.equal((await send(t, 'POST', '/api/signout', { token: user.token })).statusCode, 204);
      const of = (type: string) => auditLog(t, admin.token, `userId=${user.id}&type=${type}`);

      const failed = await of('signin.failed');
      assert.deepEqual(
        failed.map((r) => r.type),
        ['signin.failed'],
      );
      const signins = await of('signin');
      assert.deepEqual(signins.map((r) => r.type).sort(), ['signin.failed', 'signin.succeeded']);
      assertNewestFirst(signins, 'type=signin');
      assert.deepEqual(
        (await of('signout')).map((r) => r.type),
        ['signout'],
      );
      assert.deepEqual(await of('sign'), [], '"sign" is not a dotted part of signin.* or signout');
      assert.deepEqual(await of('signin.succeeded.x'), []);
      assert.deepEqual(
        await of('user'),
        (await of('user.created')).filter((r) => r.type === 'user.created'),
      );

      // admin.user leads admin.user.viewed but not admin.users.searched; admin leads both.
      assert.equal(
        (await send(t, 'GET', `/api/admin/users/${user.id}`, { token: admin.token })).statusCode,
        200,
      );
      assert.equal((await send(t, 'GET', '/api/admin/users?q=zzz', { token: admin.token })).statusCode, 200);
      const adminUser = await auditLog(t, admin.token, 'type=admin.user');
      assert.ok(adminUser.some((r) => r.type === 'admin.user.viewed'));
      assert.ok(
        adminUser.every((r) => r.type.startsWith('admin.user.')),
        adminUser.map((r) => r.type).join(),
      );
      const anyAdmin = new Set((await auditLog(t, admin.token, 'type=admin')).map((r) => r.type));
      assert.ok(
        anyAdmin.has('admin.users.searched') && anyAdmin.has('admin.user.viewed'),
        [...anyAdmin].join(),
      );
      assert.ok([...anyAdmin].every((type) => type.startsWith('admin.')));
    });

    test('since is inclusive and until exclusive, to the millisecond, in any zone; a date alone is its midnight UTC', async () => {
      const user = await register(t, newUser());
      for (let i = 0; i < 3; i++) {
        offset += MINUTE;
        await send(t, 'POST', '/api/signin', {
          body: { email: user.email, password: 'not-the-password-1' },
          address: freshAddress(),
        });
      }
      const all = await auditLog(t, admin.token, `userId=${user.id}`);
      assert.equal(all.length, 4, JSON.stringify(all));
      const [, second, third] = [...all].reverse().map((r) => ({ ...r, ms: Date.parse(r.at) }));
      const ids = async (query: string) =>
        (await auditLog(t, admin.token, `userId=${user.id}&${query}`)).map((r) => r.id);
      const iso = (ms: number) => new Date(ms).toISOString();
      const expected = (keep: (ms: number) => boolean) =>
        all.filter((r) => keep(Date.parse(r.at))).map((r) => r.id);

      assert.deepEqual(
        await ids(`since=${second!.at}`),
        expected((ms) => ms >= second!.ms),
        'since: inclusive',
      );
      assert.ok((await ids(`since=${second!.at}`)).includes(second!.id));
      assert.ok(!(await ids(`since=${iso(second!.ms + 1)}`)).includes(second!.id), 'a millisecond later');
      assert.deepEqual(
        await ids(`until=${third!.at}`),
        expected((ms) => ms < third!.ms),
        'until: exclusive',
      );
      assert.ok(!(await ids(`until=${third!.at}`)).includes(third!.id));
      assert.ok((await ids(`until=${iso(third!.ms + 1)}`)).includes(third!.id), 'a millisecond later');
      assert.deepEqual(await ids(`since=${second!.at}&until=${third!.at}`), [second!.id], 'both');

      // The same instant written in another zone.
      const zoned = new Date(second!.ms + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      assert.deepEqual(await ids(`since=${encodeURIComponent(zoned)}`), await ids(`since=${second!.at}`));
      // A date alone: midnight UTC of that day.
      const nextDay = new Date(second!.ms + DAY).toISOString().slice(0, 10);
      const midnight = Date.parse(`${nextDay}T00:00:00.000Z`);
      assert.deepEqual(
        await ids(`until=${nextDay}`),
        expected((ms) => ms < midnight),
      );
      assert.deepEqual(
        await ids(`since=${nextDay}`),
        expected((ms) => ms >= midnight),
      );
    });

    test('paging: X-Total-Count, a Link (first, prev, next, last) keeping the filters, pages that follow each other newest first', async () => {
      const user = await active(5);
      const everything = await auditLog(t, admin.token, `userId=${user.id}`);
      const total = everything.length;
      assert.ok(total >= 7, `${total}`);
      const lastPage = Math.ceil(total / 3);
      const seen: AuditRecord[] = [];
      for (let page = 1; page <= lastPage; page++) {
        const res = await read(`userId=${user.id}&size=3&page=${page}`);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['x-total-count'], String(total));
        assert.equal(res.headers['x-total-count-capped'], undefined);
        const rel = links(res.headers.link);
        const at = (p: number) => `/api/admin/audit?userId=${user.id}&size=3&page=${p}`;
        const target = (href: string | undefined) => {
          assert.ok(href, res.headers.link as string);
          const url = new URL(href, 'http://x');
          return `${url.pathname}?userId=${url.searchParams.get('userId')}&size=${url.searchParams.get('size')}&page=${url.searchParams.get('page')}`;
        };
        assert.equal(target(rel.first), at(1));
        assert.equal(target(rel.last), at(lastPage));
        if (page > 1) assert.equal(target(rel.prev), at(page - 1));
        else assert.equal(rel.prev, undefined);
        if (page < lastPage) assert.equal(target(rel.next), at(page + 1));
        else assert.equal(rel.next, undefined);
        const records = res.json() as AuditRecord[];
        assert.equal(records.length, page < lastPage ? 3 : total - 3 * (lastPage - 1));
        seen.push(...records);
      }
      assert.deepEqual(
        seen.map((r) => r.id),
        everything.map((r) => r.id),
        'the pages together are the whole list, in order',
      );
      const beyond = await read(`userId=${user.id}&size=3&page=${lastPage + 1}`);
      assert.equal(beyond.statusCode, 200);
      assert.deepEqual(beyond.json(), []);
      const byDefault = await read(`userId=${user.id}`);
      assert.equal(byDefault.statusCode, 200);
      assert.equal(byDefault.json().length, Math.min(total, 20), 'size 20 by default');
    });

    test('bad query values are 400 INVALID_QUERY: userId, type, since, until, since not before until, page, size', async () => {
      for (const query of [
        'userId=abc',
        'userId=0',
        'userId=-1',
        'userId=1.5',
        'userId=99999999999999999999',
        'userId=9999999999999999999',
        'type=Signin',
        'type=signin.',
        'type=.signin',
        'type=signin..failed',
        'type=signin%25',
        'type=sign-in',
        'type=a.b.c.d.e',
        `type=${'a'.repeat(33)}`,
        'since=yesterday',
        'since=2026-13-45',
        'since=2026-02-30T25:00:00Z',
        'since=1700000000000',
        'since=2026-11-27T10:00:00',
        'until=not-a-date',
        'until=2026-11-27T10:00Z1',
        'since=2026-11-27T10:00:00.000Z&until=2026-11-27T10:00:00.000Z',
        'since=2026-11-28&until=2026-11-27',
        'page=0',
        'page=-1',
        'page=x',
        'size=0',
        'size=101',
        'size=many',
        'page=101&size=100',
      ]) {
        assertError(await read(query), 400, 'INVALID_QUERY', query);
      }
    });

    test('support may read it; a plain user is 403 FORBIDDEN; no session is 401 UNAUTHENTICATED', async () => {
      const bySupport = await read('size=5', support.token);
      assert.equal(bySupport.statusCode, 200, bySupport.body);
      assert.ok(Array.isArray(bySupport.json()));
      assertError(await read('size=5', plain.token), 403, 'FORBIDDEN', 'a plain user');
      assertError(await send(t, 'GET', '/api/admin/audit'), 401, 'UNAUTHENTICATED', 'no session');
      assertError(
        await send(t, 'GET', '/api/admin/audit', { token: 'not-a-session-token' }),
        401,
        'UNAUTHENTICATED',
        'a made-up token',
      );
    });

    test('reading the log is recorded: admin.audit.viewed with the filters and page', async () => {
      const user = await register(t, newUser());
      const since = new Date(Date.now() - 7 * DAY + Math.floor(Math.random() * 1000)).toISOString();
      const res = await read(`userId=${user.id}&type=signin&since=${since}&page=2&size=5`, support.token);
      assert.equal(res.statusCode, 200, res.body);
      const viewed = (await auditLog(t, admin.token, 'type=admin.audit.viewed')).find(
        (r) => r.details.since === since,
      );
      assert.ok(viewed, 'the read is recorded');
      assert.equal(viewed.type, 'admin.audit.viewed');
      assert.match(viewed.at, ISO);
      assert.deepEqual(viewed.details, {
        userId: Number(user.id),
        type: 'signin',
        since,
        until: null,
        page: 2,
      });
    });

    test('reading the log is recorded with the reader as actor, from their address and User-Agent', async () => {
      const address = freshAddress();
      const userAgent = freshAgent('reads the log');
      const marker = new Date(Date.now() - 3 * DAY + Math.floor(Math.random() * 1000)).toISOString();
      const res = await send(t, 'GET', `/api/admin/audit?since=${marker}`, {
        token: support.token,
        address,
        userAgent,
      });
      assert.equal(res.statusCode, 200, res.body);
      const viewed = (await auditLog(t, admin.token, 'type=admin.audit.viewed')).find(
        (r) => r.details.since === marker,
      );
      assert.ok(viewed);
      assert.deepEqual(
        { actorId: viewed.actorId, address: viewed.address, userAgent: viewed.userAgent },
        { actorId: Number(support.id), address, userAgent },
      );
    });

    test('listing webhooks (another admin read) is recorded with the admin as actor', async () => {
      const address = freshAddress();
      const userAgent = freshAgent('lists webhooks');
      const listed = await send(t, 'GET', '/api/admin/webhooks', { token: admin.token, address, userAgent });
      assert.equal(listed.statusCode, 200, listed.body);
      const [webhooks] = await auditLog(t, admin.token, 'type=admin.webhooks.listed');
      assert.ok(webhooks, 'admin.webhooks.listed is recorded');
      assert.deepEqual(
        { actorId: webhooks.actorId, address: webhooks.address, userAgent: webhooks.userAgent },
        { actorId: Number(admin.id), address, userAgent },
      );
    });

    test('a day that does not exist (February 30) is 400 INVALID_QUERY, not read as March 2', async () => {
      for (const query of ['since=2026-02-30', 'until=2026-02-30T10:00:00Z', 'since=2026-04-31']) {
        const res = await read(query);
        assert.equal(res.statusCode, 400, `${query}: ${res.statusCode}`);
        assertError(res, 400, 'INVALID_QUERY', query);
      }
    });
  });

  describe('GET /api/account/activity', () => {
    test('a user sees their own events only, newest first, each with exactly the item’s fields: their sign-in by you, a failed one by unknown with its address', async () => {
      const a = await active(1);
      const b = await active(1);
      const items = await activity(a.token);
      for (const item of items) {
        assert.deepEqual(Object.keys(item).sort(), ACTIVITY_KEYS, JSON.stringify(item));
        assert.match(item.at, ISO);
        assert.ok(['you', 'staff', 'unknown'].includes(item.by));
      }
      assertNewestFirst(items, 'activity');
      const audit = await auditLog(t, admin.token, `userId=${a.id}`);
      assert.deepEqual(
        items.filter((i) => i.type !== 'signin.failures').map((i) => [i.id, i.type]),
        audit.filter((r) => r.type !== 'signin.failed').map((r) => [r.id, r.type]),
        'the same records as the audit log holds about the account, but the failures',
      );
      const ofB = new Set((await auditLog(t, admin.token, `userId=${b.id}`)).map((r) => r.id));
      assert.ok(ofB.size > 0);
      assert.ok(
        items.every((i) => !ofB.has(i.id)),
        'nothing of the other user',
      );
      const signedIn = items.find((i) => i.type === 'signin.succeeded');
      assert.equal(signedIn?.by, 'you');
      assert.equal(signedIn?.address, a.address);
      assert.equal(signedIn?.userAgent, a.userAgent);
      const failed = audit.find((r) => r.type === 'signin.failed');
      const line = items.find((i) => i.type === 'signin.failures');
      assert.equal(line?.by, 'unknown');
      assert.equal(line?.id, failed?.id, 'the failures’ line stands for the newest of them');
      assert.equal(line?.address, failed?.address, 'a failed sign-in’s address is the account’s to see');
      assert.deepEqual(line?.details.failed, 1);
    });

    test('at most the 50 newest of the account’s own events; failures by anyone are one line', async () => {
      const user = await active(55);
      const items = await activity(user.token);
      const audit = await auditLog(t, admin.token, `userId=${user.id}`);
      assert.ok(audit.length > 50, `${audit.length}`);
      assert.deepEqual(
        items.map((i) => i.id),
        [
          audit.find((r) => r.type === 'signin.succeeded')!.id,
          audit.find((r) => r.type === 'signin.failed')!.id,
          audit.find((r) => r.type === 'user.created')!.id,
        ],
        'the sign-in, the line of 55 failures, the account made',
      );
      assert.equal(items[1]!.details.failed, 55);
    });

    test('staff reading the account is left out; what staff changed is listed, by staff, without their address or User-Agent', async () => {
      const user = await active();
      const address = freshAddress();
      const userAgent = freshAgent('staff');
      const viewed = await send(t, 'GET', `/api/admin/users/${user.id}`, {
        token: admin.token,
        address,
        userAgent,
      });
      assert.equal(viewed.statusCode, 200, viewed.body);
      const patched = await send(t, 'PATCH', `/api/admin/users/${user.id}`, {
        token: admin.token,
        body: { name: 'Renamed By Staff', role: 'support' },
        address,
        userAgent,
      });
      assert.equal(patched.statusCode, 200, patched.body);
      const audit = await auditLog(t, admin.token, `userId=${user.id}`);
      assert.ok(
        audit.some((r) => r.type === 'admin.user.viewed'),
        'the read is in the audit log',
      );
      const items = await activity(user.token);
      assert.ok(!items.some((i) => i.type === 'admin.user.viewed'), 'but not in the activity');
      for (const type of ['admin.user.updated', 'user.role_changed']) {
        const item = items.find((i) => i.type === type);
        assert.ok(item, `${type} is listed`);
        assert.equal(item.by, 'staff');
        assert.equal(item.address, null);
        assert.equal(item.userAgent, null);
        const record = audit.find((r) => r.id === item.id);
        assert.equal(record?.address, address, 'the audit log keeps the staff address');
        assert.deepEqual(item.details, record?.details);
      }
    });

    test('no session is 401 UNAUTHENTICATED', async () => {
      assertError(await send(t, 'GET', '/api/account/activity'), 401, 'UNAUTHENTICATED', 'no session');
      assertError(
        await send(t, 'GET', '/api/account/activity', { token: randomBytes(32).toString('base64url') }),
        401,
        'UNAUTHENTICATED',
        'a made-up token',
      );
    });

    test('a refused admin call is the caller’s to know, not the account’s: it is in the audit log, never in the activity', async () => {
      const user = await active();
      assert.equal((await send(t, 'GET', '/api/admin/users', { token: user.token })).statusCode, 403);
      await eventually(t, admin.token, 'admin.refused', (r) => r.actorId === Number(user.id));
      const items = await activity(user.token);
      assert.ok(!items.some((i) => i.type === 'admin.refused'), JSON.stringify(items));
    });
  });
});

describeEachStore('audit log: counting past 10,000', (store: Store) => {
  let t: TestApp;
  let admin: SignedIn;
  before(async () => {
    t = await startApp(store, 'b', { throttle: { ...NO_THROTTLE } });
    admin = await staff(t, store, 'admin');
    // Rows set up directly: 10,001 records through the API would take minutes.
    const database = openTestDatabase(store);
    try {
      const at = new Date().toISOString();
      const rows = Array.from({ length: 10_001 }, (_, i) => ({
        created_at: at,
        type: 'bulk.row',
        actor_id: null,
        user_id: null,
        address: null,
        user_agent: null,
        details: JSON.stringify({ n: i }),
      }));
      await database.db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += 1000)
          await trx
            .insertInto('audit_events')
            .values(rows.slice(i, i + 1000))
            .execute();
      });
    } finally {
      await database.close();
    }
  });
  after(() => t?.close());

  test('past 10,000 matching records X-Total-Count says 10000 and X-Total-Count-Capped is sent; the 100th page of 100 is served, the 101st is 400 INVALID_QUERY', async () => {
    const res = await send(t, 'GET', '/api/admin/audit?type=bulk&size=100', { token: admin.token });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['x-total-count'], '10000');
    assert.equal(res.headers['x-total-count-capped'], 'true');
    assert.equal(res.json().length, 100);
    const last = links(res.headers.link).last;
    assert.ok(last && new URL(last, 'http://x').searchParams.get('page') === '100', String(res.headers.link));
    const deepest = await send(t, 'GET', '/api/admin/audit?type=bulk&size=100&page=100', {
      token: admin.token,
    });
    assert.equal(deepest.statusCode, 200, deepest.body);
    assert.equal(deepest.json().length, 100);
    assertError(
      await send(t, 'GET', '/api/admin/audit?type=bulk&size=100&page=101', { token: admin.token }),
      400,
      'INVALID_QUERY',
      'past the depth',
    );
    const narrowed = await send(t, 'GET', `/api/admin/audit?userId=${admin.id}`, { token: admin.token });
    assert.equal(narrowed.statusCode, 200);
    assert.equal(narrowed.headers['x-total-count-capped'], undefined, 'a narrowed search is counted exactly');
  });
});
