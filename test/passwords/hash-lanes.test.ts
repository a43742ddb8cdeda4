// Issue 25: "150 concurrent POST /api/users from one address filled the hash queue for the whole
// run: every legitimate sign-in answered 503". Sign-in now hashes in a lane of its own
// (passwords/hasher.ts): other hashing may hold only part of the slots and of the queue, and a
// freed slot goes to a lane below its guaranteed share first. So a flood of registrations that
// keeps its own part of the queue full leaves sign-in its part, and the other way round.
//
// The floods below come from many addresses, with the registration limits and the sign-in
// throttle lifted, so that the hash lanes are the only thing that can keep each lane's requests
// apart: what is shown is the lane, not the per-address limits in front of it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Config } from '../../src/config.ts';
import { hashLanes } from '../../src/passwords/hasher.ts';
import { CHEAP_HASH, NO_THROTTLE, newUser, register, startApp, type TestApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/mail.ts';
import { describeEachStore } from '../helpers/stores.ts';

/**
 * Two slots and 20 queue places (10 each by default), each hash some tens of milliseconds: a
 * flood of 60 clients that send again as soon as they are answered keeps a queue this small full.
 */
const SMALL_POOL: Partial<Config> = {
  passwordHash: { ...CHEAP_HASH, memoryKiB: 16384, passes: 3, concurrency: 2, queueLimit: 20 },
  throttle: NO_THROTTLE,
};

const FLOODERS = 60;

const post = (t: TestApp, url: string, address: string, body: unknown) =>
  Promise.resolve(
    t
      .inject({ method: 'POST', url, remoteAddress: address, payload: body as object })
      .then((res: LightMyRequestResponse) => res),
  );

/**
 * Runs `FLOODERS` clients, each sending `request` again as soon as it is answered, until the
 * returned `stop` is called; `stop` resolves with the statuses they got.
 */
function flood(send: (client: number) => Promise<LightMyRequestResponse>) {
  let running = true;
  const statuses: Record<number, number> = {};
  const clients = Array.from({ length: FLOODERS }, async (_, client) => {
    while (running) {
      const res = await send(client);
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    }
  });
  return {
    statuses,
    stop: async () => {
      running = false;
      await Promise.all(clients);
      return statuses;
    },
  };
}

describeEachStore('hash lanes', (store) => {
  test('ISSUE 25: while a flood of registrations keeps the hash queue full (some answered 503), sign-ins still succeed: 200, never 503', async () => {
    const t = await startApp(store, 'b', SMALL_POOL);
    try {
      const owner = await register(t);
      const registrations = flood((client) =>
        post(t, '/api/users', `10.26.${client >> 8}.${client & 255}`, newUser()),
      );
      try {
        // The flood is past what the account lane holds: registrations are being refused.
        await waitUntil(() => (registrations.statuses[503] ?? 0) >= 5, 30_000, 'registrations refused 503');
        for (let i = 0; i < 5; i++) {
          const res = await post(t, '/api/signin', '192.0.2.250', {
            email: owner.email,
            password: owner.password,
          });
          assert.equal(
            res.statusCode,
            200,
            `sign-in ${i + 1} during the flood: ${res.statusCode} ${res.body}`,
          );
        }
      } finally {
        const statuses = await registrations.stop();
        assert.ok(
          (statuses[201] ?? 0) >= 1,
          `the flood's registrations went on too: ${JSON.stringify(statuses)}`,
        );
        assert.deepEqual(
          Object.keys(statuses).filter((s) => s !== '201' && s !== '503'),
          [],
          `registrations answered 201 or 503 only: ${JSON.stringify(statuses)}`,
        );
      }
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: while a flood of sign-ins keeps the hash queue full (some answered 503), registrations still succeed: 201, never 503', async () => {
    const t = await startApp(store, 'b', SMALL_POOL);
    try {
      const target = await register(t);
      const signins = flood((client) =>
        post(t, '/api/signin', `10.27.${client >> 8}.${client & 255}`, {
          email: target.email,
          password: 'not the password',
        }),
      );
      try {
        await waitUntil(() => (signins.statuses[503] ?? 0) >= 5, 30_000, 'sign-ins refused 503');
        for (let i = 0; i < 5; i++) {
          const res = await post(t, '/api/users', '192.0.2.251', newUser());
          assert.equal(
            res.statusCode,
            201,
            `registration ${i + 1} during the flood: ${res.statusCode} ${res.body}`,
          );
        }
      } finally {
        const statuses = await signins.stop();
        assert.deepEqual(
          Object.keys(statuses).filter((s) => s !== '401' && s !== '503'),
          [],
          `sign-ins answered 401 or 503 only: ${JSON.stringify(statuses)}`,
        );
      }
    } finally {
      await t.close();
    }
  });

  test('ISSUE 25: HASH_SIGNIN_SHARE splits the queue: with 1 slot and 4 places, a registration flood cannot take the place a sign-in waits in', async () => {
    // One slot: sign-ins wait behind the registration being hashed, never behind the queue of them.
    const t = await startApp(store, 'b', {
      ...SMALL_POOL,
      passwordHash: { ...CHEAP_HASH, memoryKiB: 16384, passes: 3, concurrency: 1, queueLimit: 4 },
    });
    try {
      const owner = await register(t);
      const registrations = flood((client) =>
        post(t, '/api/users', `10.28.${client >> 8}.${client & 255}`, newUser()),
      );
      try {
        await waitUntil(() => (registrations.statuses[503] ?? 0) >= 5, 30_000, 'registrations refused 503');
        const answers = await Promise.all(
          [1, 2].map((i) =>
            post(t, '/api/signin', `192.0.2.${i}`, { email: owner.email, password: owner.password }),
          ),
        );
        for (const res of answers) assert.equal(res.statusCode, 200, `${res.statusCode} ${res.body}`);
      } finally {
        await registrations.stop();
      }
    } finally {
      await t.close();
    }
  });
});

test('ISSUE 25: how HASH_SIGNIN_SHARE splits the slots and the queue', () => {
  const lanes = (concurrency: number, queueLimit: number, signinSharePercent?: number) =>
    Object.fromEntries(
      hashLanes({ memoryKiB: 19456, passes: 2, parallelism: 1, concurrency, queueLimit, signinSharePercent }),
    );
  // The default on 2 cores: one slot owed to each, either may borrow the other's idle one; 64 places each.
  assert.deepEqual(lanes(2, 128), {
    signin: { guaranteed: 1, max: 2, maxWaiting: 64 },
    account: { guaranteed: 1, max: 2, maxWaiting: 64 },
  });
  // One slot: owed to sign-in; the rest may still run one hash whenever no sign-in waits.
  assert.deepEqual(lanes(1, 128), {
    signin: { guaranteed: 1, max: 1, maxWaiting: 64 },
    account: { guaranteed: 0, max: 1, maxWaiting: 64 },
  });
  assert.deepEqual(lanes(4, 10, 75), {
    signin: { guaranteed: 3, max: 4, maxWaiting: 8 },
    account: { guaranteed: 1, max: 4, maxWaiting: 2 },
  });
  // Never a lane without a place to wait.
  assert.equal(lanes(2, 1).account!.maxWaiting, 1);
});
