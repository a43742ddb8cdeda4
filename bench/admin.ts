// `npm run bench:admin`: the admin search at a million users (issue 29). For each store: generate
// 1,000,000 realistic users (varied names, email shapes and domains) as a JSON-lines file, import
// them with the CLI (`usher users import FILE`, timed: rows/s), make an admin with the CLI
// (`users add`, `users set-role`), start Usher as its own process with production settings, and
// measure GET /api/admin/users?q=… (email or name contains q, a page of 20 and X-Total-Count) one
// request at a time over a set of substring queries, with the admin's Bearer token: p50 and p95 per
// kind of query, and Usher's CPU per request (from /proc; PostgreSQL's own CPU is not in it).
// Writes the results into docs/benchmarks.md's "Round 12" section.
//
// BENCH_ADMIN_USERS (default 1000000), BENCH_ADMIN_ROUNDS (passes over the queries, default 10),
// BENCH_ADMIN_STORES (default "sqlite,postgres"), BENCH_ADMIN_WRITE=0 (print, leave the docs alone).
// PostgreSQL: TEST_DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

process.env.TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/postgres';
const { freshDatabaseUrl } = await import('../test/helpers/databases.ts');
const { freePort, SERVER_ENTRY } = await import('../test/helpers/process.ts');
type StoreKind = 'sqlite' | 'postgres';

const USERS = Number(process.env.BENCH_ADMIN_USERS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ADMIN_ROUNDS ?? 10);
const STORES = (process.env.BENCH_ADMIN_STORES ?? 'sqlite,postgres').split(',') as StoreKind[];
const WRITE = process.env.BENCH_ADMIN_WRITE !== '0';
const CLI = fileURLToPath(new URL('../bin/usher.mjs', import.meta.url));
const ADMIN = { email: 'bench-admin@usher.test', name: 'Bench Admin', password: 'bench-admin-password-29' };

// ---- Users: deterministic, varied (first and last names of many languages, some accented; a dozen
// email shapes; free-mail providers weighted by popularity and 3,000 organisations' domains).

function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST =
  `James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara Richard Susan
Joseph Jessica Thomas Sarah Charles Karen Christopher Nancy Daniel Lisa Matthew Betty Anthony Margaret Mark Sandra
Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Dorothy Kevin Carol Brian Amanda
George Melissa Edward Deborah Ronald Stephanie Timothy Rebecca Jason Sharon Jeffrey Laura Ryan Cynthia Jacob
Kathleen Gary Amy Nicholas Shirley Eric Angela Jonathan Helen Stephen Anna Larry Brenda Justin Pamela Scott Nicole
Brandon Emma Benjamin Samantha Samuel Katherine Gregory Christine Frank Debra Alexander Rachel Raymond Catherine
Patrick Carolyn Jack Janet Dennis Ruth Jerry Maria Tyler Heather Aaron Diane Jose Virginia Adam Julie Henry Joyce
Nathan Victoria Douglas Olivia Zachary Kelly Peter Christina Kyle Lauren Walter Joan Ethan Evelyn Jeremy Judith
Harold Megan Keith Cheryl Christian Andrea Roger Hannah Noah Martha Gerald Jacqueline Carl Frances Terry Gloria
Sean Ann Austin Teresa Arthur Kathryn Lawrence Sara Jesse Janice Dylan Jean Bryan Alice Joe Madison Jordan Doris
Billy Abigail Bruce Julia Albert Judy Willie Grace Gabriel Denise Logan Amber Alan Marilyn Juan Beverly Wayne
Danielle Roy Theresa Ralph Sophia Randy Marie Eugene Diana Vincent Brittany Russell Natalie Elijah Isabella Louis
Charlotte Bobby Rose Philip Alexis Johnny Kayla Lukas Lena Felix Mia Jonas Leonie Finn Hanna Paul Lea Maximilian
Clara Luca Johanna Léa Chloé Hugo Manon Louis Camille Gabriel Inès Raphaël Jade Arthur Zoé Matteo Giulia Lorenzo
Sofia Alessandro Aurora Francesco Ginevra Mateo Lucía Martín Valentina Santiago Camila Sebastián Ximena Diego
Renata Hiroshi Yuki Haruto Sakura Ren Aoi Wei Mei Jun Ling Min-jun Seo-yeon Ji-woo Aarav Ananya Vivaan Diya Arjun
Saanvi Priya Rahul Olga Ivan Dmitri Anastasia Sergei Natalia Søren Ingrid Björn Astrid Åsa Mikael Zoë Renée
Jürgen Dörte Kateřina Łukasz Agnieszka Małgorzata Oğuz Ayşe Mehmet Fatima Omar Layla Youssef Amina Kwame Ama Chidi
Ngozi Thabo Zanele Jane Anne Annabel Dana Jan Jana Ann-Kathrin`.split(/\s+/);

