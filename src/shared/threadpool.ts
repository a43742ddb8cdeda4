// libuv's threadpool runs argon2 (crypto.argon2) beside Node's async fs, dns and crypto work. Its
// size is fixed when it first runs something, from UV_THREADPOOL_SIZE; its threads are found by
// name in /proc, since Node offers no handle on them.
import { readdirSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setPriority } from 'node:os';

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

/**
 * Gives the pool's threads a nice value, so that when hashes and the event loop want the same
 * cores the scheduler favours the event loop: reads stay fast during a sign-in storm, and hashes
 * still take every cycle the event loop leaves. Lowering one's own priority needs no privilege.
 * Returns how many threads were changed.
 */
export async function lowerThreadpoolPriority(nice: number): Promise<number> {
  if (nice === 0) return 0;
  await stat('.'); // one job through the pool, so its threads exist
  const threads = threadpoolThreads();
  for (const tid of threads) setPriority(tid, nice);
  return threads.length;
}
