// `npm run bench:check`: the guard against the next slowdown of a hot path (issue 48), in under two
// minutes. Each check measures one path on Usher and on a baseline doing the same work, both
// running at once, in alternated rounds (baseline then Usher, Usher then baseline, ...), each
// check's rounds interleaved with the others' so that a burst of load elsewhere on the machine falls
// on one round of every check rather than on all rounds of one. A round gives one ratio: the
// baseline's CPU time per request over Usher's, each server's own, from /proc. The check's figure
// is the median of its rounds' ratios, compared with its floor in bench/floors.json. Prints a table
// and exits 1 when a ratio is below its floor, a floor is missing or a server answered an error.
// Not part of `npm test`: docs/benchmarks.md ("The guard") says how to run it and set the floors.
//
//   npm run bench:check [-- --store sqlite|postgres] [--rounds N] [--only <regex>] [--verbose]
//
// --store postgres needs TEST_DATABASE_URL; --rounds trades time for a steadier median; --only
// measures the checks whose names match (a partial run: its verdict covers only those); --verbose
// prints every round's figures.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import {
  type BenchRequest,
  launch,
  median,
  preciseCpuSeconds,
  requestsOf,
  run,
  SCENARIOS,
  type Server,
  seed,
} from './common.ts';

/** A server a check measures: its process (whose CPU /proc counts) and where it listens. */
export interface Running {
  pid: number;
  base: string;
  stop(): Promise<void>;
}

/**
 * One path against its baseline: its ratio is the baseline's CPU per request ÷ Usher's. To add one (the token endpoint against oidc-provider alone, a
 * session read with an active organization): start functions for its two servers, the request, and
 * a floor per store in bench/floors.json under the same name. Checks whose start functions are the
 * same function share the running servers (the lookup, the session read and the sign-in share one
 * bare baseline and one Usher, on one seeded database each). `S` lets a check's servers carry what
 * its requests need, e.g. the client id and secret each of its two servers registered:
 *
 *   const token: Check<Running & { tokenRequest: BenchRequest }> = {
 *     name: 'POST /oidc/token', floor: floor(store, 'POST /oidc/token'), connections: 8,
 *     seconds: 0.4, startBaseline: providerAlone, startUsher: usherWithClient,
 *     request: (server) => server.tokenRequest,
 *   };
 *   list.push(token);
 */
export interface Check<S extends Running = Running> {
  /** Its key in bench/floors.json and its row in the table. */
  name: string;
  /** Its ratio's floor on this store (bench/floors.json). */
  floor: number | undefined;
  connections: number;
  /** About how long one server's share of one round lasts. */
  seconds: number;
  startBaseline(store: StoreKind): Promise<S>;
  startUsher(store: StoreKind): Promise<S>;
  /** One request of the load, built anew each time, for `server` (the baseline or Usher). */
  request(server: S): BenchRequest;
}

const FLOORS_FILE = new URL('./floors.json', import.meta.url);
const floors = JSON.parse(readFileSync(FLOORS_FILE, 'utf8')) as Partial<
  Record<StoreKind, Record<string, number>>
>;
const floor = (store: StoreKind, name: string): number | undefined => floors[store]?.[name];

/** A fresh seeded database (bench/common.ts: 1,000 users, a session each) and `kind` on it. */
function seeded(kind: Server): (store: StoreKind) => Promise<Running> {
  return async (store) => {
    const fresh = await freshDatabaseUrl(store);
    let launched: Awaited<ReturnType<typeof launch>>;
    try {
      await seed(fresh.url);
      launched = await launch(kind, fresh.url);
    } catch (error) {
      await fresh.drop();
      throw error;
    }
    const { child, base } = launched;
    return {
      pid: child.pid!,
      base,
      stop: async () => {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
        await fresh.drop();
      },
    };
  };
}
const bareBaseline = seeded('baseline');
const usher = seeded('usher');

