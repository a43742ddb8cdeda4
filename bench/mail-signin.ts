// `npm run bench:mail-signin` (also a step of `npm run bench`): what sign-in by mail costs, on one
// Usher server per store with production hashing (bin/server's defaults), on SQLite and PostgreSQL.
//
// 1. Asks: POST /api/password/forgot, /api/signin/email-link and /api/signin/email-code, each for
//    emails with an account and for emails without one, in alternated rounds: req/s and the whole
//    process's CPU per ask (the background worker that mails included). The known and unknown
//    rates side by side are the enumeration claim, measured: the ask does the same work for both.
// 2. Sign-ins: POST /api/signin/email-code/verify and /api/signin/email-link/verify against
//    POST /api/signin with a password (argon2id m=19456 KiB, t=2: the production minimum), each
//    user once. The links and codes are written into the database before the server starts, with
//    the service's own hashing (a link's SHA-256, a code's HMAC under its row's salt), as if mailed.
//
// BENCH_QUICK=1: one round; BENCH_ROUNDS, BENCH_SECONDS. Results go between the bench:mail-signin
// markers in docs/benchmarks.md unless BENCH_QUICK=1 (BENCH_MAIL_SIGNIN_WRITE=1 writes anyway).
// PostgreSQL: TEST_DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres when it answers.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';
import { seedUsers } from './seed.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 4));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const WRITE =
  process.env.BENCH_MAIL_SIGNIN_WRITE === '1' || (!QUICK && process.env.BENCH_MAIL_SIGNIN_WRITE !== '0');
const PASSWORD = 'bench-password-1';
/** Sign-ins per kind per round (each user signs in once: a link or code is good once). */
const SIGNINS = QUICK ? 400 : 1500;
const PASSWORD_SIGNINS = QUICK ? 60 : 200;
/** Users 1..USERS: the first third for codes, the second for links, all with the password. */
const USERS = 3 * SIGNINS * ROUNDS;
const CODE = '482915';
const TOKENS: string[] = [];

