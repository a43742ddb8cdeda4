// .env.example as the systemd unit uses it: deploy/usher.service's ExecStart (with this checkout
// for /opt/usher) in a working directory of its own, as WorkingDirectory=/var/lib/usher gives it,
// with exactly the file's settings as its EnvironmentFile. Only the port is the test's (and, on
// PostgreSQL, the database): the relative defaults must land in the working directory.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { parseEnvLines, ROOT, type Running, read, registersAndSignsIn, startIn } from './packaging.ts';

const unit = read('deploy/usher.service');
const execStart = /^ExecStart=(.+)$/m.exec(unit)![1]!.split(' ');
/** The unit's command on this machine: this Node, and this checkout where /opt/usher would be. */
const command = execStart.map((word, i) =>
  i === 0 ? process.execPath : word.replace(/^\/opt\/usher\//, `${ROOT}/`),
);
const settings = Object.fromEntries(parseEnvLines(read('.env.example')));

describeEachStore('.env.example under the systemd unit’s command', (store) => {
  let server: Running;
  let state: string;
  before(async () => {
    state = mkdtempSync(join(tmpdir(), 'usher-state-'));
    server = await startIn(command, state, {
      ...settings,
      PORT: String(await freePort()),
      ...(store.kind === 'postgres' ? { DATABASE_URL: store.url } : {}),
    });
  });
  after(async () => {
    await server?.stop();
    rmSync(state, { recursive: true, force: true });
  });

  test('ISSUE 32: the server starts with exactly the example’s settings and serves', async () => {
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    await registersAndSignsIn(server.url, `env-example-${store.kind}@example.com`);
    // PUBLIC_URL, as the file sets it, is what Usher says it is reached at.
    const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      servers: Array<{ url: string }>;
    };
    assert.ok(
      document.servers.some((s) => s.url.startsWith(settings.PUBLIC_URL!)),
      JSON.stringify(document.servers),
    );
  });

  test('ISSUE 32: the SQLite file and the mail outbox land in the working directory (the unit’s StateDirectory)', async () => {
    // A sign-up mails a verification link: with SMTP_URL empty it is an .eml in MAIL_OUTBOX.
    await registersAndSignsIn(server.url, `env-example-mail-${store.kind}@example.com`);
    const outbox = join(state, 'data', 'outbox');
    for (let i = 0; i < 100 && (!existsSync(outbox) || readdirSync(outbox).length === 0); i++)
      await new Promise((r) => setTimeout(r, 100));
    assert.ok(
      readdirSync(outbox).some((f) => f.endsWith('.eml')),
      'the outbox is under the working directory',
    );
    if (store.kind === 'sqlite') assert.ok(existsSync(join(state, 'data', 'usher.db')));
  });
});
