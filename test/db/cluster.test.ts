// WORKERS=N: N processes share one port through node:cluster and shut down together.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, test } from 'node:test';
import { newUser } from '../helpers/app.ts';
import { postJson, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['--ppid', String(pid), '-o', 'pid='], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

describeEachStore('WORKERS=2', (store) => {
  // A server each: one test stops its server, which the other must not find stopped.
  const servers: ServerProcess[] = [];
  const startCluster = async () => {
    const server = await startServer({ DATABASE_URL: store.url, WORKERS: '2' });
    servers.push(server);
    // Workers come up independently; wait until both are forked (a bound on a failure only, long
    // enough for a loaded machine).
    const deadline = Date.now() + 60_000;
    while (childPids(server.child.pid!).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    return server;
  };
  after(async () => {
    for (const server of servers) await server.stop('SIGKILL');
  });

  test('runs two worker processes under one primary, serving one port', async () => {
    const server = await startCluster();
    assert.equal(childPids(server.child.pid!).length, 2);
    const body = newUser();
    assert.equal((await postJson(`${server.url}/api/users`, body)).status, 201);
    // Many connections spread across both workers; each sees the same data.
    for (let i = 0; i < 10; i++) {
      const res = await postJson(`${server.url}/api/signin`, { email: body.email, password: body.password });
      assert.equal(res.status, 200);
    }
  });

  test('SIGTERM to the primary stops every worker, then the primary exits 0', async () => {
    const server = await startCluster();
    const workers = childPids(server.child.pid!);
    assert.equal(workers.length, 2);
    assert.equal(await server.stop('SIGTERM'), 0, server.output());
    for (const pid of workers) {
      assert.throws(() => process.kill(pid, 0), 'worker is gone');
    }
  });
});
