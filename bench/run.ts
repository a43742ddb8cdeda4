// `npm run bench`: Usher against a bare node:http baseline doing the same database and hashing
// work (bench/baseline.ts), alternated several times in one run, on SQLite and (with
// TEST_DATABASE_URL) PostgreSQL. Reports req/s, p50/p99, server CPU per request (from the server
// process's own accounting in /proc, steadier than req/s on a shared machine), RSS when idle after
// start and at its peak, with Usher's figures as ratios to the baseline and each target of issue 16
// checked. Writes docs/benchmarks.md's results and a chart.
// BENCH_SECONDS (default 5) and BENCH_ROUNDS (default 3) change the length. BENCH_QUICK=1 is a
// check rather than a result: one round, no million-user phase, and the report is only printed.
// BENCH_ONLY=<regex> (with BENCH_QUICK) measures only the scenarios whose names match, for an A/B
// of one path: `BENCH_QUICK=1 BENCH_ONLY=signin npm run bench`.
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { schemaMigrations } from '../src/features.ts';
import { PasswordHasher } from '../src/passwords/hasher.ts';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import {
  launch,
  measure,
  median,
  PASSWORD,
  procStat,
  run,
  type Sample,
  SCENARIOS,
  type Server,
  seed,
} from './common.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, 'i') : undefined;
if (ONLY && !QUICK)
  throw new Error('BENCH_ONLY goes with BENCH_QUICK=1: a partial run must not replace the results');
const chosen = (scenario: string) => !ONLY || ONLY.test(scenario);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const MILLION = 1_000_000;

/** How long a server is left alone after its first answer before its idle RSS is read. */
const IDLE_SETTLE_MS = 2000;

/**
 * A million users for the data-growth scenarios, inserted by one SQL statement (the benchmark's
 * shortcut, not how users arrive) with one precomputed hash; the triggers count them as usual.
 */
async function seedMillion(url: string): Promise<void> {
  // The one insert takes longer than a request's statement timeout may.
  const database = openDatabase(url, { ...loadConfig({}).database, statementTimeoutMs: 0 });
  try {
    await database.migrate(schemaMigrations());
    const hash = await new PasswordHasher({ ...loadConfig({}).passwordHash, concurrency: 1 }).hash(PASSWORD);
    const now = new Date().toISOString();
    const numbers =
      database.dialect === 'postgres'
        ? sql`select i - 1 as i from generate_series(1, ${MILLION}) as s(i)`
        : sql`select i - 1 as i from (with recursive n(i) as (select 1 union all select i + 1 from n where i < ${MILLION}) select i from n)`;
    // PostgreSQL would read the time as text, which a timestamptz column does not take implicitly.
    const time = database.dialect === 'postgres' ? sql`cast(${now} as timestamptz)` : sql`${now}`;
    await sql`
      insert into users (email, email_key, name, created_at, updated_at)
      select 'bench' || i || '@example.com', 'bench' || i || '@example.com', 'Bench User ' || i,
             ${time}, ${time}
      from (${numbers}) as numbers`.execute(database.db);
    await sql`
      insert into password_credentials (user_id, hash, changed_at)
      select id, ${hash}, ${Date.now()} from users`.execute(database.db);
    if (database.dialect === 'postgres') {
      await sql`analyze users`.execute(database.db);
      await sql`analyze password_credentials`.execute(database.db);
    }
  } finally {
    await database.close();
  }
}

type Scenario = keyof typeof SCENARIOS | 'GET /api/users/{id} during a sign-in storm';

// Usher alone, on the million-user database: the same lookup as on 1,000 users, and the first
// and the 50,000th page of 20 (the last but one: 1,000,000 / 20 = 50,000).
const randomOfMillion = () => 1 + Math.floor(Math.random() * MILLION);
const MILLION_SCENARIOS = {
  'GET /api/users/{id}, 1M users': {
    connections: 32,
    request: () => ({ method: 'GET', path: `/api/users/${randomOfMillion()}` }),
  },
  'GET /api/users?size=20 page 1, 1M users': {
    connections: 8,
    request: () => ({ method: 'GET', path: '/api/users?page=1&size=20' }),
  },
  'GET /api/users?size=20 page 50,000, 1M users': {
    connections: 8,
    request: () => ({ method: 'GET', path: '/api/users?page=50000&size=20' }),
  },
} as const;

