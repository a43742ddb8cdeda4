// `npm run bench:pooler` (also a step of `npm run bench`): what DATABASE_POOLER=transaction costs,
// on the benchmark's PostgreSQL paths: a user lookup (GET /api/users/:id), a session check
// (GET /api/session with a bearer token) and a password sign-in (POST /api/sessions, argon2id at the
// production minimum). Three Usher servers on one seeded database, measured in alternated rounds:
//   direct       DATABASE_POOLER=none, straight to PostgreSQL (named statements, startup timeout);
//   direct, tx   DATABASE_POOLER=transaction, straight to PostgreSQL: Usher's own price of the mode
//                (every hot statement parsed and described again, a `set local` per transaction);
//   PgBouncer    DATABASE_POOLER=transaction through PgBouncer 1.18 in transaction mode
//                (default_pool_size 20): what a team behind such a pooler gets, the hop included.
// Reports req/s, p99 and the Usher process's CPU per request (and PgBouncer's, on its row).
//
// BENCH_QUICK=1: one round of 2 s; BENCH_ROUNDS, BENCH_SECONDS. Results go between the
// bench:pooler markers in docs/benchmarks.md unless BENCH_QUICK=1 (BENCH_POOLER_WRITE=1 writes
// anyway). Needs TEST_DATABASE_URL (or PostgreSQL on 127.0.0.1:5432) and PgBouncer installed.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freshDatabaseUrl, postgresAvailable } from '../test/helpers/databases.ts';
import { pgbouncerSkip, startPgBouncer } from '../test/helpers/pgbouncer.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';
import { seedUsers } from './seed.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 5));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const WRITE = process.env.BENCH_POOLER_WRITE === '1' || (!QUICK && process.env.BENCH_POOLER_WRITE !== '0');
const PASSWORD = 'bench-password-1';
const USERS = 1000;
/** Sign-ins per setup per round: each costs a hash, so a count rather than a duration. */
const SIGNINS = QUICK ? 60 : 200;

if (!postgresAvailable) {
  console.error('bench:pooler: skipped (TEST_DATABASE_URL is not set)');
  process.exit(0);
}
if (pgbouncerSkip) {
  console.error(`bench:pooler: skipped (${pgbouncerSkip})`);
  process.exit(0);
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Sample {
  rps: number;
  p99: number;
  cpuUs: number;
  bouncerUs: number;
  unexpected: number;
}

interface Setup {
  readonly name: string;
  readonly child: ChildProcess;
  readonly base: string;
  readonly tokens: string[];
}

async function start(name: string, env: Record<string, string>): Promise<Setup> {
  const port = await freePort();
  const outbox = mkdtempSync(join(tmpdir(), 'usher-bench-outbox-'));
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      MAIL_OUTBOX: outbox,
      // The load generator is one address standing for many clients.
      SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
      SIGNIN_MAX_CONCURRENT_PER_ACCOUNT: '10000',
      SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  child.once('exit', () => rmSync(outbox, { recursive: true, force: true }));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  // Sessions for the session checks: 50 users signed in once each on this server.
  const tokens: string[] = [];
  for (let id = 1; id <= 50; id++) {
    const res = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `u${id}@example.com`, password: PASSWORD }),
    });
    const body = (await res.json()) as { token?: string };
    if (res.status !== 201 || !body.token)
      throw new Error(`${name}: sign-in for the session checks: ${res.status}`);
    tokens.push(body.token);
  }
  return { name, child, base, tokens };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const random = (n: number) => Math.floor(Math.random() * n);

type Scenario = 'lookup' | 'session' | 'signin';
const SCENARIOS: Record<Scenario, string> = {
  lookup: 'GET /api/users/:id',
  session: 'GET /api/session (bearer)',
  signin: 'POST /api/sessions (argon2id)',
};