const LAST =
  `Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson
Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis Robinson
Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell
Mitchell Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales
Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward Richardson
Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Long
Ross Foster Jimenez Powell Jenkins Perry Russell Sullivan Bell Coleman Butler Henderson Barnes Gonzales Fisher
Vasquez Simmons Romero Jordan Patterson Alexander Hamilton Graham Reynolds Griffin Wallace Moreno West Cole Hayes
Bryant Herrera Gibson Ellis Tran Medina Aguilar Stevens Murray Ford Castro Marshall Owens Harrison Fernandez
McDonald Woods Washington Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford Olson Simpson
Porter Hunter Gordon Mendez Silva Shaw Snyder Mason Dixon Muñoz Hunt Hicks Holmes Palmer Wagner Black Robertson
Boyd Rose Stone Salazar Fox Warren Mills Meyer Rice Schmidt Garza Daniels Ferguson Nichols Müller Schneider
Fischer Weber Meyer Wagner Becker Schulz Hoffmann Schäfer Koch Bauer Richter Klein Wolf Schröder Neumann Schwarz
Zimmermann Braun Krüger Hofmann Hartmann Lange Schmitt Werner Krause Lehmann Köhler Dubois Durand Lefebvre Leroy
Moreau Simon Laurent Michel Bernard Petit Rousseau Fournier Girard Bonnet Dupont Lambert Fontaine Rossi Russo
Ferrari Esposito Bianchi Romano Colombo Ricci Marino Greco Bruno Gallo Conti Costa Giordano Mancini Rizzo
Lombardi García Fernández González Rodríguez López Martínez Sánchez Pérez Gómez Martín Jiménez Ruiz Hernández
Díaz Moreno Álvarez Romero Navarro Torres Domínguez Gil Vázquez Serrano Blanco Suárez Sato Suzuki Takahashi
Tanaka Watanabe Ito Yamamoto Nakamura Kobayashi Kato Wang Li Zhang Liu Yang Huang Zhao Wu Zhou Xu Sun Ma Zhu Park
Choi Jung Kang Cho Yoon Jang Lim Sharma Verma Gupta Singh Kumar Reddy Iyer Nair Mehta Shah Ivanov Smirnov
Kuznetsov Popov Volkov Sokolov Lebedev Kozlov Novikov Morozov Andersen Nielsen Hansen Pedersen Larsen Johansson
Karlsson Nilsson Eriksson Larsson Olsen Berg Haugen Nowak Kowalski Wiśniewski Wójcik Kowalczyk Kamiński Novák
Svoboda Dvořák Yılmaz Kaya Demir Şahin Çelik Okafor Mensah Nkosi Dlamini Mwangi Otieno Haddad Khalil Nasser
Mansour O'Brien O'Connor McCarthy Doyle Byrne Ryan Walsh Kavanagh Van der Berg De Vries Jansen De Jong Bakker
Visser Smit Meijer De Boer Mulder Doe Dawson Dalton Anand Annan Hannah Kowal Janssens Peeters Maes`.split(
    /\s+/,
  );