async function load(base: string, name: keyof typeof SCENARIOS, seconds: number, connections?: number) {
  return run(base, SCENARIOS[name], seconds, connections);
}

async function benchStore(kind: StoreKind) {
  const samples = new Map<string, Sample[]>();
  const add = (server: Server, scenario: Scenario, s: Sample) => {
    const key = `${server}|${scenario}`;
    samples.set(key, [...(samples.get(key) ?? []), s]);
  };
  const hwm: Record<Server, number> = { baseline: 0, usher: 0 };
  const startMs: Record<Server, number[]> = { baseline: [], usher: [] };
  const idleMiB: Record<Server, number[]> = { baseline: [], usher: [] };
  // Usher on a million users: its peak, and how much of its RSS at the end is the database file
  // read through SQLite's memory map (file-backed) rather than the process's own memory.
  const millionMemory = { hwmMiB: 0, anonMiB: 0, fileMiB: 0 };
  const million = QUICK ? undefined : await freshDatabaseUrl(kind);
  const seeding = performance.now();
  if (million) await seedMillion(million.url);
  const millionSeedSeconds = (performance.now() - seeding) / 1000;
  if (million) console.error(`${kind}: 1,000,000 users seeded in ${millionSeedSeconds.toFixed(0)} s`);
  for (let round = 1; round <= ROUNDS; round++) {
    // Both servers run side by side, each on its own fresh copy of the data, and every scenario
    // measures one and then the other, back to back (which goes first alternates by round): a
    // shared machine's drift then falls on both alike instead of on whichever ran later.
    const order: Server[] = round % 2 === 1 ? ['baseline', 'usher'] : ['usher', 'baseline'];
    const running = new Map<Server, { child: ChildProcess; base: string; drop: () => Promise<void> }>();
    try {
      for (const server of order) {
        const fresh = await freshDatabaseUrl(kind);
        await seed(fresh.url);
        const { child, base, startMs: ms } = await launch(server, fresh.url);
        running.set(server, { child, base, drop: fresh.drop });
        startMs[server].push(ms);
        // Idle memory: read once the server has been left alone a moment after its first answer.
        await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
        idleMiB[server].push(procStat(child.pid!).rssMiB);
      }
      for (const name of (Object.keys(SCENARIOS) as Array<keyof typeof SCENARIOS>).filter(chosen)) {
        for (const server of order) await load(running.get(server)!.base, name, 1); // warm-up
        for (const server of order) {
          const { child, base } = running.get(server)!;
          add(server, name, await measure(child.pid!, () => load(base, name, SECONDS)));
        }
      }
      for (const server of chosen('GET /api/users/{id} during a sign-in storm') ? order : []) {
        const { child, base } = running.get(server)!;
        const pid = child.pid!;
        // Reads while sign-ins saturate hashing: the reads' own latency and rate.
        const storm = load(base, 'POST /api/signin', SECONDS + 1, 16);
        await new Promise((r) => setTimeout(r, 500));
        add(
          server,
          'GET /api/users/{id} during a sign-in storm',
          await measure(pid, () => load(base, 'GET /api/users/{id}', SECONDS, 8)),
        );
        await storm;
        add(
          server,
          'GET /api/users/{id} idle, 8 connections' as Scenario,
          await measure(pid, () => load(base, 'GET /api/users/{id}', SECONDS, 8)),
        );
      }
      for (const server of order)
        hwm[server] = Math.max(hwm[server], procStat(running.get(server)!.child.pid!).hwmMiB);
    } finally {
      for (const { child, drop } of running.values()) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
        await drop();
      }
    }
    console.error(`${kind} round ${round} done`);
    if (!million) continue;
    const { child, base } = await launch('usher', million.url);
    try {
      // Left alone as long as the 1,000-user servers are before their first scenario, so that the
      // ratio of the two compares lookups, not how long each server had been up.
      await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
      for (const [name, scenario] of Object.entries(MILLION_SCENARIOS)) {
        await run(base, scenario, 1); // warm-up
        add('usher', name as Scenario, await measure(child.pid!, () => run(base, scenario, SECONDS)));
      }
      const memory = procStat(child.pid!);
      if (memory.hwmMiB > millionMemory.hwmMiB)
        Object.assign(millionMemory, {
          hwmMiB: memory.hwmMiB,
          anonMiB: memory.anonMiB,
          fileMiB: memory.fileMiB,
        });
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    console.error(`${kind} round ${round} usher on 1,000,000 users done`);
  }
  await million?.drop();
  const summary = (server: Server, scenario: string) => {
    const list = samples.get(`${server}|${scenario}`) ?? [];
    return {
      rps: median(list.map((s) => s.rps)),
      p50: median(list.map((s) => s.p50)),
      p99: median(list.map((s) => s.p99)),
      cpu: median(list.map((s) => s.cpuUsPerReq)),
      loop: median(list.map((s) => s.loopUsPerReq)),
      pool: median(list.map((s) => s.poolUsPerReq)),
      errors: list.reduce((n, s) => n + s.errors, 0),
    };
  };
  const scenarios = [
    ...Object.keys(SCENARIOS),
    'GET /api/users/{id} idle, 8 connections',
    'GET /api/users/{id} during a sign-in storm',
  ].filter((scenario) => samples.has(`usher|${scenario}`));
  return {
    kind,
    rows: scenarios.map((scenario) => ({
      scenario,
      baseline: summary('baseline', scenario),
      usher: summary('usher', scenario),
    })),
    million: (million ? Object.keys(MILLION_SCENARIOS) : []).map((scenario) => ({
      scenario,
      usher: summary('usher', scenario),
    })),
    millionSeedSeconds,
    millionMemory,
    hwm,
    idleMiB: { baseline: median(idleMiB.baseline), usher: median(idleMiB.usher) },
    startMs: { baseline: median(startMs.baseline), usher: median(startMs.usher) },
  };
}

