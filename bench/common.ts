// What `npm run bench` (bench/run.ts) and `npm run bench:check` (bench/check.ts) share: the seeded
// data, the two servers (Usher with production settings, the bare node:http baseline of
// bench/baseline.ts), the scenarios' requests and the server's CPU time read from /proc. One copy,
// so that the guard measures exactly what the full benchmark does.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { schemaMigrations } from '../src/features.ts';
import { PasswordHasher } from '../src/passwords/hasher.ts';
import { POOL_THREAD_NAME } from '../src/shared/threadpool.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';

export const USERS = 1000;
export const PASSWORD = 'bench-password-1';
const BASELINE_ENTRY = fileURLToPath(new URL('./baseline.ts', import.meta.url));
const CLK_TCK = 100;
const START_TIMEOUT_MS = 60_000;
const BENCH_OUTBOX = mkdtempSync(join(tmpdir(), 'usher-bench-outbox-'));

export type Server = 'baseline' | 'usher';
export interface Sample {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  /** Of that, the event loop's (main thread) and the hashing pool's. */
  loopUsPerReq: number;
  poolUsPerReq: number;
  requests: number;
  errors: number;
}

/** utime + stime, in seconds, of a process (`/proc/<pid>/stat`) or one of its threads (`/proc/<pid>/task/<tid>/stat`). */
export function cpuSeconds(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/**
 * CPU seconds of a process, every thread summed, to the nanosecond: the scheduler's own running
 * time of each thread (`/proc/<pid>/task/<tid>/schedstat`), where /proc/<pid>/stat counts 10 ms
 * ticks, too coarse for a share of half a second. Falls back to the ticks where schedstat is absent.
 */
export function preciseCpuSeconds(pid: number): number {
  if (!SCHEDSTAT) return cpuSeconds(`/proc/${pid}/stat`);
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e9;
}
const SCHEDSTAT = existsSync('/proc/self/schedstat');

export function procStat(pid: number): {
  cpuSeconds: number;
  hwmMiB: number;
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
} {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return {
    cpuSeconds: cpuSeconds(`/proc/${pid}/stat`),
    hwmMiB: mib('VmHWM'),
    rssMiB: mib('VmRSS'),
    anonMiB: mib('RssAnon'),
    fileMiB: mib('RssFile'),
  };
}

/**
 * CPU seconds of a process's main thread (the event loop) and of its libuv pool threads (where
 * argon2 runs), from each thread's own /proc entry: where a request's CPU goes, not just how much.
 */
export function threadCpu(pid: number): { loop: number; pool: number } {
  const cpu = (tid: string) => cpuSeconds(`/proc/${pid}/task/${tid}/stat`);
  let pool = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === POOL_THREAD_NAME) pool += cpu(tid);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return { loop: cpu(String(pid)), pool };
}

export async function seed(url: string): Promise<void> {
  const database = openDatabase(url, loadConfig({}).database);
  try {
    await database.migrate(schemaMigrations());
    // One real hash with the production parameters, shared by every seeded row.
    const hash = await new PasswordHasher({ ...loadConfig({}).passwordHash, concurrency: 1 }).hash(PASSWORD);
    const now = new Date().toISOString();
    for (let start = 0; start < USERS; start += 250) {
      const rows = Array.from({ length: Math.min(250, USERS - start) }, (_, i) => ({
        email: `bench${start + i}@example.com`,
        email_key: `bench${start + i}@example.com`,
        name: `Bench User ${start + i}`,
        created_at: now,
        updated_at: now,
      }));
      const ids = await database.db.insertInto('users').values(rows).returning('id').execute();
      await database.db
        .insertInto('password_credentials')
        .values(ids.map(({ id }) => ({ user_id: id, hash, changed_at: Date.now() })))
        .execute();
    }
    // One live session per user, with a token the load generator knows (benchToken), as a
    // sign-in would have stored it: only its SHA-256.
    const expires = new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString();
    for (let start = 1; start <= USERS; start += 250) {
      const rows = Array.from({ length: Math.min(250, USERS - start + 1) }, (_, i) => ({
        token_hash: createHash('sha256')
          .update(benchToken(start + i))
          .digest('hex'),
        public_id: randomBytes(16).toString('hex'),
        user_id: BigInt(start + i),
        user_agent: 'bench',
        created_at: now,
        last_seen_at: now,
        expires_at: expires,
      }));
      await database.db.insertInto('sessions').values(rows).execute();
    }
  } finally {
    await database.close();
  }
}

