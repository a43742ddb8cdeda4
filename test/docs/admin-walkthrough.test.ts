// docs/administration.md's "Administering accounts" walk-through, run as an operator would: a real server
// process, the block marked `sh admin-walkthrough` run in sh as written (its `npx usher` through
// bin/usher.mjs on the server's DATABASE_URL, its curl against the server's address), and then
// what each step claims checked from outside: the person found, disabled, their lost TOTP gone,
// enabled again and signing in with the password alone.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runProcess, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { totpAt } from '../helpers/totp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUIDE = readFileSync(join(ROOT, 'docs', 'administration.md'), 'utf8');
const CLI = join(ROOT, 'bin', 'usher.mjs');

function walkthrough(): string {
  const start = GUIDE.indexOf('```sh admin-walkthrough\n');
  assert.ok(start >= 0, 'docs/administration.md has the admin-walkthrough block');
  const body = GUIDE.slice(start + '```sh admin-walkthrough\n'.length);
  return body.slice(0, body.indexOf('\n```'));
}

const ADA = { email: 'ada@example.com', name: 'Ada Lovelace', password: 'correct horse battery staple' };
const GRACE = { email: 'grace.hopper@example.com', name: 'Grace Hopper', password: 'a compiler in 1952' };

describeEachStore('docs/administration.md: administering accounts, step by step', (store) => {
  let server: ServerProcess;
  const env = () => ({ DATABASE_URL: store.url, ENCRYPTION_KEY: KEY });
  const KEY = randomBytes(32).toString('base64');
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });

  before(async () => {
    server = await startServer(env());
    for (const person of [ADA, GRACE]) assert.equal((await post('/api/users', person)).status, 201);
  });
  after(() => server.stop());

  test('the block runs as written; each step does what its comment says', async () => {
    // Grace has TOTP on, and lost her phone.
    const session = (await (await post('/api/sessions', GRACE)).json()) as { token: string };
    const setup = (await (
      await post('/api/mfa/totp', { password: GRACE.password }, session.token)
    ).json()) as {
      secret: string;
    };
    assert.equal(
      (await post('/api/mfa/totp/confirm', { code: totpAt(setup.secret, Date.now()) }, session.token)).status,
      200,
    );
    assert.equal((await post('/api/sessions', GRACE)).status, 401, 'a code is needed');

    const script = `set -e\nnpx() { shift; node '${CLI}' "$@"; }\n${walkthrough().replaceAll('localhost:3000', new URL(server.url).host)}`;
    const run = await runProcess('sh', ['-c', script], env(), '', ROOT);
    assert.equal(run.code, 0, run.stderr);

    const out = run.stdout;
    assert.match(out, /is now admin/, 'step 1: the CLI made her admin');
    assert.match(
      out,
      /\[\{"id":\d+,"email":"grace\.hopper@example\.com","name":"Grace Hopper","role":"user"/,
      'step 3: found by part of her email',
    );
    assert.match(out, /"totp":true/, 'step 4: the view shows her TOTP');
    assert.match(
      out,
      /"status":"disabled".*"disabledReason":"lost phone, checking identity"/,
      'step 5: disabled, with the reason',
    );
    assert.match(out, /"status":"active"/, 'step 7: enabled again');
    assert.equal(
      (await fetch(`${server.url}/api/session`, { headers: { authorization: `Bearer ${session.token}` } }))
        .status,
      401,
      'step 5 ended her session',
    );
    assert.equal((await post('/api/sessions', GRACE)).status, 201, 'step 6: her password alone signs her in');
  });
});
