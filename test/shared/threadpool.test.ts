// The real process sizes libuv's pool from HASH_CONCURRENCY and lowers its threads' priority
// (Linux: SCHED_IDLE by default, else a nice value), so hashing runs off the event loop and yields
// the CPU to it. Read from /proc.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';

const linux = existsSync('/proc/self/task');
/** util-linux's chrt, which the server uses for SCHED_IDLE (Debian has it in every install). */
const chrt = spawnSync('sh', ['-c', 'command -v chrt'], { encoding: 'utf8' }).stdout.trim();
const dir = mkdtempSync(join(tmpdir(), 'usher-pool-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/**
 * Scheduling of each libuv pool thread of `pid`: its policy and nice value (fields 41 and 19 of
 * /proc/<pid>/task/<tid>/stat).
 */
function poolThreadsById(pid: number): Array<{ tid: number; policy: number; nice: number }> {
  const tasks = `/proc/${pid}/task`;
  return readdirSync(tasks)
    .filter((tid) => readFileSync(`${tasks}/${tid}/comm`, 'utf8').trim() === 'libuv-worker')
    .map((tid) => {
      const stat = readFileSync(`${tasks}/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { tid: Number(tid), policy: Number(fields[38]), nice: Number(fields[16]) };
    });
}

/** Each thread's policy and nice value, without its id. */
const scheduling = (threads: Array<{ policy: number; nice: number }>) =>
  threads.map(({ policy, nice }) => ({ policy, nice }));

/** A folder holding only a `chrt` that runs `script`, to put on the server's PATH. */
function fakeChrt(name: string, script: string): string {
  const bin = join(dir, name);
  mkdirSync(bin);
  writeFileSync(join(bin, 'chrt'), `#!/bin/sh\n${script}\n`);
  chmodSync(join(bin, 'chrt'), 0o755);
  return bin;
}

/**
 * Starts a server on its own database with `env`, reads its pool threads, and stops it: the
 * threads, and the warnings about threads that stayed off SCHED_IDLE (read once it has exited,
 * since the log is written out in batches).
 */
async function poolOf(database: string, env: Record<string, string>) {
  const server = await startServer({ DATABASE_URL: `sqlite:${join(dir, database)}`, ...env });
  let threads: Array<{ tid: number; policy: number; nice: number }>;
  try {
    threads = poolThreadsById(server.child.pid!);
  } finally {
    await server.stop();
  }
  const warnings: Array<Record<string, unknown>> = server
    .output()
    .split('\n')
    .filter((line) => line.includes('SCHED_IDLE'))
    .map((line) => JSON.parse(line));
  return { threads, warnings };
}

const each = (n: number, thread: { policy: number; nice: number }) => Array.from({ length: n }, () => thread);

describeUnless(linux ? false : 'needs /proc (Linux)', 'the libuv threadpool of a running server', () => {
  test('HASH_CONCURRENCY=3 gives 5 pool threads (3 hash slots, 2 spares), each under SCHED_IDLE', {
    skip: chrt ? false : 'needs chrt (util-linux)',
  }, async () => {
    const { threads } = await poolOf('a.sqlite', { HASH_CONCURRENCY: '3' });
    assert.deepEqual(scheduling(threads), each(5, { policy: SCHED_IDLE, nice: 0 }));
  });

  test('HASH_THREAD_NICE=12 keeps the normal policy at nice 12 (the default on PostgreSQL)', async () => {
    const { threads } = await poolOf('c.sqlite', { HASH_CONCURRENCY: '2', HASH_THREAD_NICE: '12' });
    assert.deepEqual(scheduling(threads), each(4, { policy: SCHED_OTHER, nice: 12 }));
  });

  test('without chrt the threads get nice 19 instead, and the log says why', async () => {
    // No directory to find chrt in (the server itself is started by absolute path).
    const { threads, warnings } = await poolOf('d.sqlite', {
      HASH_CONCURRENCY: '2',
      PATH: join(dir, 'empty'),
    });
    assert.deepEqual(scheduling(threads), each(4, { policy: SCHED_OTHER, nice: 19 }));
    assert.equal(warnings.length, 1);
    const { level, threads: count, idle, niced, nice } = warnings[0]!;
    assert.deepEqual(
      { level, count, idle, niced, nice },
      { level: 40, count: 4, idle: 0, niced: 4, nice: 19 },
    );
  });

  test('a chrt that exits 0 without acting is not believed: /proc decides, and the threads get nice 19', async () => {
    const { threads, warnings } = await poolOf('e.sqlite', {
      HASH_CONCURRENCY: '2',
      PATH: fakeChrt('noop', 'exit 0'),
    });
    assert.deepEqual(scheduling(threads), each(4, { policy: SCHED_OTHER, nice: 19 }));
    assert.equal(warnings[0]?.niced, 4);
  });

  test('when only some threads move, only the others get nice 19, and the log counts each kind', {
    skip: chrt ? false : 'needs chrt (util-linux)',
  }, async () => {
    // Moves the threads with an even id and fails the others, as a chrt that times out now and then would.
    const { threads, warnings } = await poolOf('f.sqlite', {
      HASH_CONCURRENCY: '2',
      PATH: fakeChrt('half', `[ $(( $4 % 2 )) -eq 0 ] && exec ${chrt} "$@"\nexit 1`),
    });
    assert.equal(threads.length, 4);
    for (const { tid, policy, nice } of threads)
      assert.deepEqual(
        { tid, policy, nice },
        tid % 2 === 0 ? { tid, policy: SCHED_IDLE, nice: 0 } : { tid, policy: SCHED_OTHER, nice: 19 },
      );
    const even = threads.filter(({ tid }) => tid % 2 === 0).length;
    if (even === 4) assert.equal(warnings.length, 0);
    else
      assert.deepEqual(
        { idle: warnings[0]?.idle, niced: warnings[0]?.niced },
        { idle: even, niced: 4 - even },
      );
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
      assert.deepEqual(
        scheduling(poolThreadsById(server.child.pid!)),
        each(6, { policy: SCHED_OTHER, nice: 0 }),
      );
    } finally {
      await server.stop();
    }
  });
});
