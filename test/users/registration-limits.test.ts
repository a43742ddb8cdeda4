// Issue 25, "Registration has no limit": 150 simultaneous POST /api/users from one address made
// 200 accounts in 8 s and filled the hash queue. Registration is now limited per client address
// (IPv6: per /64) per 15 minutes in the shared database, and in how many are worked on at once,
// per address (429) and in all (503), before any hashing. The admin CLI is not limited.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LightMyRequestResponse } from 'fastify';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import { CHEAP_HASH, NO_REGISTRATION_LIMITS, newUser, startApp, type TestApp } from '../helpers/app.ts';
import { runProcess } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];

/** Sends the request now (see burst.test.ts: a chain awaited later would start out of order). */
const sent = (request: PromiseLike<LightMyRequestResponse>): Promise<LightMyRequestResponse> =>
  Promise.resolve(request.then((res) => res));

const registerFrom = (t: TestApp, address: string, body: unknown = newUser(), headers = {}) =>
  sent(
    t.inject({
      method: 'POST',
      url: '/api/users',
      remoteAddress: address,
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(body),
    }),
  );

function tally(responses: readonly LightMyRequestResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.statusCode] = (counts[r.statusCode] ?? 0) + 1;
  return counts;
}

/** usher_password_hash_seconds_count: every argon2 run of that app. */
async function hashCount(t: TestApp): Promise<number> {
  const m = /^usher_password_hash_seconds_count(?:\{[^}]*\})? (\d+)$/m.exec((await t.get('/metrics')).body);
  assert.ok(m, 'usher_password_hash_seconds_count is in /metrics');
  return Number(m[1]);
}

function assertCreated(res: LightMyRequestResponse, profile: Profile, what: string) {
  assert.equal(res.statusCode, 201, `${what}: ${res.body}`);
  const keys =
    profile === 'a' ? ['email', 'id', 'name'] : ['createdAt', 'email', 'emailVerified', 'id', 'name'];
  assert.deepEqual(Object.keys(res.json()).sort(), keys, what);
}

function assertRefused(res: LightMyRequestResponse, status: 429 | 503, what: string) {
  assert.equal(res.statusCode, status, `${what}: ${res.body}`);
  assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'message'], what);
  assert.equal(res.json().error, status === 429 ? 'TOO_MANY_REQUESTS' : 'UNAVAILABLE', what);
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1,
    `${what}: Retry-After ${res.headers['retry-after']}`,
  );
  return retryAfter;
}

let block = 0;
/** A /24 of its own for each test (tests share the database, and with it the counts). */
const freshNet = () => {
  block += 1;
  return (host: number) => `10.25.${block}.${host}`;
};

/** Only the limit a test is about binds. */
const limits = (over: Partial<Config['registration']>): Partial<Config> => ({
  registration: { ...NO_REGISTRATION_LIMITS, ...over },
});

