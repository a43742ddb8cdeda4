// Quick benchmark: GET /api/users/{id} throughput of a real Usher process on each store, with
// production settings (argon2 defaults, LOG_LEVEL=info). SQLite always; PostgreSQL when
// TEST_DATABASE_URL is set. Rerun with `npm run bench`.
import { spawn } from 'node:child_process';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';

const USERS = 1000;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const CONNECTIONS = 32;
// One precomputed hash for every seeded row: seeding measures nothing, so it skips hashing.
const SEED_HASH =
  '$argon2id$v=19$m=19456,t=2,p=1$c2VlZHNlZWRzZWVkc2VlZA$2yV0a3B1bm5lZC1iZW5jaC1vbmx5LXNlZWQtaGFzaA';

async function seed(url: string): Promise<void> {
  const database = openDatabase(url, loadConfig({}).database);
  try {
    await database.migrate();
    const now = new Date().toISOString();
    for (let start = 0; start < USERS; start += 200) {
      const rows = Array.from({ length: Math.min(200, USERS - start) }, (_, i) => ({
        email: `bench${start + i}@example.com`,
        email_key: `bench${start + i}@example.com`,
        name: `Bench ${start + i}`,
        password_hash: SEED_HASH,
        created_at: now,
        updated_at: now,
      }));
      await database.db.insertInto('users').values(rows).execute();
    }
  } finally {
    await database.close();
  }
}

async function run(kind: StoreKind) {
  const fresh = await freshDatabaseUrl(kind);
  await seed(fresh.url);
  const port = await freePort();
  const server = spawn(process.execPath, [SERVER_ENTRY], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: fresh.url, PORT: String(port), LOG_LEVEL: 'info' },
    stdio: 'ignore',
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`${base}/readyz`)).ok) break;
      } catch {}
      await new Promise((r) => setTimeout(r, 50));
    }
    const requests = [
      {
        setupRequest: (req: { path?: string }) => ({
          ...req,
          path: `/api/users/${1 + Math.floor(Math.random() * USERS)}`,
        }),
      },
    ];
    await autocannon({ url: base, connections: CONNECTIONS, duration: 2, requests }); // warm-up
    const r = await autocannon({ url: base, connections: CONNECTIONS, duration: DURATION_S, requests });
    return {
      store: kind,
      reqPerSec: Math.round(r.requests.average),
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.errors + r.non2xx,
    };
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await fresh.drop();
  }
}

const results = [await run('sqlite')];
if (postgresAvailable) results.push(await run('postgres'));
else console.log('PostgreSQL: skipped (TEST_DATABASE_URL is not set)');
console.log(
  `GET /api/users/{id}, ${USERS} users, ${CONNECTIONS} connections, ${DURATION_S} s, LOG_LEVEL=info`,
);
console.log('| store | req/s | p50 ms | p99 ms | errors |');
console.log('|---|---|---|---|---|');
for (const r of results) console.log(`| ${r.store} | ${r.reqPerSec} | ${r.p50} | ${r.p99} | ${r.errors} |`);
