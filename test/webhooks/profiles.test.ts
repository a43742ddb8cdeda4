// The webhook routes in both profiles (CONTRACT: everything beyond the documented endpoints is the
// same in A and B), and bad input on each of them: a clear error in Usher's shape, never a 500,
// and nothing written.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { as, assertError, call, staff } from '../admin/support.ts';
import { newUser, register, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { listeningReceiver, webhookApp } from './support.ts';

describeEachStore('webhook routes in profiles A and B, and bad input', (store) => {
  const apps: Partial<Record<'a' | 'b', TestApp>> = {};
  before(async () => {
    apps.a = await webhookApp(store, {}, {}, 'a');
    apps.b = await webhookApp(store, {}, {}, 'b');
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  for (const profile of ['a', 'b'] as const) {
    test(`[${profile}] a webhook is registered, listed and delivers user.created with the same body in either profile`, async (ctx) => {
      const t = apps[profile]!;
      const admin = await staff(t, store, 'admin');
      const { receiver, webhook } = await listeningReceiver(ctx, t, admin.token, ['user.created']);
      const listed = await as(t, admin.token).get('/api/admin/webhooks?size=100');
      assert.equal(listed.statusCode, 200, listed.body);
      assert.ok(
        (listed.json() as { id: number }[]).some((w) => w.id === webhook.id),
        'the new webhook is listed',
      );
      const user = await register(t, newUser());
      const [delivery] = await receiver.waitFor(1, (r) => r.data.userId === Number(user.id));
      assert.equal(delivery!.verified, true);
      assert.deepEqual(Object.keys(delivery!.data).sort(), [
        'createdAt',
        'email',
        'emailVerified',
        'name',
        'role',
        'userId',
        'via',
      ]);
      assert.equal(delivery!.data.email, user.email);
    });

    test(`[${profile}] bad input on every webhook route: 400 or 404 in Usher's shape, nothing registered`, async () => {
      const t = apps[profile]!;
      const admin = await staff(t, store, 'admin');
      const before = (await as(t, admin.token).get('/api/admin/webhooks?size=100')).json() as unknown[];
      const post = (body: string) =>
        call(t, 'POST', '/api/admin/webhooks', {
          token: admin.token,
          body,
          headers: { 'content-type': 'application/json' },
        });
      for (const [body, what] of [
        ['[]', 'an array'],
        ['"https://hooks.example.com"', 'a string'],
        ['{"url":"https://hooks.example.com/x"', 'unreadable JSON'],
        ['{"events":["user.created"]}', 'no url'],
        ['{"url":12,"events":["user.created"]}', 'a number for url'],
        ['{"url":"https://hooks.example.com/x","events":"user.created"}', 'events not a list'],
        [
          '{"url":"https://hooks.example.com/x","events":["user.created"],"secret":"mine"}',
          'an unknown field',
        ],
        ['{"url":"not a url","events":["user.created"]}', 'not a URL'],
        ['{"url":"https://user:pw@hooks.example.com/x","events":["user.created"]}', 'credentials in the URL'],
        ['{"url":"https://hooks.example.com/x#frag","events":["user.created"]}', 'a fragment'],
      ] as const) {
        assertError(await post(body), 400, 'VALIDATION_FAILED', what);
      }
      const after = (await as(t, admin.token).get('/api/admin/webhooks?size=100')).json() as unknown[];
      assert.equal(after.length, before.length, 'nothing was registered');

      for (const path of ['abc', '0', '-1', '1.5', '99999999999999999999', '9223372036854775807']) {
        assertError(
          await as(t, admin.token).get(`/api/admin/webhooks/${path}`),
          404,
          'NOT_FOUND',
          `GET ${path}`,
        );
        assertError(
          await as(t, admin.token).delete(`/api/admin/webhooks/${path}`),
          404,
          'NOT_FOUND',
          `DELETE ${path}`,
        );
        assertError(
          await as(t, admin.token).get(`/api/admin/webhooks/${path}/deliveries`),
          404,
          'NOT_FOUND',
          `deliveries of ${path}`,
        );
        assertError(
          await as(t, admin.token).post(`/api/admin/webhooks/${path}/deliveries/1/retry`, {}),
          404,
          'NOT_FOUND',
          `retry under ${path}`,
        );
      }
      // The query is read before the webhook is looked for.
      for (const url of [
        '/api/admin/webhooks?page=0',
        '/api/admin/webhooks?size=101',
        '/api/admin/webhooks?page=abc',
        '/api/admin/webhooks/1/deliveries?status=lost',
        '/api/admin/webhooks/1/deliveries?size=0',
      ])
        assertError(await as(t, admin.token).get(url), 400, 'INVALID_QUERY', url);
    });
  }
});