async function seed(url: string): Promise<void> {
  const expires = Date.now() + 3600_000;
  await seedUsers(url, USERS, PASSWORD, async (database, ids) => {
    const rows = ids
      .filter((id) => id <= 2 * SIGNINS * ROUNDS)
      .map((id) => {
        const isCode = id <= SIGNINS * ROUNDS;
        const salt = randomBytes(16).toString('hex');
        const token = randomBytes(32).toString('base64url');
        if (!isCode) TOKENS.push(token);
        return {
          kind: isCode ? ('code' as const) : ('link' as const),
          secret_hash: isCode
            ? createHmac('sha256', Buffer.from(salt, 'hex')).update(CODE).digest('hex')
            : createHash('sha256').update(token).digest('hex'),
          salt: isCode ? salt : null,
          email: `u${id}@example.com`,
          email_key: `u${id}@example.com`,
          user_id: BigInt(id),
          redirect_to: 'http://127.0.0.1/account',
          locale: null,
          created_at: Date.now(),
          expires_at: expires,
        };
      });
    if (rows.length > 0) await database.db.insertInto('mail_signins').values(rows).execute();
  });
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Sample {
  rps: number;
  cpuUs: number;
  unexpected: number;
}

async function load(
  base: string,
  pid: number,
  path: string,
  next: () => unknown,
  expected: number,
  limit: { duration: number } | { amount: number },
): Promise<Sample> {
  const before = cpuSeconds(pid);
  let unexpected = 0;
  const r = await autocannon({
    url: base,
    connections: 8,
    ...limit,
    requests: [
      {
        setupRequest: (() => ({
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(next()),
        })) as never,
        onResponse: (status: number) => {
          if (status !== expected) unexpected += 1;
        },
      },
    ],
  });
  // The worker mails after the answers: its CPU belongs to the asks.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const cpu = cpuSeconds(pid) - before;
  return {
    rps: r.requests.total / Math.max(0.001, r.duration),
    cpuUs: (cpu * 1e6) / Math.max(1, r.requests.total),
    unexpected,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const random = () => 1 + Math.floor(Math.random() * USERS);

async function start(url: string, outbox: string): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: url,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      MAIL_OUTBOX: outbox,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      // The load generator is one address standing for many clients.
      PASSWORD_RESET_MAX_PER_ADDRESS: '1000000',
      SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
      SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 800; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { child, base };
}

async function benchStore(kind: StoreKind): Promise<string> {
  const fresh = await freshDatabaseUrl(kind);
  TOKENS.length = 0;
  await seed(fresh.url);
  const outbox = mkdtempSync(join(tmpdir(), 'usher-bench-outbox-'));
  const { child, base } = await start(fresh.url, outbox);
  const pid = child.pid!;
  let unknown = 0;
  const asks = {
    'forgot-password, an account': ['/api/password/forgot', () => ({ email: `u${random()}@example.com` })],
    'forgot-password, no account': [
      '/api/password/forgot',
      () => ({ email: `nobody${unknown++}@example.com` }),
    ],
    'sign-in link, an account': ['/api/signin/email-link', () => ({ email: `u${random()}@example.com` })],
    'sign-in link, no account': [
      '/api/signin/email-link',
      () => ({ email: `nobody${unknown++}@example.com` }),
    ],
    'sign-in code, an account': ['/api/signin/email-code', () => ({ email: `u${random()}@example.com` })],
    'sign-in code, no account': [
      '/api/signin/email-code',
      () => ({ email: `nobody${unknown++}@example.com` }),
    ],
  } as const;
  let code = 0;
  let link = 0;
  let password = 0;
  const signins = {
    'password (argon2id m=19456, t=2)': [
      '/api/signin',
      () => ({ email: `u${1 + (password++ % USERS)}@example.com`, password: PASSWORD }),
      PASSWORD_SIGNINS,
    ],
    'mail code': [
      '/api/signin/email-code/verify',
      () => ({ email: `u${++code}@example.com`, code: CODE }),
      SIGNINS,
    ],
    'mail link': ['/api/signin/email-link/verify', () => ({ token: TOKENS[link++] }), SIGNINS],
  } as const;
  const askResults = new Map<string, Sample[]>();
  const signinResults = new Map<string, Sample[]>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = Object.keys(asks).sort(() => Math.random() - 0.5) as (keyof typeof asks)[];
      for (const name of order) {
        const [path, next] = asks[name];
        const sample = await load(base, pid, path, next, 202, { duration: SECONDS });
        askResults.set(name, [...(askResults.get(name) ?? []), sample]);
      }
      for (const name of Object.keys(signins) as (keyof typeof signins)[]) {
        const [path, next, amount] = signins[name];
        const sample = await load(base, pid, path, next, 200, { amount });
        signinResults.set(name, [...(signinResults.get(name) ?? []), sample]);
      }
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await fresh.drop();
    rmSync(outbox, { recursive: true, force: true });
  }
  const row = (name: string, samples: Sample[]) =>
    `| ${name} | ${median(samples.map((s) => s.rps)).toFixed(0)} | ${median(samples.map((s) => s.cpuUs)).toFixed(0)} | ${samples.reduce((n, s) => n + s.unexpected, 0)} |`;
  const rate = (name: string) => median((askResults.get(name) ?? signinResults.get(name))!.map((s) => s.rps));
  const cpu = (name: string) => median(signinResults.get(name)!.map((s) => s.cpuUs));
  return [
    `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    '',
    '| ask (202 expected) | req/s | CPU µs/req | other answers |',
    '|---|---|---|---|',
    ...Object.keys(asks).map((name) => row(name, askResults.get(name)!)),
    '',
    '| sign-in (200 expected) | req/s | CPU µs/req | other answers |',
    '|---|---|---|---|',
    ...Object.keys(signins).map((name) => row(name, signinResults.get(name)!)),
    '',
    `An ask for an email without an account runs at ${(rate('sign-in link, no account') / rate('sign-in link, an account')).toFixed(2)} ` +
      `(link) and ${(rate('sign-in code, no account') / rate('sign-in code, an account')).toFixed(2)} (code) of the rate for one with an account. ` +
      `A code sign-in costs ${(cpu('mail code') / cpu('password (argon2id m=19456, t=2)')).toFixed(2)} of a password sign-in's CPU, a link sign-in ` +
      `${(cpu('mail link') / cpu('password (argon2id m=19456, t=2)')).toFixed(2)}.`,
    '',
  ].join('\n');
}

const report = [
  `<!-- npm run bench:mail-signin on ${new Date().toISOString()}: ${ROUNDS} rounds (asks ${SECONDS} s each in a new order, then ${SIGNINS} mail and ${PASSWORD_SIGNINS} password sign-ins), medians -->`,
];
for (const kind of ['sqlite', ...(postgresAvailable ? ['postgres' as const] : [])] as const) {
  report.push(await benchStore(kind));
}
const text = report.join('\n');
console.log(text);
if (WRITE) {
  const file = new URL('../docs/benchmarks.md', import.meta.url);
  const doc = readFileSync(file, 'utf8');
  const start = '<!-- bench:mail-signin:start -->';
  const end = '<!-- bench:mail-signin:end -->';
  const at = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (at < 0 || to < at) throw new Error('docs/benchmarks.md has no bench:mail-signin markers');
  writeFileSync(file, `${doc.slice(0, at + start.length)}\n${text}\n${doc.slice(to)}`);
}
