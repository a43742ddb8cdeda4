// libuv's threadpool runs argon2 (crypto.argon2) beside Node's async fs, dns and crypto work. Its
// size is fixed when it first runs something, from UV_THREADPOOL_SIZE; its threads are found by
// name in /proc, since Node offers no handle on them.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { promisify } from 'node:util';

/** What libuv names its pool's threads (their `comm` in /proc). */
export const POOL_THREAD_NAME = 'libuv-worker';

/**
 * Sizes the pool. Takes effect only before the pool's first use, so it is called first thing,
 * before the app is built (nothing the modules do while loading uses the pool).
 */
export function sizeThreadpool(threads: number): void {
  process.env.UV_THREADPOOL_SIZE = String(threads);
}

/** The pool's threads in this process: their ids (Linux; none where /proc is missing). */
function threadpoolThreads(): number[] {
  try {
    return readdirSync('/proc/self/task')
      .filter((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === POOL_THREAD_NAME)
      .map(Number);
  } catch {
    return [];
  }
}

/** How the pool's threads are scheduled: SCHED_IDLE, or a nice value under the normal policy. */
export type PoolPriority = 'idle' | number;

/** The nice value the threads get where SCHED_IDLE cannot be set: the closest the normal policy has. */
const IDLE_FALLBACK_NICE = 19;

const SCHED_IDLE = 5;
const execFileAsync = promisify(execFile);

/** A thread's scheduling policy (field 41 of /proc/self/task/<tid>/stat), or undefined where unreadable. */
function policyOf(tid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
  } catch {
    return undefined;
  }
}

/**
 * Moves a thread to SCHED_IDLE through util-linux's `chrt` (Node has no call for a scheduling
 * policy; moving to SCHED_IDLE needs no privilege, leaving it does). Whatever `chrt` answers (it
 * may be missing, time out after acting, or exit 0 without acting), /proc says whether it took.
 */
async function toIdlePolicy(tid: number): Promise<boolean> {
  try {
    await execFileAsync('chrt', ['-i', '-p', '0', String(tid)], { timeout: 5000 });
  } catch {
    // judged by /proc below
  }
  return policyOf(tid) === SCHED_IDLE;
}

/** Where the pool's threads ended up: how many under SCHED_IDLE, how many at which nice value. */
export interface PoolScheduling {
  threads: number;
  idle: number;
  niced: number;
  nice: number;
}

/**
 * Lowers the pool's threads below the event loop, so that when hashes and the event loop want the
 * same cores the event loop gets them: reads stay fast during a sign-in storm, and hashes still
 * take every cycle nothing else wants (docs/decisions.md, 143). `idle` is SCHED_IDLE: a thread of
 * the normal policy that wakes preempts them at once, and the kernel counts a core that runs only
 * them as free when it places a waking thread. A thread that cannot be moved (no `chrt`) gets nice
 * 19 instead, and the result counts it. A number is a nice value; 0 leaves them alone. Where /proc
 * lists no pool threads (not Linux) nothing is changed, and the result says 0 threads.
 */
export async function lowerThreadpoolPriority(priority: PoolPriority): Promise<PoolScheduling> {
  const nice = priority === 'idle' ? IDLE_FALLBACK_NICE : priority;
  if (priority === 0) return { threads: 0, idle: 0, niced: 0, nice };
  await stat('.'); // one job through the pool, so its threads exist
  const threads = threadpoolThreads();
  let rest = threads;
  if (priority === 'idle') {
    rest = [];
    // One at a time: a process per thread at once would be hundreds on a big host's workers.
    for (const tid of threads) if (!(await toIdlePolicy(tid))) rest.push(tid);
  }
  for (const tid of rest) setPriority(tid, nice);
  return { threads: threads.length, idle: threads.length - rest.length, niced: rest.length, nice };
}