type StoreResult = Awaited<ReturnType<typeof benchStore>>;

function table(result: StoreResult): string {
  const lines = [
    `### ${result.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    '',
    '| scenario | baseline req/s | Usher req/s | ratio | baseline p50/p99 ms | Usher p50/p99 ms | baseline CPU µs/req | Usher CPU µs/req | CPU ratio (baseline/Usher) | event loop + hashing threads µs/req, baseline | the same, Usher | Usher non-2xx+errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const { scenario, baseline: b, usher: u } of result.rows) {
    lines.push(
      `| ${scenario} | ${b.rps.toFixed(0)} | ${u.rps.toFixed(0)} | ${(u.rps / b.rps).toFixed(2)} | ${b.p50}/${b.p99} | ${u.p50}/${u.p99} | ${b.cpu.toFixed(0)} | ${u.cpu.toFixed(0)} | ${(b.cpu / u.cpu).toFixed(2)} | ${b.loop.toFixed(0)} + ${b.pool.toFixed(0)} | ${u.loop.toFixed(0)} + ${u.pool.toFixed(0)} | ${u.errors} |`,
    );
  }
  const thousand = result.rows.find((r) => r.scenario === 'GET /api/users/{id}')?.usher;
  const session = result.rows.find((r) => r.scenario === 'GET /api/session')?.usher;
  if (!thousand || !session) return lines.join('\n'); // a BENCH_ONLY run
  lines.push(
    '',
    `GET /api/session against GET /api/users/{id}: CPU per request ratio ${(session.cpu / thousand.cpu).toFixed(2)} ` +
      `(${session.cpu.toFixed(0)} against ${thousand.cpu.toFixed(0)} µs; the target is at most 1.3).`,
  );
  if (result.million.length > 0)
    lines.push(
      '',
      `Usher on 1,000,000 users (seeded in ${result.millionSeedSeconds.toFixed(0)} s):`,
      '',
      '| scenario | req/s | p50/p99 ms | CPU µs/req | non-2xx+errors |',
      '|---|---|---|---|---|',
      ...result.million.map(
        ({ scenario, usher: u }) =>
          `| ${scenario} | ${u.rps.toFixed(0)} | ${u.p50}/${u.p99} | ${u.cpu.toFixed(0)} | ${u.errors} |`,
      ),
      '',
      `GET /api/users/{id} on 1,000,000 users against 1,000: req/s ratio ${(result.million[0]!.usher.rps / thousand.rps).toFixed(2)}, ` +
        `CPU per request ratio ${(thousand.cpu / result.million[0]!.usher.cpu).toFixed(2)}. ` +
        `Usher's peak RSS on 1,000,000 users: ${result.millionMemory.hwmMiB.toFixed(0)} MiB, of which, at the end, ` +
        `${result.millionMemory.fileMiB.toFixed(0)} MiB file-backed (the node binary and the database read through SQLite's memory map) ` +
        `and ${result.millionMemory.anonMiB.toFixed(0)} MiB the process's own.`,
    );
  lines.push(
    '',
    `Peak RSS over all these scenarios: baseline ${result.hwm.baseline.toFixed(0)} MiB, Usher ${result.hwm.usher.toFixed(0)} MiB. ` +
      `Idle RSS ${IDLE_SETTLE_MS / 1000} s after the first answer: baseline ${result.idleMiB.baseline.toFixed(0)} MiB, Usher ${result.idleMiB.usher.toFixed(0)} MiB. ` +
      `Start to first answer: baseline ${result.startMs.baseline.toFixed(0)} ms, Usher ${result.startMs.usher.toFixed(0)} ms.`,
    '',
  );
  return lines.join('\n');
}