async function measure(setup: Setup, scenario: Scenario, bouncerPid: number): Promise<Sample> {
  const pid = setup.child.pid!;
  const before = cpuSeconds(pid);
  const bouncerBefore = cpuSeconds(bouncerPid);
  let unexpected = 0;
  const request =
    scenario === 'lookup'
      ? {
          method: 'GET',
          path: '/api/users/1',
          setupRequest: (r: object) => ({ ...r, path: `/api/users/${1 + random(USERS)}` }),
        }
      : scenario === 'session'
        ? {
            method: 'GET',
            path: '/api/session',
            setupRequest: (r: { headers?: object }) => ({
              ...r,
              headers: { ...r.headers, authorization: `Bearer ${setup.tokens[random(setup.tokens.length)]}` },
            }),
          }
        : {
            method: 'POST',
            path: '/api/sessions',
            setupRequest: (r: object) => ({
              ...r,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ email: `u${1 + random(USERS)}@example.com`, password: PASSWORD }),
            }),
          };
  const expected = scenario === 'signin' ? 201 : 200;
  const result = await autocannon({
    url: setup.base,
    connections: scenario === 'signin' ? 8 : 32,
    ...(scenario === 'signin' ? { amount: SIGNINS } : { duration: SECONDS }),
    requests: [
      {
        ...request,
        setupRequest: request.setupRequest as never,
        onResponse: (status: number) => {
          if (status !== expected) unexpected += 1;
        },
      },
    ],
  });
  const total = Math.max(1, result.requests.total);
  return {
    rps: result.requests.total / Math.max(0.001, result.duration),
    p99: result.latency.p99,
    cpuUs: ((cpuSeconds(pid) - before) * 1e6) / total,
    bouncerUs: ((cpuSeconds(bouncerPid) - bouncerBefore) * 1e6) / total,
    unexpected,
  };
}

const fresh = await freshDatabaseUrl('postgres');
await seedUsers(fresh.url, USERS, PASSWORD);
const bouncer = await startPgBouncer({ poolSize: 20 });
const setups: Setup[] = [];
const results = new Map<string, Sample[]>();
try {
  setups.push(await start('direct, DATABASE_POOLER=none', { DATABASE_URL: fresh.url }));
  setups.push(
    await start('direct, DATABASE_POOLER=transaction', {
      DATABASE_URL: fresh.url,
      DATABASE_POOLER: 'transaction',
    }),
  );
  setups.push(
    await start('PgBouncer (transaction mode), DATABASE_POOLER=transaction', {
      DATABASE_URL: bouncer.through(fresh.url),
      DATABASE_POOLER: 'transaction',
    }),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
      for (const setup of [...setups].sort(() => Math.random() - 0.5)) {
        const key = `${scenario}\u0000${setup.name}`;
        results.set(key, [...(results.get(key) ?? []), await measure(setup, scenario, bouncer.pid)]);
      }
    }
  }
} finally {
  for (const setup of setups) {
    setup.child.kill('SIGTERM');
    await new Promise((r) => setup.child.once('exit', r));
  }
  await bouncer.stop();
  await fresh.drop();
}

const lines = [
  `<!-- npm run bench:pooler on ${new Date().toISOString()}: ${ROUNDS} alternated rounds (${SECONDS} s per lookup and session scenario, ${SIGNINS} sign-ins), medians -->`,
  '',
  '| path | setup | req/s | vs direct | p99 ms | Usher CPU µs/req | PgBouncer CPU µs/req | other answers |',
  '|---|---|---|---|---|---|---|---|',
];
for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
  const direct = median(results.get(`${scenario}\u0000${setups[0]!.name}`)!.map((s) => s.rps));
  for (const setup of setups) {
    const samples = results.get(`${scenario}\u0000${setup.name}`)!;
    const rps = median(samples.map((s) => s.rps));
    const bouncerUs = setup.name.startsWith('PgBouncer')
      ? median(samples.map((s) => s.bouncerUs)).toFixed(0)
      : '–';
    lines.push(
      `| ${SCENARIOS[scenario]} | ${setup.name} | ${rps.toFixed(0)} | ${(rps / direct).toFixed(2)} | ${median(samples.map((s) => s.p99)).toFixed(1)} | ${median(samples.map((s) => s.cpuUs)).toFixed(0)} | ${bouncerUs} | ${samples.reduce((n, s) => n + s.unexpected, 0)} |`,
    );
  }
}
const text = lines.join('\n');
console.log(text);
if (WRITE) {
  const file = new URL('../docs/benchmarks.md', import.meta.url);
  const doc = readFileSync(file, 'utf8');
  const startMark = '<!-- bench:pooler:start -->';
  const endMark = '<!-- bench:pooler:end -->';
  const at = doc.indexOf(startMark);
  const to = doc.indexOf(endMark);
  if (at < 0 || to < at) throw new Error('docs/benchmarks.md has no bench:pooler markers');
  writeFileSync(file, `${doc.slice(0, at + startMark.length)}\n${text}\n${doc.slice(to)}`);
}
