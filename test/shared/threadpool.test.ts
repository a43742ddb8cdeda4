// The real process sizes libuv's pool from HASH_CONCURRENCY and lowers its threads' priority
// (Linux), so hashing runs off the event loop and yields the CPU to it. Read from /proc.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';

const linux = existsSync('/proc/self/task');
const dir = mkdtempSync(join(tmpdir(), 'usher-pool-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Nice value of each libuv pool thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
function poolThreadNice(pid: number): number[] {
  const tasks = `/proc/${pid}/task`;
  return readdirSync(tasks)
    .filter((tid) => readFileSync(`${tasks}/${tid}/comm`, 'utf8').trim() === 'libuv-worker')
    .map((tid) => {
      const stat = readFileSync(`${tasks}/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    });
}

describeUnless(linux ? false : 'needs /proc (Linux)', 'the libuv threadpool of a running server', () => {
  test('HASH_CONCURRENCY=3 gives 5 pool threads (3 hash slots, 2 spares), each at nice 12', async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite:${join(dir, 'a.sqlite')}`,
      HASH_CONCURRENCY: '3',
    });
    try {
      assert.deepEqual(poolThreadNice(server.child.pid!), [12, 12, 12, 12, 12]);
    } finally {
      await server.stop();
    }
  });

  test('UV_THREADPOOL_SIZE and HASH_THREAD_NICE=0 are honoured', async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite:${join(dir, 'b.sqlite')}`,
      HASH_CONCURRENCY: '1',
      UV_THREADPOOL_SIZE: '6',
      HASH_THREAD_NICE: '0',
    });
    try {
      // The pool starts on first use; a registration hashes, and so runs through it.
      const res = await fetch(`${server.url}/api/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'pool@example.com', name: 'Pool', password: 'pool-password-1' }),
      });
      assert.equal(res.status, 201);
      assert.deepEqual(poolThreadNice(server.child.pid!), [0, 0, 0, 0, 0, 0]);
    } finally {
      await server.stop();
    }
  });
});
