// Issue 26: every ask for passkey sign-in options stores a challenge row, and nothing limited the
// asks. They are now counted per client address (IPv6: per /64) in the shared database.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { describeEachStore } from '../helpers/stores.ts';

describeEachStore('passkey sign-in options, limited per address', (store) => {
  const apps = {} as Record<'a' | 'b', TestApp>;
  before(async () => {
    const overrides = { passkeyOptions: { perAddress: 3, windowMs: 900_000 } };
    apps.a = await startApp(store, 'a', overrides);
    apps.b = await startApp(store, 'b', overrides);
  });
  after(async () => {
    await apps.a.close();
    await apps.b.close();
  });

  const ask = (t: TestApp, remoteAddress: string) =>
    t.inject({ method: 'POST', url: '/api/signin/passkey/options', remoteAddress });

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] ISSUE 26: past PASSKEY_OPTIONS_MAX_PER_ADDRESS asks from one address, 429 TOO_MANY_REQUESTS with Retry-After, and no challenge stored`, async () => {
      const t = apps[profile];
      const address = profile === 'a' ? '10.26.0.1' : '10.26.0.2';
      for (let i = 0; i < 3; i++) {
        const res = await ask(t, address);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(typeof res.json().challenge, 'string');
      }
      const database = openTestDatabase(store);
      try {
        const count = async () =>
          Number(
            (
              await database.db
                .selectFrom('webauthn_challenges')
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          );
        const before = await count();
        const refused = await ask(t, address);
        assert.equal(refused.statusCode, 429, refused.body);
        assert.deepEqual(Object.keys(refused.json()).sort(), ['error', 'message']);
        assert.equal(refused.json().error, 'TOO_MANY_REQUESTS');
        const retryAfter = Number(refused.headers['retry-after']);
        assert.ok(
          Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 900,
          `Retry-After ${retryAfter}`,
        );
        assert.equal(await count(), before, 'a refused ask stores no challenge');
      } finally {
        await database.close();
      }
      // Another address is not held by it.
      assert.equal((await ask(t, profile === 'a' ? '10.26.1.1' : '10.26.1.2')).statusCode, 200);
    });
  }

  test('ISSUE 26: asks from one IPv6 /64 count together', async () => {
    const t = apps.b;
    for (let i = 1; i <= 3; i++) assert.equal((await ask(t, `2001:db8:26:1::${i}`)).statusCode, 200);
    assert.equal((await ask(t, '2001:db8:26:1:ffff::9')).statusCode, 429);
    assert.equal((await ask(t, '2001:db8:26:2::1')).statusCode, 200);
  });
});
