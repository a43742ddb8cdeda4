// Receivers on private, loopback or link-local addresses (CONTRACT "Administration": refused unless
// WEBHOOK_ALLOW_PRIVATE=true), at delivery time: a webhook registered while they were allowed (or a
// name that resolves to such an address, which registration cannot know) gets nothing from an
// instance that does not allow them, checked on the address and after DNS (OWASP's SSRF rules).
// The deliveries stay pending, saying why, and go out once an instance that allows them sends.
// Also: the address ranges themselves (transport.ts's isPrivateAddress) and the transport alone.
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { isPrivateAddress, WebhookTransport } from '../../src/webhooks/transport.ts';
import { type SignedIn, staff } from '../admin/support.ts';
import { register, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { of, registerWebhook, type Webhook, waitForDeliveries, webhookApp } from './support.ts';

const REFUSED = /private|loopback/i;

/** This machine's name when it resolves to loopback only (as /etc/hosts usually makes it). */
async function loopbackName(): Promise<string | undefined> {
  const name = hostname();
  try {
    const addresses = await lookup(name, { all: true });
    return addresses.length > 0 && addresses.every((a) => isPrivateAddress(a.address)) ? name : undefined;
  } catch {
    return undefined;
  }
}

test('isPrivateAddress: private, loopback, link-local, unique-local and IPv4-mapped addresses are inner; public ones are not', () => {
  for (const address of [
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.1.1',
    '169.254.169.254',
    '127.0.0.1',
    '127.8.9.10',
    '0.0.0.0',
    '100.64.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '::FFFF:192.168.0.1',
    'not an address',
  ])
    assert.equal(isPrivateAddress(address), true, address);
  for (const address of [
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '172.15.255.255',
    '192.169.0.1',
    '2606:4700::1',
    '2a00:1450:4001::200e',
    '::ffff:93.184.216.34',
  ])
    assert.equal(isPrivateAddress(address), false, address);
});

test('the transport alone: without allowPrivate a loopback address, localhost and a name resolving to loopback are refused before a byte is sent; with it they are reached', async (t) => {
  const receiver = await startReceiver();
  t.after(() => receiver.stop());
  const name = await loopbackName();
  const targets = [
    `http://127.0.0.1:${receiver.port}/hooks`,
    `http://localhost:${receiver.port}/hooks`,
    `http://[::ffff:127.0.0.1]:${receiver.port}/hooks`,
    ...(name ? [`http://${name}:${receiver.port}/hooks`] : []),
  ];
  const strict = new WebhookTransport({ allowPrivate: false, timeoutMs: 5000 });
  t.after(() => strict.close());
  for (const url of targets) {
    const result = await strict.post(url, { 'content-type': 'application/json' }, '{}');
    assert.equal(result.ok, false, url);
    assert.match(result.ok ? '' : result.error, REFUSED, url);
  }
  assert.equal(receiver.all.length, 0, 'nothing reached the receiver');

  const lax = new WebhookTransport({ allowPrivate: true, timeoutMs: 5000 });
  t.after(() => lax.close());
  const reached = await lax.post(targets[0]!, { 'content-type': 'application/json' }, '{}');
  // Unsigned, so the test receiver refuses it: but it was reached.
  assert.deepEqual(reached.ok && reached.status, 401);
  assert.equal(receiver.all.length, 1);
});

describeEachStore('webhooks to private addresses', (store) => {
  test('registered while allowed, delivered by an instance that does not allow them: refused (loopback address, localhost, a name resolving to loopback), pending with the reason, then sent once an instance allows them', async (t) => {
    const name = await loopbackName();
    const hosts = ['127.0.0.1', 'localhost', ...(name ? [name] : [])];
    const receivers: WebhookReceiver[] = [];
    for (const _ of hosts) receivers.push(await startReceiver());
    t.after(async () => {
      for (const r of receivers) await r.stop();
    });
    const apps: TestApp[] = [];
    t.after(async () => {
      for (const a of apps) await a.close();
    });

    // Registered where such receivers are allowed; that instance then stops (its sender with it).
    const allowing = await webhookApp(store, { allowPrivate: true });
    apps.push(allowing);
    const admin: SignedIn = await staff(allowing, store, 'admin');
    const webhooks: Webhook[] = [];
    for (const [i, host] of hosts.entries()) {
      const url = `http://${host}:${receivers[i]!.port}/hooks`;
      webhooks.push(
        await registerWebhook(allowing, admin.token, { ...receivers[i]!, url }, ['user.created']),
      );
      receivers[i]!.secret = webhooks[i]!.secret;
    }
    // The IPv4-mapped form of a loopback address, refused as its IPv4 part is.
    const mapped = await startReceiver();
    receivers.push(mapped);
    const mappedHook = await registerWebhook(
      allowing,
      admin.token,
      { ...mapped, url: `http://[::ffff:127.0.0.1]:${mapped.port}/hooks` },
      ['user.created'],
    );
    await allowing.close();
    apps.length = 0;

    const strict = await webhookApp(store, { allowPrivate: false });
    apps.push(strict);
    const user = await register(strict);
    for (const [i, webhook] of [...webhooks, mappedHook].entries()) {
      const [d] = await waitForDeliveries(
        strict,
        admin.token,
        webhook.id,
        (list) => list.some((x) => x.attempts >= 1),
        `a refused attempt to ${webhook.url}`,
      );
      assert.equal(d!.userId, Number(user.id));
      assert.equal(d!.status, 'pending', `${webhook.url}: kept, to go out where allowed`);
      assert.equal(d!.lastStatus, null, `${webhook.url}: no answer, as nothing was sent`);
      assert.match(d!.lastError ?? '', REFUSED, webhook.url);
      assert.equal(receivers[i]!.all.length, 0, `${webhook.url} received nothing`);
    }
    await strict.close();
    apps.length = 0;

    // An instance that allows them sends what was refused: nothing was lost.
    const again = await webhookApp(store, { allowPrivate: true });
    apps.push(again);
    for (const [i, host] of hosts.entries()) {
      const [r] = await receivers[i]!.waitFor(1, of(user.id)).catch((error: Error) => {
        throw new Error(`${host}: ${error.message}`);
      });
      assert.ok(r!.verified, host);
    }
  });
});
