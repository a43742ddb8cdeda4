// The passwords feature's settings: argon2id's parameters, the hash slots and their queue, and
// libuv's threadpool, which exists here for the hashes (its size and its threads' priority follow
// from the hash slots and the store). Read by config.ts (the only reader of the environment).
import { availableParallelism } from 'node:os';
import { ConfigError, type Env, integer } from '../kernel/settings.ts';
import type { PoolPriority } from '../shared/threadpool.ts';

export interface PasswordHashConfig {
  /** argon2id memory cost in KiB. */
  memoryKiB: number;
  /** argon2id passes (time cost). */
  passes: number;
  parallelism: number;
  /** How many hashes may run at once; the rest queue, so hashing never starves the libuv pool. */
  concurrency: number;
  /** How many hashes may wait for a slot; beyond that a request is refused at once (503). */
  queueLimit: number;
  /**
   * Percent of the slots and of the queue kept for sign-ins (HASH_SIGNIN_SHARE): other hashing
   * (registration, password changes) holds at most the rest. 50 when absent.
   */
  signinSharePercent?: number;
}

/** libuv's threadpool, where argon2 runs (with Node's async fs, dns and crypto). */
export interface ThreadpoolSettings {
  /** Threads: the hash slots plus spares, so a log write never waits behind hashes. */
  size: number;
  /**
   * How the pool's threads are scheduled (Linux): `idle` (SCHED_IDLE) or a nice value; either way
   * the event loop wins the CPU from hashes. 0 leaves them alone.
   */
  priority: PoolPriority;
}

/** OWASP Password Storage Cheat Sheet minimum for argon2id; production settings may not go below it. */
export const ARGON2_MINIMUM = { memoryKiB: 19456, passes: 2, parallelism: 1 } as const;

export function passwordHashSettings(env: Env): PasswordHashConfig {
  return {
    memoryKiB: integer(env, 'ARGON2_MEMORY_KIB', ARGON2_MINIMUM.memoryKiB, ARGON2_MINIMUM.memoryKiB, 4194304),
    passes: integer(env, 'ARGON2_PASSES', ARGON2_MINIMUM.passes, ARGON2_MINIMUM.passes, 100),
    parallelism: integer(env, 'ARGON2_PARALLELISM', ARGON2_MINIMUM.parallelism, 1, 64),
    concurrency: integer(env, 'HASH_CONCURRENCY', Math.max(1, availableParallelism()), 1, 64),
    queueLimit: integer(env, 'HASH_QUEUE_LIMIT', 128, 1, 100_000),
    signinSharePercent: integer(env, 'HASH_SIGNIN_SHARE', 50, 1, 99),
  };
}

/** Threads in the pool beyond the hash slots, for fs, dns and crypto work. */
const SPARE_POOL_THREADS = 2;

/** The hash threads' nice value on PostgreSQL unless HASH_THREAD_NICE says otherwise (decision 131). */
const POSTGRES_POOL_NICE = 12;

export function threadpoolSettings(
  env: Env,
  core: { databaseUrl: string; hashConcurrency: number },
): ThreadpoolSettings {
  const hashes = core.hashConcurrency;
  return {
    size: integer(env, 'UV_THREADPOOL_SIZE', hashes + SPARE_POOL_THREADS, hashes + 1, 1024),
    priority: poolPriority(env, core.databaseUrl.startsWith('postgres')),
  };
}

/**
 * HASH_THREAD_NICE: `idle` or a nice value. By default `idle` on SQLite, where the event loop does
 * the database's work too and is all the hashes compete with, and 12 on PostgreSQL, whose own
 * processes would preempt hashes held at SCHED_IDLE at every query (decision 143).
 */
function poolPriority(env: Env, postgres: boolean): PoolPriority {
  const raw = env.HASH_THREAD_NICE?.trim().toLowerCase();
  if (raw === undefined || raw === '') return postgres ? POSTGRES_POOL_NICE : 'idle';
  if (raw === 'idle') return 'idle';
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 19)
    throw new ConfigError(
      'HASH_THREAD_NICE',
      `"${env.HASH_THREAD_NICE}" is not accepted; expected idle or an integer from 0 to 19`,
    );
  return Number(raw);
}
