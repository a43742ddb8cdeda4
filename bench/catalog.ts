// `node bench/catalog.ts`: the lists an anonymous caller can ask for, timed on SQLite with 200,000
// products, 200,000 users and 50,000 reviews of one product (issue 25). SQLite runs each query on
// the event loop, so a list's time is time every other request waits: the table gives each list's
// median over a few runs, its status and how many items it returned, and then how long /healthz
// waits behind 4 of the worst ones at once. Seeded with plain SQL (no API, no hashing), so it runs
// against any version of Usher (decision 150 has the figures before and after).
// BENCH_ROWS (default 200000) changes the number of products and users; BENCH_RUNS (default 3)
// how many times each list is timed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { schemaMigrations } from '../src/features.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 200_000);
const REVIEWS = Math.round(ROWS / 4);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BATCH = 500;

const dir = mkdtempSync(join(tmpdir(), 'usher-bench-catalog-'));
const url = `sqlite:${join(dir, 'bench.db')}`;
const config = loadConfig({ DATABASE_URL: url, PROFILE: 'b', LOG_LEVEL: 'error' });

// Deterministic pseudo-random text, so every run (and every version) lists the same rows.
let state = 42;
const next = () => {
  state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
  return state;
};
const WORDS = [
  'lamp',
  'desk',
  'chair',
  'Oak',
  'steel',
  'blue',
  'Zen',
  'mini',
  'pro',
  'eco',
  'retro',
  'smart',
];
const words = (n: number) => Array.from({ length: n }, () => WORDS[next() % WORDS.length]).join(' ');
const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 37_000 + (next() % 30_000)).toISOString();

async function seed(): Promise<bigint> {
  const database = openDatabase(url, config.database);
  await database.migrate(schemaMigrations());
  const db = database.db;
  const t0 = performance.now();
  for (let start = 1; start <= ROWS; start += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, ROWS - start + 1) }, (_, i) => start + i);
    await db
      .insertInto('users')
      .values(
        ids.map((i) => ({
          email: `user${i}@example.com`,
          email_key: `user${i}@example.com`,
          name: `${words(2)} ${i}`,
          created_at: at(i),
          updated_at: at(i),
        })),
      )
      .execute();
  }
  for (let start = 1; start <= ROWS; start += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, ROWS - start + 1) }, (_, i) => start + i);
    await db
      .insertInto('products')
      .values(
        ids.map((i) => ({
          name: words(3),
          // Descriptions of about 1,000 characters: a sort without an index carries them along.
          description: words(170),
          price: next() % 100_000,
          owner_id: BigInt(1 + (i % 1000)),
          created_at: at(i),
          updated_at: at(i),
        })),
      )
      .execute();
  }
  for (let start = 1; start <= REVIEWS; start += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, REVIEWS - start + 1) }, (_, i) => start + i);
    await db
      .insertInto('reviews')
      .values(
        ids.map((i) => ({
          product_id: 1n,
          author_id: BigInt(1 + (i % ROWS)),
          rating: 1 + (next() % 5),
          text: words(20),
          written_at: at(i),
          updated_at: at(i),
        })),
      )
      .execute();
  }
  console.log(
    `seeded ${ROWS} users, ${ROWS} products, ${REVIEWS} reviews of product 1 in ${Math.round(performance.now() - t0)} ms`,
  );
  return BigInt(ROWS);
}

await seed();
const database = openDatabase(url, config.database);
const app = await buildApp(config, {
  database,
  logStream: new Writable({ write: (_c, _e, done) => done() }),
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const deep = Math.floor((ROWS - 200) / 100);

const lists: string[] = [];
for (const [path, keys] of [
  ['/api/products', ['id', 'name', 'price', 'createdAt']],
  ['/api/users', ['id', 'name', 'email', 'createdAt']],
  ['/api/products/1/reviews', ['id', 'time', 'rating']],
] as const) {
  const last = Math.floor(((path.includes('reviews') ? REVIEWS : ROWS) - 200) / 100);
  for (const key of keys) {
    for (const sort of [key, `-${key}`]) {
      lists.push(`${path}?sort=${sort}&size=100&page=1`);
      lists.push(`${path}?sort=${sort}&size=100&page=100`);
      lists.push(`${path}?sort=${sort}&size=100&page=${path.includes('reviews') ? last : deep}`);
    }
  }
  lists.push(`${path}?size=100&page=999999999`);
}

console.log(`\n| list | status | items | X-Total-Count | median ms (${RUNS} runs) |\n|---|---|---|---|---|`);
let worst = { ms: 0, url: '' };
for (const path of lists) {
  const times: number[] = [];
  let status = 0;
  let items = 0;
  let total = '';
  for (let run = 0; run < RUNS; run++) {
    const t = performance.now();
    const res = await app.inject({ method: 'GET', url: path });
    times.push(performance.now() - t);
    status = res.statusCode;
    const body = res.json();
    items = Array.isArray(body) ? body.length : 0;
    total = String(res.headers['x-total-count'] ?? '');
  }
  const ms = median(times);
  if (ms > worst.ms) worst = { ms, url: path };
  console.log(`| \`${path}\` | ${status} | ${items} | ${total} | ${ms.toFixed(1)} |`);
}
console.log(`\nslowest list: ${worst.url} at ${worst.ms.toFixed(1)} ms`);

// /healthz behind 4 of the worst lists at once, over real connections (the red team's figure
// was 17-19 s): the lists are sent first, /healthz 10 ms later.
const address = await app.listen({ port: 0, host: '127.0.0.1' });
const readers = Array.from({ length: 4 }, () => fetch(`${address}${worst.url}`).then((r) => r.arrayBuffer()));
await new Promise((resolve) => setTimeout(resolve, 10));
const t = performance.now();
const health = await fetch(`${address}/healthz`);
const healthMs = performance.now() - t;
await Promise.all(readers);
console.log(`/healthz answered ${health.status} after ${healthMs.toFixed(1)} ms behind 4 of those`);

await app.close();
rmSync(dir, { recursive: true, force: true });