const FREE_MAIL: [string, number][] = [
  ['gmail.com', 30],
  ['yahoo.com', 8],
  ['hotmail.com', 7],
  ['outlook.com', 7],
  ['icloud.com', 5],
  ['aol.com', 2],
  ['proton.me', 2],
  ['protonmail.com', 1],
  ['gmx.de', 2],
  ['web.de', 2],
  ['t-online.de', 1],
  ['orange.fr', 1],
  ['free.fr', 1],
  ['laposte.net', 1],
  ['libero.it', 1],
  ['yahoo.co.uk', 1],
  ['btinternet.com', 1],
  ['yandex.ru', 1],
  ['mail.ru', 1],
  ['qq.com', 1],
  ['163.com', 1],
  ['naver.com', 1],
  ['hey.com', 0.5],
  ['fastmail.com', 0.5],
  ['example.com', 0.5],
  ['live.com', 1],
  ['msn.com', 0.5],
  ['me.com', 1],
  ['googlemail.com', 0.5],
];

const WORDS =
  `acme north wind contoso globex initech umbrella stark wayne hooli pied piper vandelay dunder mifflin
soylent tyrell cyberdyne aperture black mesa oscorp massive dynamic blue sun vault tech prestige world wide lumen
arc nova bright path river stone oak pine cedar harbor summit peak alpine delta sigma omega atlas orbit quantum
pixel data cloud byte logic vertex nimbus zenith apex nexus fusion vector lambda kappa`.split(/\s+/);
const TLDS = [
  'com',
  'com',
  'com',
  'io',
  'net',
  'org',
  'de',
  'fr',
  'co.uk',
  'nl',
  'ch',
  'app',
  'dev',
  'eu',
  'it',
  'es',
];

/** The part of a name an email address would use: no accents, no spaces or apostrophes. */
function mailbox(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ø/g, 'o')
    .replace(/Ø/g, 'O')
    .replace(/ł/g, 'l')
    .replace(/ı/g, 'i')
    .replace(/ß/g, 'ss')
    .replace(/[^A-Za-z0-9-]/g, '')
    .toLowerCase();
}

function* generateUsers(count: number, seed = 29): Generator<{ email: string; name: string }> {
  const r = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)]!;
  const organisations: string[] = [];
  for (let i = 0; i < 3000; i++) {
    const word =
      pick(WORDS) + (r() < 0.5 ? pick(WORDS) : r() < 0.5 ? `-${pick(WORDS)}` : String(Math.floor(r() * 100)));
    const sub = r() < 0.1 ? `${pick(['mail', 'corp', 'eu', 'us', 'staff'])}.` : '';
    organisations.push(`${sub}${word}.${pick(TLDS)}`);
  }
  const freeTotal = FREE_MAIL.reduce((sum, [, weight]) => sum + weight, 0);
  const domain = () => {
    if (r() < 0.35) return pick(organisations);
    let x = r() * freeTotal;
    for (const [name, weight] of FREE_MAIL) {
      x -= weight;
      if (x < 0) return name;
    }
    return 'gmail.com';
  };
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const middle = r() < 0.12 ? ` ${String.fromCharCode(65 + Math.floor(r() * 26))}.` : '';
    const name =
      r() < 0.03 ? first : r() < 0.02 ? `${first} ${last}`.toUpperCase() : `${first}${middle} ${last}`;
    const f = mailbox(first);
    const l = mailbox(last);
    const n = () => String(Math.floor(r() * (r() < 0.5 ? 100 : 10000)));
    const year = () => String(1950 + Math.floor(r() * 60));
    const shapes = [
      () => `${f}.${l}`,
      () => `${f}${l}`,
      () => `${f[0]}${l}`,
      () => `${f[0]}.${l}`,
      () => `${f}.${l}${n()}`,
      () => `${f}_${l}`,
      () => `${l}.${f}`,
      () => `${f}${n()}`,
      () => `${f}${l[0]}${year()}`,
      () => `${l}${f[0]}`,
      () => `${f}.${l[0]}`,
      () => `${f}-${l}`,
    ];
    const local = pick(shapes)();
    const at = domain();
    let email = `${local}@${at}`;
    for (let k = 2; seen.has(email); k++) email = `${local}${k}@${at}`;
    seen.add(email);
    // Some people type their address with a capital.
    if (r() < 0.05) email = email[0]!.toUpperCase() + email.slice(1);
    yield { email, name };
  }
}

