// `npm run bench:totp` (also the last step of `npm run bench`): sign-in throughput with a TOTP code
// next to a password alone, on one Usher server and one database, alternated, on SQLite (and
// PostgreSQL with TEST_DATABASE_URL). Odd users sign in with their password; even users have TOTP
// in force and send a code as well, each user once (a code is good once per 30-second step).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { Secret, TOTP } from 'otpauth';
import { SecretBox } from '../src/kernel/sealing.ts';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';
import { seedUsers } from './seed.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (process.env.BENCH_QUICK === '1' ? 1 : 3));
const USERS = 4000;
const PASSWORD = 'bench-password-1';
const SECRET = new Secret({ size: 20 });
const totp = new TOTP({ secret: SECRET });

async function seed(url: string, key: Buffer): Promise<void> {
  const box = new SecretBox(key);
  await seedUsers(url, USERS, PASSWORD, async (database, ids, now) => {
    const even = ids.filter((id) => id % 2 === 0);
    await database.db
      .insertInto('totp_factors')
      .values(
        even.map((id) => ({
          user_id: BigInt(id),
          secret_sealed: box.seal(SECRET.base32, String(id)),
          created_at: now,
          confirmed_at: now,
        })),
      )
      .execute();
  });
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

let nextEven = 2;
const body = {
  password: () => ({
    email: `u${1 + 2 * Math.floor(Math.random() * (USERS / 2))}@example.com`,
    password: PASSWORD,
  }),
  totp: () => {
    const id = nextEven;
    nextEven = nextEven + 2 > USERS ? 2 : nextEven + 2;
    return { email: `u${id}@example.com`, password: PASSWORD, code: totp.generate() };
  },
};

async function measure(base: string, pid: number, kind: keyof typeof body) {
  const before = cpuSeconds(pid);
  const r = await autocannon({
    url: base,
    connections: 8,
    duration: SECONDS,
    requests: [
      {
        setupRequest: (() => ({
          method: 'POST',
          path: '/api/signin',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body[kind]()),
        })) as never,
      },
    ],
  });
  const cpu = cpuSeconds(pid) - before;
  return {
    rps: r.requests.average,
    cpuUs: (cpu * 1e6) / Math.max(1, r.requests.total),
    non2xx: r.non2xx + r.errors,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function benchStore(kind: StoreKind): Promise<string> {
  const fresh = await freshDatabaseUrl(kind);
  const key = randomBytes(32);
  await seed(fresh.url, key);
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: fresh.url,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ENCRYPTION_KEY: key.toString('base64'),
      // The load generator is one address standing for many clients.
      SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
      SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; i < 400; i++) {
      try {
        await fetch(`${base}/healthz`);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    type Sample = Awaited<ReturnType<typeof measure>>;
    const results: Record<'password' | 'totp', Sample[]> = { password: [], totp: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const k of ['password', 'totp'] as const) results[k].push(await measure(base, child.pid!, k));
    }
    const row = (k: 'password' | 'totp') =>
      `| ${k === 'password' ? 'password alone' : 'password and TOTP code'} | ${median(results[k].map((r) => r.rps)).toFixed(1)} | ${median(results[k].map((r) => r.cpuUs)).toFixed(0)} | ${results[k].reduce((n, r) => n + r.non2xx, 0)} |`;
    const ratio = median(results.totp.map((r) => r.rps)) / median(results.password.map((r) => r.rps));
    return [
      `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      '',
      '| sign-in | req/s | CPU µs/req | non-2xx |',
      '|---|---|---|---|',
      row('password'),
      row('totp'),
      '',
      `With a TOTP code, sign-ins run at ${ratio.toFixed(2)} of the rate of a password alone.`,
      '',
    ].join('\n');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await fresh.drop();
  }
}

const report = [
  `<!-- npm run bench:totp on ${new Date().toISOString()}: ${ROUNDS} alternated rounds of ${SECONDS} s, medians -->`,
];
for (const kind of ['sqlite', ...(postgresAvailable ? ['postgres' as const] : [])] as const) {
  report.push(await benchStore(kind));
}
console.log(report.join('\n'));