describeEachStore('registration limits', (store) => {
  for (const profile of PROFILES) {
    test(`[${profile}] ISSUE 25: REGISTRATION_MAX_PER_ADDRESS registrations per address per 15 minutes, then 429 TOO_MANY_REQUESTS with Retry-After; other addresses unaffected`, async () => {
      const t = await startApp(store, profile, limits({ perAddress: 3 }));
      const net = freshNet();
      try {
        const address = net(10);
        for (let i = 0; i < 3; i++)
          assertCreated(await registerFrom(t, address), profile, `registration ${i + 1}`);
        const before = await hashCount(t);
        const refused = await registerFrom(t, address);
        const retryAfter = assertRefused(refused, 429, 'the 4th from the address');
        assert.ok(retryAfter <= 900, `within the 15-minute window: ${retryAfter}`);
        assert.equal(await hashCount(t), before, 'a refused registration costs no hash');
        assertCreated(await registerFrom(t, net(11)), profile, 'another address');
        // A refused registration made nothing: the email is still free.
        const body = newUser();
        assertRefused(await registerFrom(t, address, body), 429, 'again from the address');
        assertCreated(await registerFrom(t, net(12), body), profile, 'the same email from elsewhere');
      } finally {
        await t.close();
      }
    });
  }

  test('ISSUE 25: the window slides: after 15 minutes the address may register again', async () => {
    let offset = 0;
    const t = await startApp(store, 'b', limits({ perAddress: 2 }), { clock: () => Date.now() + offset });
    try {
      const address = freshNet()(20);
      assertCreated(await registerFrom(t, address), 'b', 'first');
      offset += 5 * 60_000;
      assertCreated(await registerFrom(t, address), 'b', 'second');
      const retryAfter = assertRefused(await registerFrom(t, address), 429, 'third');
      // The first leaves the window 15 minutes after it was made: 10 minutes from now.
      assert.ok(retryAfter > 9 * 60 && retryAfter <= 10 * 60, `Retry-After ${retryAfter}`);
      offset += retryAfter * 1000;
      assertCreated(await registerFrom(t, address), 'b', 'once the first left the window');
      assertRefused(await registerFrom(t, address), 429, 'and then the limit again');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: a duplicate email (409) counts towards the address limit, so it also bounds probing for taken emails', async () => {
    const t = await startApp(store, 'b', limits({ perAddress: 3 }));
    const net = freshNet();
    try {
      const address = net(30);
      const taken = newUser();
      assertCreated(await registerFrom(t, net(31), taken), 'b', 'the account probed for');
      for (let i = 0; i < 3; i++) {
        const res = await registerFrom(t, address, newUser({ email: taken.email }));
        assert.equal(res.statusCode, 409, res.body);
      }
      assertRefused(await registerFrom(t, address, newUser({ email: taken.email })), 429, 'the 4th probe');
      // A body that breaks the rules is refused before it is counted.
      const bad = await registerFrom(t, address, newUser({ email: 'not-an-email' }));
      assert.equal(bad.statusCode, 400);
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: two instances on one database count an address together', async () => {
    const one = await startApp(store, 'b', limits({ perAddress: 4 }));
    const two = await startApp(store, 'b', limits({ perAddress: 4 }));
    try {
      const address = freshNet()(40);
      for (let i = 0; i < 4; i++)
        assertCreated(await registerFrom(i % 2 ? one : two, address), 'b', `#${i + 1}`);
      assertRefused(await registerFrom(one, address), 429, 'the 5th, on one');
      assertRefused(await registerFrom(two, address), 429, 'the 5th, on two');
    } finally {
      await one.close();
      await two.close();
    }
  });

  test('ISSUE 25: IPv6 addresses are counted by /64, IPv4-mapped ones as their IPv4 address', async () => {
    const t = await startApp(store, 'b', limits({ perAddress: 2 }));
    try {
      const v4 = freshNet()(25);
      const v6 = `2001:db8:${block}`;
      assertCreated(await registerFrom(t, `${v6}:1::1`), 'b', 'one /128 of the /64');
      assertCreated(await registerFrom(t, `${v6}:1:ffff::2`), 'b', 'another /128 of the /64');
      assertRefused(await registerFrom(t, `${v6}:1:abcd:ef01:2345:6789`), 429, 'a third /128 of the /64');
      assertCreated(await registerFrom(t, `${v6}:2::1`), 'b', 'the next /64');

      assertCreated(await registerFrom(t, v4), 'b', 'IPv4');
      assertCreated(await registerFrom(t, `::ffff:${v4}`), 'b', 'the same, IPv4-mapped');
      assertRefused(await registerFrom(t, v4), 429, 'a third from that IPv4 address');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: behind a trusted proxy, the address counted is the client the proxy names', async () => {
    const t = await startApp(store, 'b', { ...limits({ perAddress: 1 }), trustProxy: ['127.0.0.1'] });
    const net = freshNet();
    try {
      const viaProxy = (client: string) =>
        registerFrom(t, '127.0.0.1', newUser(), { 'x-forwarded-for': client });
      assertCreated(await viaProxy(net(1)), 'b', 'one client');
      assertCreated(await viaProxy(net(2)), 'b', 'another client through the same proxy');
      assertRefused(await viaProxy(net(1)), 429, 'the first client again');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: at most REGISTRATION_MAX_CONCURRENT_PER_ADDRESS from one address at once; the rest get 429 at once, unhashed', async () => {
    // 30 registrations from one address arrive within a few milliseconds, and each hash (16 MiB,
    // 3 passes) takes tens of milliseconds, so more than 2 are in progress at once.
    const t = await startApp(store, 'b', {
      ...limits({ concurrentPerAddress: 2 }),
      passwordHash: { ...CHEAP_HASH, memoryKiB: 16384, passes: 3 },
    });
    const net = freshNet();
    try {
      const before = await hashCount(t);
      const results = await Promise.all(Array.from({ length: 30 }, () => registerFrom(t, net(50))));
      const hashed = (await hashCount(t)) - before;
      const statuses = tally(results);
      const seen = `statuses ${JSON.stringify(statuses)}, ${hashed} hashes`;
      assert.equal((statuses[201] ?? 0) + (statuses[429] ?? 0), 30, `only 201 and 429 (${seen})`);
      assert.ok((statuses[429] ?? 0) >= 1, `some beyond 2 at once get 429 (${seen})`);
      assert.equal(hashed, statuses[201], `no 429 cost a hash (${seen})`);
      for (const r of results) if (r.statusCode === 429) assertRefused(r, 429, 'concurrency');
      // Another address is not held up by this one's.
      assertCreated(await registerFrom(t, net(51)), 'b', 'another address');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: at most REGISTRATION_MAX_CONCURRENT in progress in all; the rest get 503 UNAVAILABLE with Retry-After at once, unhashed', async () => {
    const t = await startApp(store, 'b', {
      ...limits({ concurrent: 3 }),
      passwordHash: { ...CHEAP_HASH, memoryKiB: 16384, passes: 3 },
    });
    const net = freshNet();
    try {
      const before = await hashCount(t);
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => registerFrom(t, net(i + 1))));
      const hashed = (await hashCount(t)) - before;
      const statuses = tally(results);
      const seen = `statuses ${JSON.stringify(statuses)}, ${hashed} hashes`;
      assert.equal((statuses[201] ?? 0) + (statuses[503] ?? 0), 30, `only 201 and 503 (${seen})`);
      assert.ok((statuses[503] ?? 0) >= 1, `some beyond 3 at once get 503 (${seen})`);
      assert.equal(hashed, statuses[201], `no 503 cost a hash (${seen})`);
      for (const r of results) if (r.statusCode === 503) assertRefused(r, 503, 'overall concurrency');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: networks over their own limit do not hold the process-wide slots: their registrations are refused (429) without one, and others still register', async () => {
    const t = await startApp(
      store,
      'b',
      limits({ concurrent: 2, perAddress: 1, concurrentPerAddress: 1000 }),
    );
    const net = freshNet();
    try {
      const spent = Array.from({ length: 8 }, (_, i) => net(i + 1));
      for (const address of spent) assertCreated(await registerFrom(t, address), 'b', 'the one each may');
      // Each spent network keeps sending; a newcomer's registration arrives behind all of them.
      const flood = spent.flatMap((address) => Array.from({ length: 5 }, () => registerFrom(t, address)));
      const newcomer = registerFrom(t, net(200));
      const results = await Promise.all(flood);
      for (const r of results) assertRefused(r, 429, 'a spent network');
      assertCreated(await newcomer, 'b', 'the newcomer');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: the attack: 150 simultaneous registrations from one address, then more one by one, with the default limits make at most REGISTRATION_MAX_PER_ADDRESS accounts', async () => {
    const defaults = loadConfig({}).registration;
    const t = await startApp(store, 'b', { registration: defaults });
    const address = freshNet()(60);
    try {
      const burst = await Promise.all(Array.from({ length: 150 }, () => registerFrom(t, address)));
      const after = [];
      for (let i = 0; i < 20; i++) after.push(await registerFrom(t, address));
      const statuses = tally([...burst, ...after]);
      const seen = JSON.stringify(statuses);
      assert.equal((statuses[201] ?? 0) + (statuses[429] ?? 0), 170, `only 201 and 429 (${seen})`);
      assert.equal(statuses[201], defaults.perAddress, `exactly ${defaults.perAddress} accounts (${seen})`);
      for (const r of [...burst, ...after]) if (r.statusCode === 429) assertRefused(r, 429, 'the attack');
      assert.equal(after.at(-1)?.statusCode, 429, 'still refused at the end');
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: the admin CLI is not limited: users import registers more rows than an address may', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'usher-limits-'));
    const file = join(dir, 'users.jsonl');
    const rows = Array.from({ length: 4 }, () => newUser());
    writeFileSync(file, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const cli = fileURLToPath(new URL('../../bin/usher.mjs', import.meta.url));
    const run = await runProcess(process.execPath, [cli, 'users', 'import', file], {
      DATABASE_URL: store.url,
      REGISTRATION_MAX_PER_ADDRESS: '1',
      REGISTRATION_MAX_CONCURRENT_PER_ADDRESS: '1',
      REGISTRATION_MAX_CONCURRENT: '1',
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout + run.stderr, /imported 4/);
  });
});

test('ISSUE 25: the registration and email-change settings are read and validated by config.ts', async () => {
  const { ConfigError } = await import('../../src/config.ts');
  const defaults = loadConfig({});
  assert.deepEqual(defaults.registration, {
    perAddress: 10,
    windowMs: 900_000,
    concurrentPerAddress: 2,
    concurrent: 16,
  });
  assert.deepEqual(defaults.emailChange, { perAccount: 3, perMailbox: 3, windowMs: 900_000 });
  assert.equal(defaults.passwordHash.signinSharePercent, 50);
  const set = loadConfig({
    REGISTRATION_MAX_PER_ADDRESS: '50',
    REGISTRATION_MAX_CONCURRENT_PER_ADDRESS: '4',
    REGISTRATION_MAX_CONCURRENT: '32',
    EMAIL_CHANGE_MAX_PER_ACCOUNT: '5',
    EMAIL_CHANGE_MAX_PER_MAILBOX: '6',
    HASH_SIGNIN_SHARE: '75',
  });
  assert.deepEqual(
    [set.registration.perAddress, set.registration.concurrentPerAddress, set.registration.concurrent],
    [50, 4, 32],
  );
  assert.deepEqual([set.emailChange.perAccount, set.emailChange.perMailbox], [5, 6]);
  assert.equal(set.passwordHash.signinSharePercent, 75);
  for (const [name, value] of [
    ['REGISTRATION_MAX_PER_ADDRESS', '0'],
    ['REGISTRATION_MAX_CONCURRENT_PER_ADDRESS', 'two'],
    ['REGISTRATION_MAX_CONCURRENT', '-1'],
    ['EMAIL_CHANGE_MAX_PER_ACCOUNT', '0'],
    ['EMAIL_CHANGE_MAX_PER_MAILBOX', '1001'],
    ['HASH_SIGNIN_SHARE', '100'],
    ['HASH_SIGNIN_SHARE', '0'],
  ] as const) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (e: unknown) => e instanceof ConfigError && e.setting === name,
      `${name}=${value}`,
    );
  }
});
