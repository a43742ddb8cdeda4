// `npm run soak`: about a minute of mixed load (reads, sign-ins, registrations, bad requests)
// against a real Usher process on loopback, reporting errors, p99 and the server's memory over
// time: RSS is sampled every second, and growth is judged over the second half of the run, after
// the heap, the malloc arenas and the hash buffers have warmed up. Not part of `npm test`.
// SOAK_SECONDS changes the duration.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { postJson, startServer } from '../test/helpers/process.ts';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const SEED_USERS = 20;

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

type Req = { method?: string; path?: string; headers?: Record<string, string>; body?: string };

async function soak(kind: StoreKind) {
  const fresh = await freshDatabaseUrl(kind);
  const server = await startServer({ DATABASE_URL: fresh.url, LOG_LEVEL: 'warn' });
  const pid = server.child.pid!;
  try {
    const users: Array<{ email: string; password: string; id: number }> = [];
    for (let i = 0; i < SEED_USERS; i++) {
      const body = { email: `soak${i}@example.com`, name: `Soak ${i}`, password: `soak-password-${i}` };
      const res = await postJson(`${server.url}/api/users`, body);
      users.push({ ...body, id: Number(res.json.id) });
    }
    const rssStart = rssMiB(pid);
    let counter = 0;
    const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]!;
    const json = { 'content-type': 'application/json' };
    // Each request is drawn at random: 60% reads, 10% sign-ins (half wrong), 5% registrations,
    // 25% bad requests (malformed JSON, unknown routes, hostile ids, wrong content type).
    const next = (req: Req): Req => {
      const drawn = draw(req);
      // autocannon merges headers and needs every request to carry an object there.
      return {
        method: drawn.method,
        path: drawn.path,
        headers: drawn.headers ?? {},
        ...(drawn.body ? { body: drawn.body } : {}),
      };
    };
    const draw = (req: Req): Req => {
      const roll = Math.random();
      if (roll < 0.6) return { ...req, method: 'GET', path: `/api/users/${pick(users).id}`, body: undefined };
      if (roll < 0.7) {
        const u = pick(users);
        const password = Math.random() < 0.5 ? u.password : 'wrong-password-x';
        return {
          ...req,
          method: 'POST',
          path: '/api/signin',
          headers: json,
          body: JSON.stringify({ email: u.email, password }),
        };
      }
      if (roll < 0.75) {
        counter += 1;
        const body = {
          email: `soak-new-${process.pid}-${counter}@example.com`,
          name: 'New',
          password: 'soak-new-password',
        };
        return { ...req, method: 'POST', path: '/api/users', headers: json, body: JSON.stringify(body) };
      }
      return pick<Req>([
        { method: 'POST', path: '/api/users', headers: json, body: '{"email":' },
        { method: 'GET', path: '/api/nothing/here' },
        { method: 'GET', path: '/api/users/%zz' },
        { method: 'GET', path: `/api/users/${'9'.repeat(40)}` },
        { method: 'POST', path: '/api/signin', headers: { 'content-type': 'text/plain' }, body: 'x' },
        { method: 'POST', path: '/rest', headers: json, body: '[1,2,3]' },
      ]);
    };
    let serverErrors = 0;
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMiB(pid)), 1000);
    const instance = autocannon({
      url: server.url,
      connections: 16,
      duration: SECONDS,
      requests: [{ setupRequest: next as never }],
    } as never);
    const emitter = instance as unknown as {
      on(event: 'response', fn: (c: unknown, status: number) => void): void;
    };
    emitter.on('response', (_client, status) => {
      if (status >= 500) serverErrors += 1;
    });
    const result = await instance;
    clearInterval(sampler);
    const rssEnd = rssMiB(pid);
    const at = (fraction: number) =>
      samples[Math.min(samples.length - 1, Math.floor(samples.length * fraction))] ?? rssEnd;
    const ready = await fetch(`${server.url}/readyz`);
    return {
      store: kind,
      requests: result.requests.total,
      serverErrors,
      connectionErrors: result.errors + result.timeouts,
      p99: result.latency.p99,
      rssStart: rssStart.toFixed(0),
      rssOverTime: [0.25, 0.5, 0.75]
        .map((f) => at(f).toFixed(0))
        .concat(rssEnd.toFixed(0))
        .join(' → '),
      rssPeak: Math.max(rssEnd, ...samples).toFixed(0),
      secondHalfGrowth: (rssEnd - at(0.5)).toFixed(0),
      readyAfter: ready.status,
    };
  } finally {
    await server.stop();
    await fresh.drop();
  }
}

const results = [await soak('sqlite')];
if (postgresAvailable) results.push(await soak('postgres'));
console.log(
  `Soak: ${SECONDS} s, 16 connections, mixed load (60% reads, 10% sign-ins, 5% registrations, 25% bad)`,
);
console.log(
  '| store | requests | 5xx | connection errors | p99 ms | RSS MiB before | RSS MiB at ¼ → ½ → ¾ → end | peak | growth over the second half | /readyz after |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(
    `| ${r.store} | ${r.requests} | ${r.serverErrors} | ${r.connectionErrors} | ${r.p99} | ${r.rssStart} | ${r.rssOverTime} | ${r.rssPeak} | ${r.secondHalfGrowth} MiB | ${r.readyAfter} |`,
  );
}
const failed = results.some((r) => r.serverErrors > 0 || r.connectionErrors > 0 || r.readyAfter !== 200);
process.exit(failed ? 1 : 0);