function checks(store: StoreKind): Check[] {
  const list: Check[] = [
    {
      name: 'GET /api/users/{id}',
      floor: floor(store, 'GET /api/users/{id}'),
      connections: SCENARIOS['GET /api/users/{id}'].connections,
      seconds: 0.4,
      startBaseline: bareBaseline,
      startUsher: usher,
      request: () => SCENARIOS['GET /api/users/{id}'].request(),
    },
    {
      name: 'GET /api/session',
      floor: floor(store, 'GET /api/session'),
      connections: SCENARIOS['GET /api/session'].connections,
      seconds: 0.4,
      startBaseline: bareBaseline,
      startUsher: usher,
      request: () => SCENARIOS['GET /api/session'].request(),
    },
    // By CPU per sign-in, like the others, not by sign-ins a second as bench/run.ts reports them:
    // on SQLite Usher's hash threads run under SCHED_IDLE (decision 143), so on a machine doing
    // anything else Usher's rate against the baseline's measures that work rather than Usher's.
    {
      name: 'POST /api/signin',
      floor: floor(store, 'POST /api/signin'),
      connections: SCENARIOS['POST /api/signin'].connections,
      seconds: 0.8,
      startBaseline: bareBaseline,
      startUsher: usher,
      request: () => SCENARIOS['POST /api/signin'].request(),
    },
  ];
  return list;
}

const { values: options } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    rounds: { type: 'string', default: '24' },
    only: { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});
if (options.store !== 'sqlite' && options.store !== 'postgres')
  throw new Error(`--store is sqlite or postgres, not ${options.store}`);
const store: StoreKind = options.store;
if (store === 'postgres' && !postgresAvailable)
  throw new Error('--store postgres needs TEST_DATABASE_URL (a server this may create databases on)');
const ROUNDS = Number(options.rounds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error('--rounds is a whole number, at least 1');
const only = options.only ? new RegExp(options.only, 'i') : undefined;

/** When no further round starts, from the start: the rest is stopping the servers, and the table. */
const DEADLINE_MS = 110_000;

/** Other processes' use of the machine past which the run says its figures are not a quiet machine's. */
const BUSY_CORES = 0.25;

interface Figure {
  cpuUs: number;
  rps: number;
  /** Cores' worth of CPU that the rest of the machine (neither server nor this load generator) used meanwhile. */
  others: number;
  errors: number;
}

/** Busy time of the whole machine (every CPU, steal included), in seconds, from /proc/stat. */
function machineBusySeconds(): number {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number) as number[];
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100;
}

const ownCpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** `amount` requests of the check's load on one server: its CPU per request (and its rate, for --verbose). */
async function sample(check: Check, server: Running, amount: number): Promise<Figure> {
  const busy = machineBusySeconds();
  const own = ownCpuSeconds();
  const cpu = preciseCpuSeconds(server.pid);
  const started = performance.now();
  const result = await autocannon({
    url: server.base,
    connections: check.connections,
    amount,
    // A run of `amount` requests ends at autocannon's first sample after the last answer: every
    // 10 ms rather than every second, or the throughput would count up to a second of idling.
    sampleInt: 10,
    requests: requestsOf(() => check.request(server)),
  });
  const seconds = (performance.now() - started) / 1000;
  const serverCpu = preciseCpuSeconds(server.pid) - cpu;
  const others = machineBusySeconds() - busy - (ownCpuSeconds() - own) - serverCpu;
  const requests = result.requests.total;
  return {
    cpuUs: (serverCpu * 1e6) / Math.max(1, requests),
    rps: requests / seconds,
    others: Math.max(0, others) / seconds,
    errors: result.errors + result.timeouts + result.non2xx,
  };
}

const wall = performance.now();
const selected = checks(store).filter((check) => !only || only.test(check.name));
const servers = new Map<Check['startBaseline'], Promise<Running>>();
const start = (starter: Check['startBaseline']) => {
  let server = servers.get(starter);
  if (!server) {
    server = starter(store);
    servers.set(starter, server);
  }
  return server;
};