/** Issue 16's targets, each with this run's figure. */
function targets(results: StoreResult[]): string {
  const lines = ['### Targets (issue 16)', '', '| target | store | this run | met |', '|---|---|---|---|'];
  const row = (target: string, kind: StoreKind, figure: string, met: boolean) =>
    lines.push(
      `| ${target} | ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${figure} | ${met ? 'yes' : '**no**'} |`,
    );
  for (const r of results) {
    const get = (scenario: string) => r.rows.find((x) => x.scenario === scenario)!;
    const user = get('GET /api/users/{id}');
    const cpuRatio = user.baseline.cpu / user.usher.cpu;
    const need = r.kind === 'sqlite' ? 0.8 : 0.9;
    row(
      `GET /api/users/{id} CPU per request, baseline ÷ Usher ≥ ${need.toFixed(2)}`,
      r.kind,
      `${cpuRatio.toFixed(2)} (${user.baseline.cpu.toFixed(0)} ÷ ${user.usher.cpu.toFixed(0)} µs)`,
      cpuRatio >= need,
    );
    const session = get('GET /api/session').usher.cpu / user.usher.cpu;
    row(
      'GET /api/session CPU ≤ 1.3 × GET /api/users/{id}',
      r.kind,
      `${session.toFixed(2)} ×`,
      session <= 1.3,
    );
    const signin = get('POST /api/signin');
    const signinRatio = signin.usher.rps / signin.baseline.rps;
    row(
      'sign-in req/s, Usher ÷ baseline ≥ 0.90',
      r.kind,
      `${signinRatio.toFixed(2)} (${signin.usher.rps.toFixed(1)} ÷ ${signin.baseline.rps.toFixed(1)})`,
      signinRatio >= 0.9,
    );
    const storm = get('GET /api/users/{id} during a sign-in storm').usher;
    const idle = get('GET /api/users/{id} idle, 8 connections').usher;
    row(
      'GET during a sign-in storm: p99 ≤ 10 ms, req/s ≥ half of idle',
      r.kind,
      `p99 ${storm.p99} ms, ${storm.rps.toFixed(0)} req/s against ${idle.rps.toFixed(0)} idle (${(storm.rps / idle.rps).toFixed(2)})`,
      storm.p99 <= 10 && storm.rps >= idle.rps / 2,
    );
    const limit = r.kind === 'sqlite' ? 200 : 250;
    row(
      `peak RSS ≤ ${limit} MiB, or at most the bare baseline's peak`,
      r.kind,
      `${r.hwm.usher.toFixed(0)} MiB (baseline ${r.hwm.baseline.toFixed(0)} MiB)`,
      r.hwm.usher <= limit || r.hwm.usher <= r.hwm.baseline,
    );
    row(
      'idle RSS after start ≤ 100 MiB',
      r.kind,
      `${r.idleMiB.usher.toFixed(0)} MiB (baseline ${r.idleMiB.baseline.toFixed(0)} MiB)`,
      r.idleMiB.usher <= 100,
    );
    if (r.kind === 'sqlite' && r.million.length > 0) {
      const million = r.million[0]!.usher;
      row(
        '1,000,000 users: point lookups ÷ the rate on 1,000 ≥ 0.90',
        r.kind,
        `${(million.rps / user.usher.rps).toFixed(2)} by req/s, ${(user.usher.cpu / million.cpu).toFixed(2)} by CPU per request`,
        million.rps / user.usher.rps >= 0.9,
      );
    }
  }
  lines.push('');
  return lines.join('\n');
}

