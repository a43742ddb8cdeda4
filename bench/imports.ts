// `npm run bench:imports` (also a step of `npm run bench`): users moved in from other systems with
// their password hashes (issue 31), on SQLite and PostgreSQL, production settings throughout
// (argon2id m=19456 KiB, t=2, p=1; HASH_CONCURRENCY = the cores).
//
// 1. Import rate: `usher users import FILE` (a real CLI process, timed from spawn to exit) with
//    lines without a password, lines with a `passwordHash` (the kinds below in turn: nothing to
//    hash, the hash is kept), and lines with a plain `password` (each hashed as argon2id by Usher).
//    Lines per second.
// 2. What a sign-in costs with each kind of imported hash, at the parameters the systems it comes
//    from use by default, against Usher's own argon2id on the same users: Usher built in this
//    process on the imported database, `POST /api/signin` one request at a time, each user
//    (a) with a wrong password (the imported hash verified: what a guess costs), (b) with the
//    right one (verified, then re-hashed as argon2id: the first sign-in), (c) right again (Usher's
//    argon2id, the baseline) and (d) wrong again (argon2id). Latency p50 and this process's CPU per
//    sign-in (process.cpuUsage: the event loop and the hashing threads; PostgreSQL's own CPU is
//    not in it). Each round takes new users and the kinds in a new order; medians over rounds.
//
// BENCH_QUICK=1: fewer lines and users, one round, printed only (BENCH_IMPORTS_WRITE=1 writes).
// BENCH_IMPORTS_LINES (default 20000), BENCH_IMPORTS_PLAIN (lines with a plain password, default
// 200), BENCH_IMPORTS_USERS (users per kind per round, default 20), BENCH_ROUNDS (default 3),
// BENCH_IMPORTS_STORES (default "sqlite,postgres"), BENCH_IMPORTS_WRITE=0 (print, leave the docs).
// PostgreSQL: TEST_DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres.
import { spawn } from 'node:child_process';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import bcryptjs from 'bcryptjs';

process.env.TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/postgres';
const { loadConfig } = await import('../src/config.ts');
const { sizeThreadpool } = await import('../src/shared/threadpool.ts');
// Before anything uses the pool: as src/run.ts sizes it.
sizeThreadpool(loadConfig({}).threadpool.size);
const { buildApp } = await import('../src/app.ts');
const { freshDatabaseUrl } = await import('../test/helpers/databases.ts');
const { argon2Phc, b64, pbkdf2Passlib, scryptPhc } = await import('../test/passwords/made-hashes.ts');

type StoreKind = 'sqlite' | 'postgres';

const QUICK = process.env.BENCH_QUICK === '1';
const LINES = Number(process.env.BENCH_IMPORTS_LINES ?? (QUICK ? 2000 : 20_000));
const PLAIN = Number(process.env.BENCH_IMPORTS_PLAIN ?? (QUICK ? 40 : 200));
const USERS = Number(process.env.BENCH_IMPORTS_USERS ?? (QUICK ? 4 : 20));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const STORES = (process.env.BENCH_IMPORTS_STORES ?? 'sqlite,postgres').split(',') as StoreKind[];
const WRITE = process.env.BENCH_IMPORTS_WRITE === '1' || (!QUICK && process.env.BENCH_IMPORTS_WRITE !== '0');
const CLI = fileURLToPath(new URL('../bin/usher.mjs', import.meta.url));

interface Kind {
  name: string;
  password: string;
  hash: string;
}

/** Each kind at the parameters its systems use by default; one hash per kind, shared by its users. */
function kinds(): Kind[] {
  const made = (name: string, password: string, hash: string): Kind => ({ name, password, hash });
  const keycloakSalt = randomBytes(16);
  const djangoSalt = randomBytes(12).toString('base64url');
  return [
    made('bcrypt, cost 10 (Supabase, Auth0)', 'bench-bcrypt-1', bcryptjs.hashSync('bench-bcrypt-1', 10)),
    made(
      'argon2id m=65536, t=3, p=4 (argon2-cffi, Django)',
      'bench-argon-2',
      argon2Phc('argon2id', 'bench-argon-2', { m: 65536, t: 3, p: 4 }),
    ),
    made(
      'argon2id m=7168, t=5, p=1 (Keycloak 24+)',
      'bench-keycloak-3',
      argon2Phc('argon2id', 'bench-keycloak-3', { m: 7168, t: 5, p: 1 }),
    ),
    made('scrypt ln=16, r=8, p=1 (passlib)', 'bench-scrypt-4', scryptPhc('bench-scrypt-4', 16)),
    made(
      'PBKDF2-SHA256, 29,000 iterations (passlib)',
      'bench-pbkdf2-5',
      pbkdf2Passlib('sha256', 'bench-pbkdf2-5', 29_000),
    ),
    made(
      'PBKDF2-SHA256, 27,500 iterations, 64-byte key (Keycloak before 24)',
      'bench-keycloak-6',
      `$pbkdf2-sha256$i=27500$${b64(keycloakSalt)}$${b64(pbkdf2Sync('bench-keycloak-6', keycloakSalt, 27_500, 64, 'sha256'))}`,
    ),
    made(
      'PBKDF2-SHA512, 210,000 iterations (Keycloak pbkdf2-sha512)',
      'bench-pbkdf2-7',
      pbkdf2Passlib('sha512', 'bench-pbkdf2-7', 210_000),
    ),
    made(
      'Django pbkdf2_sha256, 1,000,000 iterations (Django 5.2)',
      'bench-django-8',
      `pbkdf2_sha256$1000000$${djangoSalt}$${pbkdf2Sync('bench-django-8', djangoSalt, 1_000_000, 32, 'sha256').toString('base64')}`,
    ),
  ];
}