/** The users file: one {"email","name"} object a line, no password (accounts without one). */
async function writeUsersFile(path: string, count: number): Promise<string> {
  const out = createWriteStream(path);
  let chunk = '';
  let middle = '';
  let i = 0;
  for (const user of generateUsers(count)) {
    if (++i === Math.ceil(count / 2)) middle = user.email;
    chunk += `${JSON.stringify(user)}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
      chunk = '';
    }
  }
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(chunk, () => resolve());
  });
  return middle;
}

// ---- Queries: what support staff type. Kinds are reported apart: "typical" is the target's set.

type Kind = 'typical' | 'common' | 'short';

function queries(someEmail: string): { q: string; kind: Kind; what: string }[] {
  const typical: [string, string][] = [
    ['smith', 'a last name'],
    ['jane.d', 'the start of an address'],
    ['anna', 'a first name, also inside others (Hannah, Joanna)'],
    ['8431@', 'digits before the @'],
    ['quantumpixel', "an organisation's domain"],
    ['dorothy_b', 'with `_`, taken literally'],
    ['Müller', 'accented, another case'],
    ['SÁNCHEZ', 'accented, upper case'],
    ['berg', 'part of several names'],
    ['kowalczyk', 'a rarer last name'],
    ['tanaka@', 'a name and the @'],
    ['gmx.de', 'a provider'],
    ['yahoo.co.uk', 'a provider'],
    ['gmail.de', 'common trigrams, no match'],
    ['Maria Garcia', 'a whole name'],
    [someEmail, 'a whole address'],
    ['zzqx', 'no match'],
    ['no-such-user', 'no match'],
  ];
  const common: [string, string][] = [
    ['example', 'every example.com address'],
    ['gmail', 'about a quarter of the users'],
    ['.com', 'about 60% of the users'],
    ['mail', 'about a third'],
  ];
  const short: [string, string][] = [
    ['a', 'one letter'],
    ['jo', 'two letters'],
    ['é', 'one accented letter'],
    ['7', 'one digit'],
  ];
  return [
    ...typical.map(([q, what]) => ({ q, kind: 'typical' as const, what })),
    ...common.map(([q, what]) => ({ q, kind: 'common' as const, what })),
    ...short.map(([q, what]) => ({ q, kind: 'short' as const, what })),
  ];
}

// ---- Measuring

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

function cli(env: NodeJS.ProcessEnv, args: string[], input?: string) {
  const run = spawnSync(process.execPath, [CLI, ...args], { env, input, encoding: 'utf8' });
  if (run.status !== 0)
    throw new Error(`usher ${args.join(' ')} exited ${run.status}: ${run.stderr || run.stdout}`);
  return run.stdout;
}

/** `usher users import FILE`, timed; its progress lines go to our stderr. */
async function importFile(
  env: NodeJS.ProcessEnv,
  file: string,
): Promise<{ seconds: number; imported: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'users', 'import', file], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
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

async function databaseBytes(kind: StoreKind, url: string): Promise<number> {
  if (kind === 'sqlite') {
    const path = url.slice('sqlite:'.length);
    const size = (p: string) => {
      try {
        return statSync(p).size;
      } catch {
        return 0;
      }
    };
    return size(path) + size(`${path}-wal`);
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('select pg_database_size(current_database()) as n');
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

async function analyze(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('vacuum analyze users');
  } finally {
    await client.end();
  }
}

interface Sample {
  q: string;
  kind: Kind;
  what: string;
  ms: number[];
  total: number;
}

interface StoreResult {
  kind: StoreKind;
  imported: number;
  importSeconds: number;
  bytes: number;
  samples: Sample[];
  cpuUsByKind: Record<Kind, number>;
}

async function benchStore(kind: StoreKind, file: string, someEmail: string): Promise<StoreResult> {
  const fresh = await freshDatabaseUrl(kind);
  const outbox = mkdtempSync(join(tmpdir(), 'usher-bench-outbox-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: fresh.url,
    PORT: String(port),
    PUBLIC_URL: base,
    LOG_LEVEL: 'warn',
    MAIL_OUTBOX: outbox,
  };
  try {
    console.error(`${kind}: importing ${USERS} users…`);
    const { seconds, imported } = await importFile(env, file);
    console.error(
      `${kind}: imported ${imported} in ${seconds.toFixed(1)} s (${(imported / seconds).toFixed(0)} rows/s)`,
    );
    // What autovacuum does soon after a bulk load, done now so that it does not run during the
    // measurement and the planner knows the table it plans for.
    if (kind === 'postgres') await analyze(fresh.url);
    cli(env, ['users', 'add', '--email', ADMIN.email, '--name', ADMIN.name], `${ADMIN.password}\n`);
    cli(env, ['users', 'set-role', '--email', ADMIN.email, 'admin']);
    const bytes = await databaseBytes(kind, fresh.url);

    const child = spawn(process.execPath, [SERVER_ENTRY], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    try {
      for (let i = 0; ; i++) {
        try {
          if ((await fetch(`${base}/readyz`)).ok) break;
        } catch {
          // not listening yet
        }
        if (i > 3000) throw new Error('Usher did not become ready');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const signin = await fetch(`${base}/api/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: ADMIN.email, password: ADMIN.password }),
      });
      if (!signin.ok) throw new Error(`admin sign-in answered ${signin.status}: ${await signin.text()}`);
      const { token } = (await signin.json()) as { token: string };
      const headers = { authorization: `Bearer ${token}` };
      const search = async (q: string) => {
        const started = performance.now();
        const response = await fetch(`${base}/api/admin/users?${new URLSearchParams({ q, size: '20' })}`, {
          headers,
        });
        const body = await response.text();
        const ms = performance.now() - started;
        if (response.status !== 200) throw new Error(`q=${q}: ${response.status} ${body}`);
        return { ms, total: Number(response.headers.get('x-total-count')) };
      };

      const samples: Sample[] = queries(someEmail).map((query) => ({ ...query, ms: [], total: 0 }));
      // Warm-up: one pass, so each query's pages are in the caches as an admin's second look finds them.
      for (const sample of samples) sample.total = (await search(sample.q)).total;
      const cpu: Record<Kind, number> = { typical: 0, common: 0, short: 0 };
      const random_ = random(12);
      for (let round = 0; round < ROUNDS; round++) {
        // A new order each round, so no query always follows the same one.
        const order = samples.map((sample) => ({ sample, key: random_() })).sort((a, b) => a.key - b.key);
        for (const { sample } of order) {
          const before = cpuSeconds(child.pid!);
          sample.ms.push((await search(sample.q)).ms);
          cpu[sample.kind] += cpuSeconds(child.pid!) - before;
        }
      }
      const cpuUsByKind = Object.fromEntries(
        (Object.keys(cpu) as Kind[]).map((k) => {
          const requests = samples.filter((s) => s.kind === k).length * ROUNDS;
          return [k, (cpu[k] * 1e6) / Math.max(1, requests)];
        }),
      ) as Record<Kind, number>;
      return { kind, imported, importSeconds: seconds, bytes, samples, cpuUsByKind };
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  } finally {
    rmSync(outbox, { recursive: true, force: true });
    await fresh.drop();
  }
}

