// The guide docs/webhooks.md, run as a reader would: a real server process, the admin made with the
// CLI, the guide's `curl` block (`sh webhooks-register`) run in sh to register the receiver, and the
// guide's receiver (`js webhooks-receiver`) run by node from a folder under node_modules/.cache, so
// it imports `standardwebhooks` as an app would. Then accounts are made, changed and deleted, and
// the receiver's own output says it verified and handled each event; a forged delivery is refused.
//
// What may differ from the guide, and nothing else: https://id.example.com (Usher) is the test
// server's address, and https://app.example.com/hooks/usher (the receiver) the example's.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { newUser } from '../helpers/app.ts';
import { accepting, freePort, runProcess, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'bin', 'usher.mjs');
const GUIDE = readFileSync(join(ROOT, 'docs', 'webhooks.md'), 'utf8');

/** The text of the one fenced block whose info string is exactly `info`. */
function only(info: string): string {
  const blocks = [...GUIDE.matchAll(/^```(.*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1]!.trim() === info);
  assert.equal(blocks.length, 1, `one \`\`\`${info} block in docs/webhooks.md`);
  return blocks[0]![2]!;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until something accepts connections on the port: a loaded machine may take seconds to start node. */
async function listening(port: number): Promise<void> {
  for (let waited = 0; waited < 20_000; waited += 100) {
    const open = await accepting(port);
    if (open) return;
    await sleep(100);
  }
  assert.fail(`nothing listened on ${port} within 20 s`);
}

test('the guide holds the blocks this test runs', () => {
  assert.match(only('sh webhooks-register'), /https:\/\/id\.example\.com\/api\/admin\/webhooks/);
  assert.match(only('js webhooks-receiver'), /new Webhook\(process\.env\.USHER_WEBHOOK_SECRET\)/);
});

describeEachStore('docs/webhooks.md, run as written', (store) => {
  let server: ServerProcess;
  let base: string;
  let scratch: string;
  let receiver: ChildProcess | undefined;
  let printed = '';

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = await startServer({
      DATABASE_URL: store.url,
      PUBLIC_URL: base,
      PORT: String(port),
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      // The receiver is on this machine, as the guide says such a receiver needs.
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_MS: '200',
    });
    mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
    scratch = mkdtempSync(join(ROOT, 'node_modules', '.cache', 'usher-webhooks-guide-'));
    writeFileSync(join(scratch, 'receiver.mjs'), only('js webhooks-receiver'));
  });
  after(async () => {
    receiver?.kill('SIGKILL');
    await server.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  async function post(path: string, body: unknown, token?: string) {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  async function printedLine(pattern: RegExp): Promise<string> {
    for (let waited = 0; waited < 20_000; waited += 100) {
      const line = printed.split('\n').find((l) => pattern.test(l));
      if (line) return line;
      await sleep(100);
    }
    assert.fail(`the receiver never printed ${pattern}; it printed:\n${printed}`);
  }

  test('an admin registers the receiver with the guide’s curl; it verifies and handles user.created, user.updated and user.deleted', async () => {
    const admin = newUser();
    assert.equal((await post('/api/users', admin)).status, 201);
    const role = await runProcess(
      process.execPath,
      [CLI, 'users', 'set-role', '--email', admin.email, 'admin'],
      {
        DATABASE_URL: store.url,
      },
    );
    assert.equal(role.code, 0, role.stderr);
    const signedIn = await post('/api/sessions', { email: admin.email, password: admin.password });
    const token = String(signedIn.json.token);

    const receiverPort = await freePort();
    const receiverUrl = `http://127.0.0.1:${receiverPort}/hooks/usher`;
    const script = only('sh webhooks-register')
      .replaceAll('https://id.example.com', base)
      .replaceAll('https://app.example.com/hooks/usher', receiverUrl);
    const registered = await runProcess('sh', ['-c', script], { token });
    assert.equal(registered.code, 0, registered.stderr);
    const webhook = JSON.parse(registered.stdout) as { secret: string; events: string[] };
    assert.match(webhook.secret, /^whsec_/);
    assert.deepEqual(webhook.events, ['user.created', 'user.updated', 'user.deleted']);

    receiver = spawn(process.execPath, [join(scratch, 'receiver.mjs')], {
      env: { PATH: process.env.PATH ?? '', USHER_WEBHOOK_SECRET: webhook.secret, PORT: String(receiverPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    receiver.stdout?.on('data', (d) => {
      printed += d;
    });
    receiver.stderr?.on('data', (d) => {
      printed += d;
    });
    await listening(receiverPort);

    // A forged delivery (signed with another secret) is refused by the guide's receiver.
    const forged = await fetch(receiverUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${randomBytes(32).toString('base64')}`,
      },
      body: JSON.stringify({
        type: 'user.deleted',
        timestamp: new Date().toISOString(),
        data: { userId: 1 },
      }),
    });
    assert.equal(forged.status, 400);

    const user = newUser();
    const created = await post('/api/users', user);
    assert.equal(created.status, 201);
    const id = String(created.json.id);
    assert.equal(await printedLine(/^new user /), `new user ${id} ${user.email}`);

    const session = await post('/api/sessions', { email: user.email, password: user.password });
    const bearer = { authorization: `Bearer ${session.json.token}`, 'content-type': 'application/json' };
    const renamed = await fetch(`${base}/api/users/${id}`, {
      method: 'PUT',
      headers: bearer,
      body: JSON.stringify({ email: user.email, name: 'Renamed In Guide' }),
    });
    assert.equal(renamed.status, 200);
    assert.equal(await printedLine(/^user changed /), `user changed ${id} [ 'name' ]`);

    const deleted = await fetch(`${base}/api/users/${id}`, {
      method: 'DELETE',
      headers: bearer,
      body: JSON.stringify({ currentPassword: user.password }),
    });
    assert.equal(deleted.status, 204);
    assert.equal(await printedLine(/^user gone /), `user gone ${id}`);
    assert.doesNotMatch(printed, /new user .*new user /s, 'each event handled once');
  });
});
