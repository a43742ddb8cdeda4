// USER_LOOKUP (CONTRACT "Account security"): `public` (the specification's behaviour), `signed-in`
// or `self`. A caller who may not see a user gets exactly the unknown-id answer, never 401 or 403;
// GET /api/users answers them an empty list.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig, type Profile, type UserLookup } from '../../src/config.ts';
import { register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const UNKNOWN_ID = '9223372036854775807';

describeEachStore('USER_LOOKUP', (store) => {
  test('CONTRACT: the default is public', () => {
    assert.equal(loadConfig({}).userLookup, 'public');
  });

  for (const lookup of ['public', 'signed-in', 'self'] as const satisfies readonly UserLookup[]) {
    describe(`USER_LOOKUP=${lookup}`, () => {
      const apps = {} as Record<Profile, TestApp>;
      before(async () => {
        apps.a = await startApp(store, 'a', { userLookup: lookup });
        apps.b = await startApp(store, 'b', { userLookup: lookup });
      });
      after(async () => {
        await apps.a.close();
        await apps.b.close();
      });

      const get = (t: TestApp, url: string, token?: string) =>
        t.inject({
          method: 'GET',
          url,
          headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        });

      /** Exactly what an id no user has gets: same status, headers that matter, and body. */
      async function assertLikeUnknown(t: TestApp, res: LightMyRequestResponse, what: string) {
        const unknown = await get(t, `/api/users/${UNKNOWN_ID}`);
        assert.equal(res.statusCode, 404, `${what}: ${res.body}`);
        assert.equal(res.body, '{"error":"USER_NOT_FOUND"}', what);
        assert.equal(res.body, unknown.body, what);
        assert.equal(res.headers['content-type'], unknown.headers['content-type'], what);
        assert.equal(res.headers['cache-control'], 'no-store', what);
        assert.equal(res.headers['www-authenticate'], undefined, what);
      }

      for (const profile of ['a', 'b'] as const) {
        test(`CONTRACT (${profile}): GET /api/users/{id} answers whom the mode allows, and to anyone else exactly as for an unknown id`, async () => {
          const t = apps[profile];
          const me = await register(t);
          const other = await register(t);
          const token = await signIn(t, me);
          const expected = (res: LightMyRequestResponse, id: bigint) => {
            assert.equal(res.statusCode, 200, res.body);
            assert.equal(res.json().id, Number(id));
          };

          // Anonymous callers: only in public mode.
          for (const [what, headers] of [
            ['anonymous', {}],
            ['an unknown Bearer token', { authorization: `Bearer ${'x'.repeat(43)}` }],
            ['an unknown cookie', { cookie: `usher_session=${'y'.repeat(43)}` }],
          ] as Array<[string, Record<string, string>]>) {
            const res = await t.inject({ method: 'GET', url: `/api/users/${me.id}`, headers });
            if (lookup === 'public') expected(res, me.id);
            else await assertLikeUnknown(t, res, what);
          }
          // One's own record: always, with a Bearer token or the cookie.
          expected(await get(t, `/api/users/${me.id}`, token), me.id);
          expected(
            await t.inject({
              method: 'GET',
              url: `/api/users/${me.id}`,
              headers: { cookie: `usher_session=${token}` },
            }),
            me.id,
          );
          // Someone else's: not in self mode.
          const others = await get(t, `/api/users/${other.id}`, token);
          if (lookup === 'self') await assertLikeUnknown(t, others, "someone else's id");
          else expected(others, other.id);
          // Unknown and malformed ids stay what they were.
          await assertLikeUnknown(t, await get(t, `/api/users/${UNKNOWN_ID}`, token), 'an unknown id');
          await assertLikeUnknown(t, await get(t, '/api/users/abc', token), 'a malformed id');
        });
      }

      test('CONTRACT (a): GET /api/users is not served in profile A, whatever the mode', async () => {
        const u = await register(apps.a);
        const res = await get(apps.a, '/api/users', await signIn(apps.a, u));
        assert.equal(res.statusCode, 404);
        assert.equal(res.json().error, 'NOT_FOUND');
      });

      test('CONTRACT (b): GET /api/users gives each caller the users the mode lets them see, with matching paging headers', async () => {
        const t = apps.b;
        const me = await register(t);
        await register(t);
        const token = await signIn(t, me);

        const anonymous = await get(t, '/api/users?size=100');
        assert.equal(anonymous.statusCode, 200, anonymous.body);
        assert.equal(anonymous.headers['cache-control'], 'no-store');
        if (lookup === 'public') {
          assert.ok(anonymous.json().length >= 2);
          assert.ok(Number(anonymous.headers['x-total-count']) >= 2);
        } else {
          assert.deepEqual(anonymous.json(), [], 'an anonymous caller sees nobody');
          assert.equal(anonymous.headers['x-total-count'], '0');
          assert.equal(
            anonymous.headers.link,
            '</api/users?size=100&page=1>; rel="first", </api/users?size=100&page=1>; rel="last"',
          );
        }

        const signedIn = await get(t, '/api/users?size=100', token);
        assert.equal(signedIn.statusCode, 200, signedIn.body);
        const ids = (signedIn.json() as Array<{ id: number }>).map((u) => u.id);
        if (lookup === 'self') {
          assert.deepEqual(ids, [Number(me.id)], 'only the caller');
          assert.equal(signedIn.headers['x-total-count'], '1');
          const page2 = await get(t, '/api/users?page=2&size=100', token);
          assert.deepEqual(page2.json(), [], 'a page past the end is empty');
          assert.equal(page2.headers['x-total-count'], '1');
        } else {
          assert.ok(ids.length >= 2 && ids.includes(Number(me.id)));
          assert.equal(Number(signedIn.headers['x-total-count']), ids.length);
        }

        // The query is checked as always.
        const bad = await get(t, '/api/users?size=9999');
        assert.equal(bad.statusCode, 400);
        assert.deepEqual(bad.json(), { error: 'INVALID_QUERY' });
      });
    });
  }
});
