// The real process sizes libuv's pool from HASH_CONCURRENCY and lowers its threads' priority
// (Linux: SCHED_IDLE by default, else a nice value), so hashing runs off the event loop and yields
// the CPU to it. Read from /proc.
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

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/**
 * Scheduling of each libuv pool thread of `pid`: its policy and nice value (fields 41 and 19 of
 * /proc/<pid>/task/<tid>/stat).
 */
function poolThreads(pid: number): Array<{ policy: number; nice: number }> {
  const tasks = `/proc/${pid}/task`;
  return readdirSync(tasks)
    .filter((tid) => readFileSync(`${tasks}/${tid}/comm`, 'utf8').trim() === 'libuv-worker')
    .map((tid) => {
      const stat = readFileSync(`${tasks}/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { policy: Number(fields[38]), nice: Number(fields[16]) };
    });
}

const each = (n: number, thread: { policy: number; nice: number }) => Array.from({ length: n }, () => thread);

describeUnless(linux ? false : 'needs /proc (Linux)', 'the libuv threadpool of a running server', () => {
  test('HASH_CONCURRENCY=3 gives 5 pool threads (3 hash slots, 2 spares), each under SCHED_IDLE', async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite:${join(dir, 'a.sqlite')}`,
      HASH_CONCURRENCY: '3',
    });
    try {
      assert.deepEqual(poolThreads(server.child.pid!), each(5, { policy: SCHED_IDLE, nice: 0 }));
    } finally {
      await server.stop();
    }
  });

  test('HASH_THREAD_NICE=12 keeps the normal policy at nice 12 (the default on PostgreSQL)', async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite:${join(dir, 'c.sqlite')}`,
      HASH_CONCURRENCY: '2',
      HASH_THREAD_NICE: '12',
    });
    try {
      assert.deepEqual(poolThreads(server.child.pid!), each(4, { policy: SCHED_OTHER, nice: 12 }));
    } finally {
      await server.stop();
    }
  });

  test('without chrt the threads get nice 19 instead, and the log says why', async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite:${join(dir, 'd.sqlite')}`,
      HASH_CONCURRENCY: '2',
      // No directory to find chrt in (the server itself is started by absolute path).
      PATH: join(dir, 'empty'),
    });
    try {
      assert.deepEqual(poolThreads(server.child.pid!), each(4, { policy: SCHED_OTHER, nice: 19 }));
    } finally {
      await server.stop(); // the log is written out in batches: all of it by the time it exits
    }
    const warning = server
      .output()
      .split('\n')
      .filter((line) => line.includes('SCHED_IDLE'))
      .map((line) => JSON.parse(line));
    assert.equal(warning.length, 1);
    assert.equal(warning[0].level, 40);
    assert.equal(warning[0].nice, 19);
    assert.equal(warning[0].threads, 4);
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
      assert.deepEqual(poolThreads(server.child.pid!), each(6, { policy: SCHED_OTHER, nice: 0 }));
    } finally {
      await server.stop();
    }
  });
});