const emailOf = (what: string, i: number) => `${what}${i}@imports.bench`;

/** `usher users import FILE`, timed from spawn to exit; its progress lines go nowhere. */
async function importFile(url: string, file: string): Promise<{ seconds: number; imported: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'users', 'import', file], {
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const seconds = (performance.now() - started) / 1000;
  const imported = Number(/imported (\d+)/.exec(out)?.[1] ?? Number.NaN);
  if (code !== 0 || !Number.isFinite(imported)) throw new Error(`users import exited ${code}: ${out}`);
  return { seconds, imported };
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Phase {
  ms: number;
  cpuMs: number;
}
interface KindResult {
  wrongImported: Phase;
  first: Phase;
  right: Phase;
  wrongArgon: Phase;
}

async function measureStore(kind: StoreKind, all: Kind[], dir: string) {
  const { url, drop } = await freshDatabaseUrl(kind);
  try {
    const write = (name: string, rows: object[]) => {
      const path = join(dir, `${kind}-${name}.jsonl`);
      writeFileSync(path, `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`);
      return path;
    };
    const none = write(
      'none',
      Array.from({ length: LINES }, (_, i) => ({ email: emailOf('none', i), name: `None ${i}` })),
    );
    const hashed = write(
      'hashes',
      Array.from({ length: LINES }, (_, i) => {
        const k = all[i % all.length]!;
        return {
          email: emailOf(`k${i % all.length}-`, Math.floor(i / all.length)),
          name: `Moved ${i}`,
          passwordHash: k.hash,
        };
      }),
    );
    const plain = write(
      'plain',
      Array.from({ length: PLAIN }, (_, i) => ({
        email: emailOf('plain', i),
        name: `Plain ${i}`,
        password: `plain-bench-password-${i}`,
      })),
    );
    const rates: Record<string, { lines: number; perSecond: number }> = {};
    for (const [what, file, lines] of [
      ['none', none, LINES],
      ['hashes', hashed, LINES],
      ['plain', plain, PLAIN],
    ] as const) {
      const run = await importFile(url, file);
      if (run.imported !== lines) throw new Error(`${what}: imported ${run.imported} of ${lines}`);
      rates[what] = { lines, perSecond: lines / run.seconds };
      console.error(`${kind}: ${what}: ${lines} lines in ${run.seconds.toFixed(1)} s`);
    }

    const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'warn' });
    // Every sign-in comes from this one address: the throttle, which would soon refuse the wrong
    // passwords, is lifted. The hashing is production's.
    const throttle = {
      ...config.throttle,
      perAccountAddress: 1e6,
      perAccount: 1e6,
      perAddress: 1e6,
      concurrentPerAccount: 1e6,
      concurrentPerAddress: 1e6,
    };
    const app = await buildApp({ ...config, throttle });
    const results: KindResult[][] = all.map(() => []);
    try {
      const signin = async (email: string, password: string, expected: number): Promise<number> => {
        const started = performance.now();
        const res = await app.inject({
          method: 'POST',
          url: '/api/signin',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ email, password }),
        });
        if (res.statusCode !== expected) throw new Error(`${email}: ${res.statusCode} ${res.body}`);
        return performance.now() - started;
      };
      const phase = async (emails: string[], password: string, expected: number): Promise<Phase> => {
        const cpu = process.cpuUsage();
        const times: number[] = [];
        for (const email of emails) times.push(await signin(email, password, expected));
        const used = process.cpuUsage(cpu);
        return { ms: median(times), cpuMs: (used.user + used.system) / 1000 / emails.length };
      };
      for (let round = 0; round < ROUNDS; round++) {
        for (const k of shuffled(all.map((_, i) => i))) {
          const { password } = all[k]!;
          const emails = Array.from({ length: USERS }, (_, u) => emailOf(`k${k}-`, round * USERS + u));
          results[k]!.push({
            wrongImported: await phase(emails, `${password}-wrong`, 401),
            first: await phase(emails, password, 200),
            right: await phase(emails, password, 200),
            wrongArgon: await phase(emails, `${password}-wrong`, 401),
          });
        }
        console.error(`${kind}: round ${round + 1} of ${ROUNDS}`);
      }
    } finally {
      await app.close();
    }
    const summary = results.map((rounds) => {
      const of = (key: keyof KindResult, field: keyof Phase) => median(rounds.map((r) => r[key][field]));
      return {
        wrongImported: { ms: of('wrongImported', 'ms'), cpuMs: of('wrongImported', 'cpuMs') },
        first: { ms: of('first', 'ms'), cpuMs: of('first', 'cpuMs') },
        right: { ms: of('right', 'ms'), cpuMs: of('right', 'cpuMs') },
        wrongArgon: { ms: of('wrongArgon', 'ms'), cpuMs: of('wrongArgon', 'cpuMs') },
      };
    });
    return { rates, summary };
  } finally {
    await drop();
  }
}

