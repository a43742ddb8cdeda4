// Webhook delivery (CONTRACT "Administration", webhooks), black-box on both stores with real
// receivers on loopback: a user's events arrive in the order they happened, also after the
// receiver was down or answered errors (retried with backoff, the deliveries list saying how it
// went); a receiver that hangs holds up no other; a redirect is not followed; an admin retries a
// failed delivery (same webhook-id); removing a webhook drops what it had pending; one event for
// several receivers reaches each of them at once. And the admin API's refusals: URLs (https, no
// private or loopback address unless WEBHOOK_ALLOW_PRIVATE), event lists, roles, unknown ids, the
// secret shown once, and PostgreSQL without ENCRYPTION_KEY.
import assert from 'node:assert/strict';
import { after, before, type TestContext, test } from 'node:test';
import type { Config } from '../../src/config.ts';
import { as, assertError, type SignedIn, staff } from '../admin/support.ts';
import { register, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { sleep } from '../helpers/mail.ts';
import { describeEachStore, freshDatabaseUrl, type Store } from '../helpers/stores.ts';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import {
  ALL_EVENTS,
  listeningReceiver,
  of,
  registerWebhook,
  waitForDeliveries,
  webhookApp,
  webhookSettings,
} from './support.ts';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

describeEachStore('webhook delivery', (store) => {
  let app: TestApp;
  let admin: SignedIn;
  before(async () => {
    app = await webhookApp(store);
    admin = await staff(app, store, 'admin');
  });
  after(() => app?.close());

  /**
   * An app of its own settings on a database of the test's own, closed and dropped when the test
   * ends (hooks run in the order they were added: start receivers that must stop first before it).
   */
  async function isolated(
    t: TestContext,
    webhooks: Partial<Config['webhooks']>,
    overrides: Partial<Config> = {},
  ): Promise<{ app: TestApp; admin: SignedIn; store: Store }> {
    const fresh = await freshDatabaseUrl(store.kind);
    const own: Store = { kind: store.kind, url: fresh.url };
    let started: TestApp | undefined;
    t.after(async () => {
      await started?.close();
      await fresh.drop();
    });
    started = await webhookApp(own, webhooks, overrides);
    return { app: started, admin: await staff(started, own, 'admin'), store: own };
  }

  const bearer = (token: string) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
  });
  /** A signed-in user who renames themselves: each rename is one user.updated event. */
  async function renamer(on: TestApp = app) {
    const user = await register(on);
    const token = await signIn(on, user);
    return {
      user,
      rename: async (name: string) => {
        const res = await on.inject({
          method: 'PUT',
          url: `/api/users/${user.id}`,
          headers: bearer(token),
          payload: JSON.stringify({ email: user.email, name }),
        });
        assert.equal(res.statusCode, 200, res.body);
      },
    };
  }
  const names = (count: number, prefix = 'Name') =>
    Array.from({ length: count }, (_, i) => `${prefix} ${String(i + 1).padStart(2, '0')}`);

  test('ten changes of one user arrive in the order they happened (and the deliveries list pages them)', async (t) => {
    const { receiver, webhook } = await listeningReceiver(t, app, admin.token, ['user.updated']);
    const { user, rename } = await renamer();
    const expected = names(10);
    for (const name of expected) await rename(name);
    const received = await receiver.waitFor(10, of(user.id));
    assert.deepEqual(
      received.map((r) => r.data.name),
      expected,
    );
    assert.equal(new Set(received.map((r) => r.id)).size, 10, 'ten events, ten webhook-ids');

    // The deliveries list pages as every collection does, newest first.
    await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list.length === 10 && list.every((d) => d.status === 'sent'),
      'ten deliveries marked sent',
    );
    const page = await as(app, admin.token).get(`/api/admin/webhooks/${webhook.id}/deliveries?page=2&size=3`);
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.headers['x-total-count'], '10');
    assert.match(String(page.headers.link), /rel="next"/);
    assert.deepEqual(
      (page.json() as { payload: { data: { name: string } } }[]).map((d) => d.payload.data.name),
      [expected[6], expected[5], expected[4]],
    );
    for (const query of ['status=lost', 'page=0', 'size=1000'])
      assertError(
        await as(app, admin.token).get(`/api/admin/webhooks/${webhook.id}/deliveries?${query}`),
        400,
        'INVALID_QUERY',
        query,
      );
  });

  test('receiver down while events happen, then up on the same port: every event arrives, in order, retried', async (t) => {
    const { receiver, webhook } = await listeningReceiver(t, app, admin.token, ['user.updated'], {
      restartable: true,
    });
    await receiver.stop();
    const { user, rename } = await renamer();
    const expected = names(6, 'While Down');
    for (const name of expected) await rename(name);
    // Tried while down, and failed: the first delivery says why, and waits for its next attempt.
    const tried = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list.some((d) => d.attempts >= 1),
      'a failed attempt while the receiver is down',
    );
    const first = tried.find((d) => d.attempts >= 1)!;
    assert.equal(first.status, 'pending');
    assert.equal(first.lastStatus, null, 'no answer at all');
    assert.ok(first.lastError, 'the connection error is kept');
    assert.ok(first.nextAttemptAt, 'tried again later');
    assert.equal(first.payload.data.name, expected[0], 'the user’s first event is the one tried');

    await receiver.start();
    const received = await receiver.waitFor(6, of(user.id));
    assert.deepEqual(
      received.map((r) => r.data.name),
      expected,
    );
    const sent = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list.length === 6 && list.every((d) => d.status === 'sent'),
      'all six marked sent',
    );
    assert.ok(sent.at(-1)!.attempts >= 2, 'the first was retried');
  });

  test('a receiver answering 500 and then 204: the deliveries list shows the failed attempts, then sent', async (t) => {
    let refusals = 2;
    const { receiver, webhook } = await listeningReceiver(t, app, admin.token, ['user.updated'], {
      answer: () => (refusals-- > 0 ? 500 : 204),
    });
    const { user, rename } = await renamer();
    await rename('Refused Twice');
    const failing = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list[0]?.lastStatus === 500,
      'a delivery answered 500',
    );
    assert.equal(failing[0]!.status, 'pending');
    assert.match(failing[0]!.lastError ?? '', /500/, 'the status, and the start of the answer');
    assert.ok(failing[0]!.nextAttemptAt);
    assert.equal(failing[0]!.sentAt, null);

    const [r] = await receiver.waitFor(1, of(user.id));
    assert.equal(r!.data.name, 'Refused Twice');
    const [done] = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list[0]?.status === 'sent',
      'the delivery marked sent',
    );
    assert.equal(done!.attempts, 3);
    assert.equal(done!.lastStatus, 204);
    assert.equal(done!.lastError, null, 'the error of an earlier attempt is not kept once sent');
    assert.equal(done!.nextAttemptAt, null);
    assert.deepEqual(
      receiver.all.map((x) => [x.id, x.answered]),
      [
        [r!.id, 500],
        [r!.id, 500],
        [r!.id, 204],
      ],
    );
  });

  test('a receiver that hangs holds up no other receiver: the other gets every event while the first still has no answer', async (t) => {
    // The hanging receiver is started (and released, and stopped) before the app is closed.
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    t.after(() => release());
    const hanging = await startReceiver({
      answer: async () => {
        await released;
        return 204;
      },
    });
    const healthy = await startReceiver();
    t.after(() => hanging.stop());
    t.after(() => healthy.stop());
    // Longer than the test waits: a sender stuck on the hanging receiver would show.
    const own = await isolated(t, { timeoutMs: 50_000, claimMs: 60_000 });
    await registerWebhook(own.app, own.admin.token, hanging, ['user.created']);
    await registerWebhook(own.app, own.admin.token, healthy, ['user.updated']);

    // Six users, so the hanging receiver has as many deliveries in flight as it may, and is stuck.
    const renamers = [];
    for (let i = 0; i < 6; i++) renamers.push(await renamer(own.app));
    const deadline = Date.now() + 20_000;
    while (hanging.all.length === 0 && Date.now() < deadline) await sleep(50);
    assert.ok(hanging.all.length >= 1, 'the hanging receiver was sent some');

    // Then each renames themselves: the other receiver gets every one, the first still answering none.
    for (const [i, { rename }] of renamers.entries()) await rename(`Not Held Up ${i}`);
    for (const { user } of renamers) await healthy.waitFor(1, of(user.id));
    assert.equal(hanging.accepted.length, 0, 'the hanging receiver has still answered nothing');

    // Once it answers, it gets its events too: nothing was lost while it hung.
    release();
    for (const { user } of renamers) await hanging.waitFor(1, of(user.id));
  });

  test('a redirect is not followed: a 302 is a failed attempt, and nothing reaches the Location', async (t) => {
    const elsewhere = await startReceiver();
    t.after(() => elsewhere.stop());
    const { receiver, webhook } = await listeningReceiver(t, app, admin.token, ['user.updated'], {
      answer: 302,
    });
    receiver.headers = { location: elsewhere.url };
    elsewhere.secret = receiver.secret;
    const { rename } = await renamer();
    await rename('Redirected');
    const [d] = await waitForDeliveries(
      app,
      admin.token,
      webhook.id,
      (list) => list[0]?.lastStatus === 302,
      'an attempt answered 302',
    );
    assert.equal(d!.status, 'pending', 'not delivered: tried again later');
    assert.match(d!.lastError ?? '', /redirect/i);
    assert.ok(d!.nextAttemptAt);
    assert.ok(receiver.all.length >= 1);
    assert.equal(receiver.accepted.length, 0);
    assert.equal(elsewhere.all.length, 0, 'the Location was never asked');
  });

  test('an admin retries a failed delivery: pending again, sent with the same webhook-id once the receiver takes it', async (t) => {
    let status = 500;
    const receiver = await startReceiver({ answer: () => status });
    t.after(() => receiver.stop());
    // Retried for one second only, so the delivery is given up on (failed) within the test.
    const own = await isolated(t, { retryMs: 1000 });
    const webhook = await registerWebhook(own.app, own.admin.token, receiver, ['user.updated']);
    const { user, rename } = await renamer(own.app);
    await rename('Failed Then Retried');
    const [failed] = await waitForDeliveries(
      own.app,
      own.admin.token,
      webhook.id,
      (list) => list[0]?.status === 'failed',
      'the delivery given up on',
    );
    assert.equal(failed!.lastStatus, 500);
    assert.equal(failed!.nextAttemptAt, null);
    assert.ok(failed!.attempts >= 1);
    const triedIds = new Set(receiver.all.map((r) => r.id));
    assert.deepEqual([...triedIds], [failed!.messageId], 'every attempt carried the delivery’s webhook-id');

    status = 204;
    const res = await as(own.app, own.admin.token).post(
      `/api/admin/webhooks/${webhook.id}/deliveries/${failed!.id}/retry`,
    );
    assert.equal(res.statusCode, 202, res.body);
    const queued = res.json();
    assert.equal(queued.id, failed!.id);
    assert.equal(queued.messageId, failed!.messageId);
    assert.equal(queued.status, 'pending');
    assert.ok(queued.nextAttemptAt, 'due now');

    const [r] = await receiver.waitFor(1, of(user.id));
    assert.equal(r!.id, failed!.messageId, 'the same webhook-id, so a receiver that had it can tell');
    assert.equal(r!.data.name, 'Failed Then Retried');
    const [sent] = await waitForDeliveries(
      own.app,
      own.admin.token,
      webhook.id,
      (list) => list[0]?.status === 'sent',
      'the retried delivery marked sent',
    );
    assert.ok(sent!.attempts >= 1);
    assert.equal(sent!.lastStatus, 204);
    assert.equal(sent!.lastError, null);

    // An unknown delivery, or one of another webhook: 404.
    const otherReceiver = await startReceiver();
    t.after(() => otherReceiver.stop());
    const other = await registerWebhook(own.app, own.admin.token, otherReceiver, ['user.deleted']);
    for (const url of [
      `/api/admin/webhooks/${webhook.id}/deliveries/999999/retry`,
      `/api/admin/webhooks/${other.id}/deliveries/${failed!.id}/retry`,
      `/api/admin/webhooks/999999/deliveries/${failed!.id}/retry`,
    ])
      assertError(await as(own.app, own.admin.token).post(url), 404, 'NOT_FOUND', url);
  });

  test('removing a webhook drops its pending deliveries: nothing reaches it once its receiver is back, while another receiver gets every event', async (t) => {
    const removed = await listeningReceiver(t, app, admin.token, ['user.updated'], {
      remove: false,
      restartable: true,
    });
    const control = await listeningReceiver(t, app, admin.token, ['user.updated'], { restartable: true });
    await removed.receiver.stop();
    await control.receiver.stop();
    const { user, rename } = await renamer();
    const expected = names(3, 'Dropped');
    for (const name of expected) await rename(name);
    await waitForDeliveries(
      app,
      admin.token,
      removed.webhook.id,
      (list) => list.some((d) => d.attempts >= 1),
      'an attempt while down',
    );

    const res = await as(app, admin.token).delete(`/api/admin/webhooks/${removed.webhook.id}`);
    assert.equal(res.statusCode, 204, res.body);
    assertError(
      await as(app, admin.token).get(`/api/admin/webhooks/${removed.webhook.id}`),
      404,
      'NOT_FOUND',
      'removed',
    );
    assertError(
      await as(app, admin.token).get(`/api/admin/webhooks/${removed.webhook.id}/deliveries`),
      404,
      'NOT_FOUND',
      'its deliveries',
    );

    await removed.receiver.start();
    await control.receiver.start();
    const received = await control.receiver.waitFor(3, of(user.id));
    assert.deepEqual(
      received.map((r) => r.data.name),
      expected,
    );
    // The removed one's retries would have come by now (the backoff is a second or two): none did.
    await sleep(2500);
    assert.equal(removed.receiver.all.length, 0, 'nothing was sent to the removed webhook');
  });

  test('one event for five receivers reaches all five at once (a claim sends each delivery it takes)', async (t) => {
    // With the operator's WEBHOOK_CLAIM_SECONDS (60 s), a delivery claimed but not sent would wait
    // a minute for its claim to lapse: longer than this test waits.
    const receivers: WebhookReceiver[] = [];
    for (let i = 0; i < 5; i++)
      receivers.push((await listeningReceiver(t, app, admin.token, ['user.created'])).receiver);
    const user = await register(app);
    for (const [i, receiver] of receivers.entries()) {
      const [r] = await receiver.waitFor(1, of(user.id)).catch((error: Error) => {
        throw new Error(`receiver ${i + 1} of 5: ${error.message}`);
      });
      assert.equal(r!.type, 'user.created');
    }
    assert.equal(new Set(receivers.map((r) => r.accepted[0]!.id)).size, 1, 'one event, one webhook-id');
  });

  test('registration answers 201 with the secret, shown this once: GET and the list never show it again', async (t) => {
    const receiver = await startReceiver();
    t.after(() => receiver.stop());
    const res = await as(app, admin.token).post('/api/admin/webhooks', {
      url: receiver.url,
      events: ['user.created', 'user.deleted'],
    });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json();
    t.after(async () => {
      await as(app, admin.token).delete(`/api/admin/webhooks/${created.id}`);
    });
    assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'events', 'id', 'secret', 'url']);
    assert.match(created.secret, SECRET);
    assert.equal(Buffer.from(created.secret.slice('whsec_'.length), 'base64').length, 32);
    assert.equal(res.headers.location, `/api/admin/webhooks/${created.id}`);
    assert.equal(created.url, receiver.url);
    assert.deepEqual(created.events, ['user.created', 'user.deleted']);

    const one = await as(app, admin.token).get(`/api/admin/webhooks/${created.id}`);
    assert.equal(one.statusCode, 200, one.body);
    const { secret: _secret, ...rest } = created;
    assert.deepEqual(one.json(), rest);
    const list = await as(app, admin.token).get('/api/admin/webhooks?size=100');
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(
      (list.json() as { id: number }[]).find((w) => w.id === created.id),
      rest,
    );
    assert.ok(Number(list.headers['x-total-count']) >= 1);
    // The secret is the one deliveries are signed with.
    receiver.secret = created.secret;
    const user = await register(app);
    const [r] = await receiver.waitFor(1, of(user.id));
    assert.ok(r!.verified);
    const deliveries = await as(app, admin.token).get(`/api/admin/webhooks/${created.id}/deliveries`);
    for (const body of [one.body, list.body, deliveries.body])
      assert.ok(!body.includes(created.secret.slice('whsec_'.length)), 'the secret is in no later answer');

    // Each webhook has a secret of its own.
    const second = await as(app, admin.token).post('/api/admin/webhooks', {
      url: receiver.url,
      events: ['user.deleted'],
    });
    assert.equal(second.statusCode, 201, second.body);
    t.after(async () => {
      await as(app, admin.token).delete(`/api/admin/webhooks/${second.json().id}`);
    });
    assert.notEqual(second.json().secret, created.secret);
  });

  test('event lists: an unknown type, none, the same one twice, or none given are 400 VALIDATION_FAILED; every listed type is accepted', async (t) => {
    const post = (body: unknown) => as(app, admin.token).post('/api/admin/webhooks', body);
    const url = 'http://127.0.0.1:9/hooks';
    for (const [body, what] of [
      [{ url, events: ['user.exploded'] }, 'an unknown type'],
      [{ url, events: [] }, 'no events'],
      [{ url, events: ['user.created', 'user.created'] }, 'a type twice'],
      [{ url }, 'events missing'],
      [{ url, events: 'user.created' }, 'events not a list'],
      [{ events: ['user.created'] }, 'url missing'],
      [{ url, events: ['user.created'], secret: 'whsec_mine' }, 'an unknown field'],
    ] as const)
      assertError(await post(body), 400, 'VALIDATION_FAILED', what);
    const all = await post({ url, events: ALL_EVENTS });
    assert.equal(all.statusCode, 201, all.body);
    t.after(async () => {
      await as(app, admin.token).delete(`/api/admin/webhooks/${all.json().id}`);
    });
    assert.deepEqual(all.json().events, [...ALL_EVENTS]);
  });

  test('only admins: support staff and users get 403 FORBIDDEN, no session 401 UNAUTHENTICATED, unknown ids 404 NOT_FOUND', async (t) => {
    const receiver = await startReceiver();
    t.after(() => receiver.stop());
    const webhook = await registerWebhook(app, admin.token, receiver, ['user.created']);
    t.after(async () => {
      await as(app, admin.token).delete(`/api/admin/webhooks/${webhook.id}`);
    });
    const support = await staff(app, store, 'support');
    const user = await staff(app, store, 'user');
    const calls = [
      ['POST', '/api/admin/webhooks', { url: receiver.url, events: ['user.created'] }],
      ['GET', '/api/admin/webhooks', undefined],
      ['GET', `/api/admin/webhooks/${webhook.id}`, undefined],
      ['DELETE', `/api/admin/webhooks/${webhook.id}`, undefined],
      ['GET', `/api/admin/webhooks/${webhook.id}/deliveries`, undefined],
      ['POST', `/api/admin/webhooks/${webhook.id}/deliveries/1/retry`, {}],
    ] as const;
    const send = (token: string | undefined, method: string, url: string, body: unknown) =>
      app.inject({
        method: method as 'GET',
        url,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
    for (const [method, url, body] of calls) {
      assertError(
        await send(support.token, method, url, body),
        403,
        'FORBIDDEN',
        `support: ${method} ${url}`,
      );
      assertError(await send(user.token, method, url, body), 403, 'FORBIDDEN', `user: ${method} ${url}`);
      assertError(
        await send(undefined, method, url, body),
        401,
        'UNAUTHENTICATED',
        `anonymous: ${method} ${url}`,
      );
    }
    // Still there: none of the refused calls removed it.
    assert.equal((await as(app, admin.token).get(`/api/admin/webhooks/${webhook.id}`)).statusCode, 200);

    for (const [method, url, body] of [
      ['GET', '/api/admin/webhooks/999999', undefined],
      ['DELETE', '/api/admin/webhooks/999999', undefined],
      ['GET', '/api/admin/webhooks/999999/deliveries', undefined],
      ['POST', '/api/admin/webhooks/999999/deliveries/1/retry', {}],
      ['GET', '/api/admin/webhooks/not-an-id', undefined],
    ] as const)
      assertError(await send(admin.token, method, url, body), 404, 'NOT_FOUND', `${method} ${url}`);
  });

  test('without WEBHOOK_ALLOW_PRIVATE: http, private, loopback and link-local receivers are 400 VALIDATION_FAILED; a public https one is taken', async (t) => {
    const own = await isolated(t, { allowPrivate: false });
    const post = (url: string) =>
      as(own.app, own.admin.token).post('/api/admin/webhooks', { url, events: ['user.created'] });
    for (const url of [
      'http://hooks.example.com/usher',
      'https://127.0.0.1/hooks',
      'https://127.1.2.3/hooks',
      'https://10.0.0.1/hooks',
      'https://172.16.5.4/hooks',
      'https://192.168.1.1/hooks',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hooks',
      'https://[fe80::1]/hooks',
      'https://[fc00::1]/hooks',
      'https://[::ffff:10.0.0.1]/hooks',
      'https://0.0.0.0/hooks',
      'https://localhost/hooks',
      'https://hooks.localhost/hooks',
      'https://user:password@hooks.example.com/usher',
      'https://hooks.example.com/usher#fragment',
      'ftp://hooks.example.com/usher',
      'not a url',
    ]) {
      const res = await post(url);
      assertError(res, 400, 'VALIDATION_FAILED', url);
      assert.match(res.json().message, /url/, `${url}: the message names the field`);
    }
    const fine = await post('https://hooks.example.com/usher');
    assert.equal(fine.statusCode, 201, fine.body);
    assert.equal(fine.json().url, 'https://hooks.example.com/usher');
  });

  test('with WEBHOOK_ALLOW_PRIVATE: http and loopback receivers are taken, other schemes still refused', async (t) => {
    for (const url of ['ftp://127.0.0.1/hooks', 'file:///etc/passwd', 'javascript:alert(1)'])
      assertError(
        await as(app, admin.token).post('/api/admin/webhooks', { url, events: ['user.created'] }),
        400,
        'VALIDATION_FAILED',
        url,
      );
    const res = await as(app, admin.token).post('/api/admin/webhooks', {
      url: 'http://localhost:9/hooks',
      events: ['user.created'],
    });
    assert.equal(res.statusCode, 201, res.body);
    t.after(async () => {
      await as(app, admin.token).delete(`/api/admin/webhooks/${res.json().id}`);
    });
  });

  test('without ENCRYPTION_KEY: 503 UNAVAILABLE on PostgreSQL (no key file there), 201 on SQLite (its key file)', async (t) => {
    const fresh = await freshDatabaseUrl(store.kind);
    const own: Store = { kind: store.kind, url: fresh.url };
    let keyless: TestApp | undefined;
    t.after(async () => {
      await keyless?.close();
      await fresh.drop();
    });
    keyless = await startApp(own, 'b', { webhooks: webhookSettings(), encryptionKey: undefined });
    const staffer = await staff(keyless, own, 'admin');
    const res = await as(keyless, staffer.token).post('/api/admin/webhooks', {
      url: 'https://hooks.example.com/usher',
      events: ['user.created'],
    });
    if (store.kind === 'postgres') {
      assertError(res, 503, 'UNAVAILABLE', 'no key to seal the secret with');
      const listed = await as(keyless, staffer.token).get('/api/admin/webhooks');
      assert.deepEqual(listed.json(), [], 'nothing half-made');
    } else {
      assert.equal(res.statusCode, 201, res.body);
    }
  });
});