export async function launch(
  kind: Server,
  url: string,
): Promise<{ child: ChildProcess; base: string; startMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [kind === 'usher' ? SERVER_ENTRY : BASELINE_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: url,
      PORT: String(port),
      LOG_LEVEL: 'info',
      // The load generator is one address standing for many clients: the per-address limits of
      // sign-ins in flight and failures would turn its storm into 429s the baseline never sends.
      SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
      SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
      // Likewise its registrations: the limits per address would refuse all but a few of them.
      REGISTRATION_MAX_PER_ADDRESS: '1000000',
      REGISTRATION_MAX_CONCURRENT_PER_ADDRESS: '10000',
      // Registrations mail a verification link: as .eml files, out of the working tree.
      MAIL_OUTBOX: BENCH_OUTBOX,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  // Up to a minute: a loaded machine can take that long to start Usher, whose first answer a
  // quiet one gives within about two seconds.
  while (performance.now() - started < START_TIMEOUT_MS) {
    try {
      await fetch(`${base}/api/users/1`);
      const startMs = performance.now() - started;
      return { child, base, startMs };
    } catch {
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  child.kill('SIGKILL');
  throw new Error(`${kind} did not start within ${START_TIMEOUT_MS / 1000} s`);
}

/** The session token seed() stored for user `id` (1 to USERS). */
export function benchToken(id: number): string {
  return `bench-session-token-${String(id).padStart(7, '0')}`;
}

let emailCounter = 0;
const json = { 'content-type': 'application/json' };
const randomUser = () => 1 + Math.floor(Math.random() * USERS);
export const SCENARIOS = {
  'GET /api/users/{id}': {
    connections: 32,
    request: () => ({ method: 'GET', path: `/api/users/${randomUser()}` }),
  },
  // The signed-in page load: a session check (token hash, session row, no write: the seeded
  // sessions were seen less than a minute ago) and the user's row.
  'GET /api/session': {
    connections: 32,
    request: () => ({
      method: 'GET',
      path: '/api/session',
      headers: { authorization: `Bearer ${benchToken(randomUser())}` },
    }),
  },
  'GET /api/users?size=20': {
    connections: 32,
    request: () => ({ method: 'GET', path: `/api/users?page=${1 + Math.floor(Math.random() * 50)}&size=20` }),
  },
  'POST /api/signin': {
    connections: 8,
    request: () => ({
      method: 'POST',
      path: '/api/signin',
      headers: json,
      body: JSON.stringify({ email: `bench${randomUser() - 1}@example.com`, password: PASSWORD }),
    }),
  },
  'POST /api/users': {
    connections: 8,
    request: () => ({
      method: 'POST',
      path: '/api/users',
      headers: json,
      body: JSON.stringify({
        email: `new${process.pid}.${++emailCounter}@example.com`,
        name: 'New User',
        password: 'registration-pass-1',
      }),
    }),
  },
} as const;

export type Load = { connections: number; request: () => BenchRequest };
export type BenchRequest = { method: string; path: string; headers?: Record<string, string>; body?: string };

/** autocannon's request list for a load whose every request is built anew (a random user, a new email). */
export function requestsOf(request: () => BenchRequest) {
  // autocannon needs headers on every request it builds.
  return [{ setupRequest: (() => ({ headers: {}, ...request() })) as never }];
}

export async function run(base: string, scenario: Load, seconds: number, connections?: number) {
  return autocannon({
    url: base,
    connections: connections ?? scenario.connections,
    duration: seconds,
    requests: requestsOf(scenario.request),
  });
}

export async function measure(pid: number, work: () => Promise<Result>): Promise<Sample> {
  const before = procStat(pid);
  const threadsBefore = threadCpu(pid);
  const r = await work();
  const after = procStat(pid);
  const threadsAfter = threadCpu(pid);
  const requests = r.requests.total;
  const perRequest = (seconds: number) => (seconds * 1e6) / Math.max(1, requests);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuUsPerReq: perRequest(after.cpuSeconds - before.cpuSeconds),
    loopUsPerReq: perRequest(threadsAfter.loop - threadsBefore.loop),
    poolUsPerReq: perRequest(threadsAfter.pool - threadsBefore.pool),
    requests,
    errors: r.errors + r.timeouts + r.non2xx,
  };
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