const fixed = (n: number, digits = 0) =>
  n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function tables(kind: StoreKind, all: Kind[], measured: Awaited<ReturnType<typeof measureStore>>): string {
  const { rates, summary } = measured;
  const lines = [
    `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    '',
    '| import (`usher users import`) | lines | lines/s |',
    '|---|---|---|',
    `| without a password | ${fixed(rates.none!.lines)} | ${fixed(rates.none!.perSecond)} |`,
    `| with \`passwordHash\` (the kinds below in turn: kept as they are) | ${fixed(rates.hashes!.lines)} | ${fixed(rates.hashes!.perSecond)} |`,
    `| with a plain \`password\` (hashed as argon2id) | ${fixed(rates.plain!.lines)} | ${fixed(rates.plain!.perSecond, 1)} |`,
    '',
    '| imported hash | wrong password: ms p50 / CPU ms | first sign-in (verified, re-hashed): ms p50 / CPU ms | then, argon2id: ms p50 / CPU ms | wrong password, argon2id: ms p50 / CPU ms | first sign-in ÷ argon2id sign-in (CPU) | a wrong guess ÷ one against argon2id (CPU) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const [i, k] of all.entries()) {
    const s = summary[i]!;
    const cell = (p: { ms: number; cpuMs: number }) => `${fixed(p.ms, 1)} / ${fixed(p.cpuMs, 1)}`;
    lines.push(
      `| ${k.name} | ${cell(s.wrongImported)} | ${cell(s.first)} | ${cell(s.right)} | ${cell(s.wrongArgon)} | ${fixed(s.first.cpuMs / s.right.cpuMs, 2)} | ${fixed(s.wrongImported.cpuMs / s.wrongArgon.cpuMs, 2)} |`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

const START = '<!-- bench:imports:start -->';
const END = '<!-- bench:imports:end -->';
const HEADING = '## Round 15 (issue 31: users moved in with their password hashes)';
const INTRO = `\`npm run bench:imports\` (bench/imports.ts, a step of \`npm run bench\`), production settings
(argon2id m=19456 KiB, t=2, p=1; \`HASH_CONCURRENCY\` = the cores). **Import rate:**
\`usher users import FILE\` as a CLI process, timed from spawn to exit, with lines without a
password, lines with a \`passwordHash\` (the eight kinds below in turn, kept as they are) and lines
with a plain \`password\` (each hashed by Usher). **Sign-ins:** Usher built in the bench's process on
the imported database, \`POST /api/signin\` one request at a time; each user signs in with a wrong
password (the imported hash verified: what one guess costs), with the right one (verified, then
re-hashed as argon2id: the first sign-in), right again (Usher's argon2id: the baseline) and wrong
again. Latency p50 and the process's CPU per sign-in (event loop and hashing threads;
PostgreSQL's own CPU is not in it), each round with new users and the kinds in a new order, medians
over the rounds. Each kind is at the parameters its systems use by default.`;

/** Replaces the generated part of this round (appending the section at the end the first time). */
function writeDocs(generated: string): void {
  const path = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
  let text = readFileSync(path, 'utf8');
  const block = `${START}\n${generated}\n${END}`;
  if (text.includes(START) && text.includes(END)) {
    text = text.slice(0, text.indexOf(START)) + block + text.slice(text.indexOf(END) + END.length);
  } else {
    text = `${text.replace(/\n*$/, '\n')}\n${HEADING}\n\n${INTRO}\n\n${block}\n`;
  }
  writeFileSync(path, text);
}

const all = kinds();
const dir = mkdtempSync(join(tmpdir(), 'usher-bench-imports-'));
const started = new Date();
try {
  const parts: string[] = [];
  for (const kind of STORES) parts.push(tables(kind, all, await measureStore(kind, all, dir)));
  const generated = [
    `<!-- npm run bench:imports${QUICK ? ' (BENCH_QUICK)' : ''} on ${started.toISOString()}: ${fixed(LINES)} lines without a password and with hashes, ${fixed(PLAIN)} with plain passwords; ${USERS} users per kind and round, ${ROUNDS} rounds, medians; ${availableParallelism()} cores -->`,
    '',
    ...parts,
  ].join('\n');
  console.log(generated);
  if (WRITE) writeDocs(generated);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
