// `npm run bench:oidc`: what Usher's tokens for other services cost. Usher runs as its own process
// with production settings; only its CPU is counted (from /proc). Three loads, each for a few
// seconds with autocannon:
// - the token endpoint, client_credentials with resource= (client authentication, the grant, a
//   JWT access token signed with ES256, the token's row);
// - POST /api/session/token (a session looked up, a JWT signed with ES256);
// - GET /api/session, the yardstick: the same session lookup and nothing else.
// And, in this process, the signing algorithms side by side (jose, one core): why access tokens are
// ES256 while ID tokens stay RS256, the algorithm every OpenID Connect client must accept.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon, { type Result } from 'autocannon';
import { SignJWT } from 'jose';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { freePort, SERVER_ENTRY } from '../test/helpers/process.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 8));
const CONNECTIONS = 8;
const API = 'https://api.example.com';
const CLI = new URL('../bin/usher.mjs', import.meta.url).pathname;

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Measured {
  rps: number;
  cpuUs: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(
  pid: number,
  base: string,
  request: { method: string; path: string; headers: Record<string, string>; body?: string },
): Promise<Measured> {
  const before = cpuSeconds(pid);
  const result: Result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [request],
  });
  const used = cpuSeconds(pid) - before;
  return {
    rps: result.requests.average,
    cpuUs: (used * 1e6) / Math.max(1, result['2xx']),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

async function benchStore(kind: StoreKind): Promise<string> {
  const fresh = await freshDatabaseUrl(kind);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: fresh.url,
    PORT: String(port),
    PUBLIC_URL: base,
    LOG_LEVEL: 'warn',
    MAIL_OUTBOX: mkdtempSync(join(tmpdir(), 'usher-bench-outbox-')),
    OIDC_RESOURCES: API,
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
    SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
    REGISTRATION_MAX_PER_ADDRESS: '1000000',
  };
  const added = spawnSync(
    process.execPath,
    [CLI, 'clients', 'add', '--name', 'Bench service', '--grant', 'client_credentials'],
    { env, encoding: 'utf8' },
  );
  if (added.status !== 0) throw new Error(`clients add failed: ${added.stderr}`);
  const { clientId, clientSecret } = JSON.parse(added.stdout) as { clientId: string; clientSecret: string };
  const child = spawn(process.execPath, [SERVER_ENTRY], { env, stdio: ['ignore', 'ignore', 'inherit'] });
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
    await fetch(`${base}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', name: 'Bench', password: 'bench-password-1' }),
    });
    const session = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', password: 'bench-password-1' }),
    });
    const { token } = (await session.json()) as { token: string };
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
    const tokenRequest = {
      method: 'POST',
      path: '/oidc/token',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: API,
        scope: 'openid',
      }).toString(),
    };
    // Warm-up: the provider is built on first use, and the JIT settles.
    const warm = await fetch(`${base}${tokenRequest.path}`, { ...tokenRequest });
    if (warm.status !== 200)
      throw new Error(`client_credentials answered ${warm.status}: ${await warm.text()}`);
    await measure(pid, base, tokenRequest);
    const bearer = { authorization: `Bearer ${token}` };
    const rows = {
      'POST /oidc/token (client_credentials, JWT)': await measure(pid, base, tokenRequest),
      'POST /api/session/token (JWT)': await measure(pid, base, {
        method: 'POST',
        path: '/api/session/token',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ audience: API }),
      }),
      'GET /api/session (yardstick)': await measure(pid, base, {
        method: 'GET',
        path: '/api/session',
        headers: bearer,
      }),
    };
    const lines = [
      `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      '',
      '| load | req/s | Usher CPU µs each | p50 ms | p99 ms | errors |',
      '|---|---|---|---|---|---|',
      ...Object.entries(rows).map(
        ([what, r]) =>
          `| ${what} | ${r.rps.toFixed(0)} | ${r.cpuUs.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.errors} |`,
      ),
      '',
    ];
    return lines.join('\n');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await fresh.drop();
  }
}

/** µs to sign one access-token-sized JWT with each algorithm, in this process (jose, one core). */
async function algorithms(): Promise<string> {
  const keys = {
    ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
    RS256: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
    EdDSA: generateKeyPairSync('ed25519').privateKey,
  };
  const lines = ['| algorithm | sign µs | verify: any JWT library | key in JWKS |', '|---|---|---|---|'];
  const notes: Record<string, string> = {
    ES256: 'yes (RFC 7518 "Recommended+")',
    RS256: 'yes (required of every OpenID Connect client)',
    EdDSA: 'not in every library yet',
  };
  for (const [alg, key] of Object.entries(keys)) {
    const n = alg === 'RS256' ? 300 : 2000;
    const sign = () =>
      new SignJWT({ client_id: 'bench', scope: 'openid' })
        .setProtectedHeader({ alg, typ: 'at+jwt' })
        .setIssuer('https://id.example.com/oidc')
        .setSubject('42')
        .setAudience(API)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(key);
    for (let i = 0; i < 50; i++) await sign();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await sign();
    const us = ((performance.now() - t0) * 1000) / n;
    lines.push(
      `| ${alg} | ${us.toFixed(0)} | ${notes[alg]} | ${alg === 'EdDSA' ? 'OKP' : alg === 'ES256' ? 'EC P-256' : 'RSA 2048'} |`,
    );
  }
  return lines.join('\n');
}

const report = [
  `<!-- npm run bench:oidc on ${new Date().toISOString()}: ${SECONDS} s per load, ${CONNECTIONS} connections -->`,
];
for (const kind of ['sqlite', ...(postgresAvailable ? ['postgres' as const] : [])] as const) {
  report.push(await benchStore(kind));
}
report.push('### Signing one access token, by algorithm', '', await algorithms(), '');
console.log(report.join('\n'));
