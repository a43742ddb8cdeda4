// `npm run bench:oauth`: what a provider sign-in costs on Usher's side. A real OpenID Connect
// provider (panva's oidc-provider, test/helpers/oidc-provider.ts) runs in this process; Usher runs
// as its own process with production settings, and only its CPU is counted (from /proc). Each
// sign-in is three steps, each measured over a batch: the start (state, nonce, PKCE, a row), the
// person at the provider (Usher does nothing), and the callback (the state taken, the code
// exchanged and the ID token checked, the account found or made, the session). A password sign-in
// on the same server is the yardstick: its CPU is almost all argon2id.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { CookieJar, fetchWithJar, startOidcProvider } from '../test/helpers/oidc-provider.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';

const FLOWS = Number(process.env.BENCH_OAUTH_FLOWS ?? (process.env.BENCH_QUICK === '1' ? 60 : 200));
const CONCURRENCY = 4;

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Runs `work` for 0..n-1, CONCURRENCY at a time; answers Usher's CPU per item (µs) and the wall times. */
async function batch(pid: number, n: number, work: (i: number) => Promise<void>) {
  const before = cpuSeconds(pid);
  const walls: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        const t0 = performance.now();
        await work(i);
        walls.push(performance.now() - t0);
      }
    }),
  );
  walls.sort((a, b) => a - b);
  return {
    cpuUs: ((cpuSeconds(pid) - before) * 1e6) / n,
    p50: walls[Math.floor(walls.length / 2)]!,
    p99: walls[Math.min(walls.length - 1, Math.floor(walls.length * 0.99))]!,
  };
}

async function benchStore(kind: StoreKind): Promise<string> {
  const provider = await startOidcProvider();
  const fresh = await freshDatabaseUrl(kind);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  await provider.addClient({
    client_id: 'usher',
    client_secret: 'bench-secret',
    redirect_uris: [`${base}/api/oauth/bench/callback`],
  });
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: fresh.url,
      PORT: String(port),
      PUBLIC_URL: base,
      LOG_LEVEL: 'warn',
      MAIL_OUTBOX: mkdtempSync(join(tmpdir(), 'usher-bench-outbox-')),
      OAUTH_PROVIDERS: 'bench',
      OAUTH_BENCH_CLIENT_ID: 'usher',
      OAUTH_BENCH_CLIENT_SECRET: 'bench-secret',
      OAUTH_BENCH_ISSUER: provider.issuer,
      OAUTH_STARTS_MAX_PER_ADDRESS: '1000000',
      // The load generator is one address standing for many people.
      SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
      SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
      REGISTRATION_MAX_PER_ADDRESS: '1000000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let i = 0; i < 400; i++) {
      try {
        if ((await fetch(`${base}/readyz`)).ok) break;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const pid = child.pid!;
    for (let i = 0; i < FLOWS; i++)
      provider.setAccount(`u${i}`, { email: `u${i}@example.com`, email_verified: true, name: `User ${i}` });

    /** One round of FLOWS sign-ins: every start, every provider visit, then every callback. */
    const round = async () => {
      const jars = Array.from({ length: FLOWS }, () => new CookieJar());
      const toProvider: string[] = [];
      const back: string[] = [];
      const start = await batch(pid, FLOWS, async (i) => {
        const res = await fetchWithJar(jars[i]!, `${base}/api/oauth/bench/start?redirectTo=/account`);
        if (res.status !== 302) throw new Error(`start answered ${res.status}`);
        toProvider[i] = res.headers.get('location')!;
      });
      const away = await batch(pid, FLOWS, async (i) => {
        back[i] = (await provider.authorize(toProvider[i]!, { login: `u${i}` })).location;
      });
      const callback = await batch(pid, FLOWS, async (i) => {
        const res = await fetchWithJar(jars[i]!, back[i]!);
        if (res.status !== 303 || !jars[i]!.get(base, 'usher_session'))
          throw new Error(`callback answered ${res.status} ${res.headers.get('location')}`);
      });
      return { start, away, callback };
    };
    const created = await round(); // each identity new: an account is made
    const returning = await round(); // each identity linked: its account signs in

    // The yardstick: password sign-ins on the same server, production argon2id.
    await fetch(`${base}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'pw@example.com', name: 'Password', password: 'bench-password-1' }),
    });
    const password = await batch(pid, 40, async () => {
      const res = await fetch(`${base}/api/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'pw@example.com', password: 'bench-password-1' }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`password sign-in answered ${res.status}`);
    });

    const row = (what: string, r: { cpuUs: number; p50: number; p99: number }) =>
      `| ${what} | ${r.cpuUs.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`;
    return [
      `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      '',
      '| step | Usher CPU µs each | wall p50 ms | wall p99 ms |',
      '|---|---|---|---|',
      row('start (new identity)', created.start),
      row('at the provider (Usher idle)', created.away),
      row('callback, new identity: account made', created.callback),
      row('start (linked identity)', returning.start),
      row('callback, linked identity', returning.callback),
      row('password sign-in (argon2id m=19456 t=2)', password),
      '',
    ].join('\n');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await provider.close();
    await fresh.drop();
  }
}

const report = [
  `<!-- npm run bench:oauth on ${new Date().toISOString()}: ${FLOWS} sign-ins per round, ${CONCURRENCY} at a time -->`,
];
for (const kind of ['sqlite', ...(postgresAvailable ? ['postgres' as const] : [])] as const) {
  report.push(await benchStore(kind));
}
console.log(report.join('\n'));