// ---- Report

const STORE_NAMES: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };
const KIND_NAMES: Record<Kind, string> = {
  typical: 'typical (3+ characters, the target)',
  common: 'very common (over 3,000 matches)',
  short: '1–2 characters (no trigram)',
};
const ms = (value: number) => (value < 10 ? value.toFixed(1) : value.toFixed(0));
const cell = (text: string) => text.replaceAll('|', '\\|');

function report(results: StoreResult[]): string {
  const lines = [
    `<!-- npm run bench:admin on ${new Date().toISOString()}: ${USERS.toLocaleString('en')} users, ${ROUNDS} passes over the queries, one request at a time -->`,
    '',
    '| store | import (`usher users import`, no passwords) | database after import |',
    '|---|---|---|',
    ...results.map(
      (r) =>
        `| ${STORE_NAMES[r.kind]} | ${r.imported.toLocaleString('en')} rows in ${r.importSeconds.toFixed(0)} s: **${(r.imported / r.importSeconds).toFixed(0)} rows/s** | ${(r.bytes / 1048576).toFixed(0)} MiB |`,
    ),
    '',
    '`GET /api/admin/users?q=…&size=20`, milliseconds at the client (the page, X-Total-Count, the audit row):',
    '',
    `| queries | ${results.map((r) => `${STORE_NAMES[r.kind]} p50 | ${STORE_NAMES[r.kind]} p95 | ${STORE_NAMES[r.kind]} Usher CPU µs/req`).join(' | ')} |`,
    `|---|${results.map(() => '---|---|---|').join('')}`,
  ];
  for (const kind of ['typical', 'common', 'short'] as Kind[]) {
    const cells = results.map((r) => {
      const all = r.samples.filter((s) => s.kind === kind).flatMap((s) => s.ms);
      return `${ms(percentile(all, 50))} | **${ms(percentile(all, 95))}** | ${r.cpuUsByKind[kind].toFixed(0)}`;
    });
    lines.push(`| ${KIND_NAMES[kind]} | ${cells.join(' | ')} |`);
  }
  lines.push(
    '',
    'Each query:',
    '',
    `| q | what | matches | ${results.map((r) => `${STORE_NAMES[r.kind]} p50 / p95 ms`).join(' | ')} |`,
    `|---|---|---|${results.map(() => '---|').join('')}`,
  );
  const first = results[0];
  for (const [i, sample] of (first?.samples ?? []).entries()) {
    const q = sample.kind === 'typical' && sample.what === 'a whole address' ? 'a whole address' : sample.q;
    const totals = new Set(results.map((r) => r.samples[i]!.total));
    lines.push(
      `| \`${cell(q)}\` | ${sample.what} | ${[...totals].map((n) => n.toLocaleString('en')).join(' / ')} | ${results
        .map((r) => `${ms(percentile(r.samples[i]!.ms, 50))} / ${ms(percentile(r.samples[i]!.ms, 95))}`)
        .join(' | ')} |`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

const START = '<!-- bench:admin:start -->';
const END = '<!-- bench:admin:end -->';
const HEADING = '## Round 12 (issue 29: admin search)';

/** Replaces the generated part of Round 12 (creating the section above Round 11 the first time). */
function writeDocs(generated: string): void {
  const path = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
  let text = readFileSync(path, 'utf8');
  const block = `${START}\n${generated}\n${END}`;
  if (text.includes(START) && text.includes(END)) {
    text = text.slice(0, text.indexOf(START)) + block + text.slice(text.indexOf(END) + END.length);
  } else {
    const section = `${HEADING}\n\n\`npm run bench:admin\` (bench/admin.ts).\n\n${block}\n\n`;
    const at = text.search(/^## Round 11\b/m);
    text = at < 0 ? `${text}\n${section}` : text.slice(0, at) + section + text.slice(at);
  }
  writeFileSync(path, text);
}

const dir = mkdtempSync(join(tmpdir(), 'usher-bench-admin-'));
try {
  const file = join(dir, 'users.jsonl');
  const started = performance.now();
  const someEmail = await writeUsersFile(file, USERS);
  console.error(
    `generated ${USERS} users in ${((performance.now() - started) / 1000).toFixed(1)} s: ${file}`,
  );
  const results: StoreResult[] = [];
  for (const kind of STORES) results.push(await benchStore(kind, file, someEmail));
  const generated = report(results);
  console.log(generated);
  if (WRITE) writeDocs(generated);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