interface Measured {
  check: Check;
  pair: { baseline: Running; usher: Running };
  /** A fixed number of requests per share, so that no request is left in flight when the CPU is read. */
  amount: number;
  baseline: number[];
  usher: number[];
  ratios: number[];
  others: number[];
  errors: number;
}
const measured: Measured[] = [];
let measuring = 0;
let rounds = 0;
try {
  for (const check of selected) {
    const [baseline, usher] = await Promise.all([start(check.startBaseline), start(check.startUsher)]);
    const pair = { baseline, usher };
    // Warm-up (the JIT, the statement caches), and the rate that sizes each share of a round.
    let rate = 0;
    for (const server of [pair.baseline, pair.usher]) {
      const warm = await run(
        server.base,
        { connections: check.connections, request: () => check.request(server) },
        1,
      );
      rate += warm.requests.total / 2;
    }
    const amount = Math.max(check.connections, Math.round(rate * check.seconds));
    measured.push({ check, pair, amount, baseline: [], usher: [], ratios: [], others: [], errors: 0 });
  }
  measuring = performance.now() - wall;
  console.error(`servers started and warm in ${((performance.now() - wall) / 1000).toFixed(0)} s`);
  for (let round = 1; round <= ROUNDS; round++) {
    // Two minutes in all, however slow a busy machine makes each round: the rounds that fit.
    const elapsed = performance.now() - wall;
    if (round > 2 && elapsed + (elapsed - measuring) / (round - 1) > DEADLINE_MS) break;
    rounds = round;
    const order: Server[] = round % 2 === 1 ? ['baseline', 'usher'] : ['usher', 'baseline'];
    for (const m of measured) {
      const figures = {} as Record<Server, Figure>;
      for (const side of order) figures[side] = await sample(m.check, m.pair[side], m.amount);
      m.baseline.push(figures.baseline.cpuUs);
      m.usher.push(figures.usher.cpuUs);
      m.errors += figures.baseline.errors + figures.usher.errors;
      m.others.push(figures.baseline.others, figures.usher.others);
      m.ratios.push(figures.baseline.cpuUs / figures.usher.cpuUs);
      if (options.verbose)
        console.error(
          `  ${m.check.name}: ${order.join(' then ')}; CPU µs/req ${figures.baseline.cpuUs.toFixed(1)} ÷ ${figures.usher.cpuUs.toFixed(1)} = ` +
            `${(figures.baseline.cpuUs / figures.usher.cpuUs).toFixed(2)}; req/s ${figures.usher.rps.toFixed(0)} ÷ ` +
            `${figures.baseline.rps.toFixed(0)} = ${(figures.usher.rps / figures.baseline.rps).toFixed(2)}; ` +
            `other processes ${figures.baseline.others.toFixed(2)}, ${figures.usher.others.toFixed(2)} cores`,
        );
    }
    console.error(`round ${round} of ${ROUNDS} done`);
  }
} finally {
  for (const server of servers.values()) await (await server.catch(() => undefined))?.stop();
}

const seconds = (performance.now() - wall) / 1000;
const lines = [
  `npm run bench:check: ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${rounds} alternated rounds` +
    `${rounds < ROUNDS ? ` (of ${ROUNDS}: the time limit)` : ''}, ${seconds.toFixed(0)} s in all`,
  '',
  "| check | floor | ratio: the baseline's CPU per request ÷ Usher's (median; lowest-highest round) | baseline | Usher | verdict |",
  '|---|---|---|---|---|---|',
];
let failed = false;
for (const m of measured) {
  const ratio = median(m.ratios);
  const verdict =
    m.check.floor === undefined
      ? `**no floor** in bench/floors.json for ${store}`
      : m.errors > 0
        ? `**${m.errors} errors**`
        : ratio < m.check.floor
          ? '**below the floor**'
          : 'ok';
  if (verdict !== 'ok') failed = true;
  const figure = (values: number[]) => {
    const us = median(values);
    return `${us < 1000 ? us.toFixed(1) : us.toLocaleString('en', { maximumFractionDigits: 0 })} µs`;
  };
  lines.push(
    `| ${m.check.name} | ${m.check.floor?.toFixed(2) ?? '-'} | ${ratio.toFixed(2)} ` +
      `(${Math.min(...m.ratios).toFixed(2)}-${Math.max(...m.ratios).toFixed(2)}) | ` +
      `${figure(m.baseline)} | ${figure(m.usher)} | ${verdict} |`,
  );
}
// The floors hold on a quiet machine; say when this one was not, so that a failure is rerun before
// it is believed (and a pass on a busy machine is no less a pass).
const others = median(measured.flatMap((m) => m.others));
lines.push(
  '',
  `Other processes used a median ${others.toFixed(2)} of the machine's cores while the servers were measured` +
    (others > BUSY_CORES ? ': a busy machine, whose figures are noisier than the floors allow for.' : '.'),
  '',
  failed ? 'FAIL: below a floor (docs/benchmarks.md, "The guard": how to read it).' : 'PASS',
);
console.log(lines.join('\n'));
process.exitCode = failed ? 1 : 0;