/** A bar chart of Usher/baseline ratios (throughput and CPU efficiency) per scenario, as SVG. */
function chart(results: StoreResult[]): string {
  const bars = results.flatMap((r) =>
    r.rows.map((row) => ({
      label: `${r.kind}: ${row.scenario}`,
      rps: row.usher.rps / row.baseline.rps,
      cpu: row.baseline.cpu / row.usher.cpu,
    })),
  );
  const rowH = 34;
  const left = 420;
  const scale = 300; // px for ratio 1.0
  const height = 60 + bars.length * rowH;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + scale * 1.4 + 40}" height="${height}" font-family="sans-serif" font-size="12">`,
    '<title>Usher as a fraction of the bare node:http baseline, per scenario</title>',
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="10" y="20" font-size="14" font-weight="bold">Usher as a fraction of the bare node:http baseline (1.0 = equal; higher is better)</text>`,
    `<rect x="${left}" y="30" width="12" height="10" fill="#4e79a7"/><text x="${left + 16}" y="39">throughput ratio</text>`,
    `<rect x="${left + 130}" y="30" width="12" height="10" fill="#f28e2b"/><text x="${left + 146}" y="39">CPU per request ratio</text>`,
    `<line x1="${left + scale}" y1="45" x2="${left + scale}" y2="${height - 5}" stroke="#999" stroke-dasharray="4"/>`,
  ];
  bars.forEach((b, i) => {
    const y = 50 + i * rowH;
    out.push(
      `<text x="${left - 8}" y="${y + 14}" text-anchor="end">${b.label.replace(/&/g, '&amp;')}</text>`,
    );
    out.push(
      `<rect x="${left}" y="${y}" width="${Math.min(1.4, b.rps) * scale}" height="12" fill="#4e79a7"/>`,
    );
    out.push(`<text x="${left + Math.min(1.4, b.rps) * scale + 4}" y="${y + 10}">${b.rps.toFixed(2)}</text>`);
    out.push(
      `<rect x="${left}" y="${y + 14}" width="${Math.min(1.4, b.cpu) * scale}" height="12" fill="#f28e2b"/>`,
    );
    out.push(`<text x="${left + Math.min(1.4, b.cpu) * scale + 4}" y="${y + 24}">${b.cpu.toFixed(2)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}

const results: StoreResult[] = [await benchStore('sqlite')];
if (postgresAvailable) results.push(await benchStore('postgres'));
else console.error('PostgreSQL: skipped (TEST_DATABASE_URL is not set)');

const report = [
  `<!-- generated by npm run bench${QUICK ? ' (BENCH_QUICK: no million-user phase)' : ''} on ${new Date().toISOString()}: ${ROUNDS} alternated rounds of ${SECONDS} s per scenario, medians -->`,
  ...results.map(table),
  ONLY ? '' : targets(results),
].join('\n');
console.log(report);
// A quick run checks; only a full one replaces the published results.
if (!QUICK) {
  const docs = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
  const text = readFileSync(docs, 'utf8');
  writeFileSync(
    docs,
    text.replace(
      /<!-- results:start -->[\s\S]*<!-- results:end -->/,
      `<!-- results:start -->\n${report}\n<!-- results:end -->`,
    ),
  );
  writeFileSync(fileURLToPath(new URL('../docs/benchmarks.svg', import.meta.url)), chart(results));
}
