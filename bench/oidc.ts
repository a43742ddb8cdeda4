// `npm run bench:oidc`: what Usher's tokens for other services cost, against oidc-provider alone
// (bench/oidc-baseline.ts: the installed version, the same features, its in-memory adapter, the
// same client kind and keys). Each server is a process of its own and only its CPU is counted,
// from /proc, per token it issued (bench/oidc-common.ts): client_credentials with a resource (a
// JWT access token), the authorization-code exchange and refresh (both store), alternated in
// rounds after a warm-up, medians. BENCH_OIDC_BEFORE=<a checkout of an older commit, with its
// node_modules> measures that Usher too, in the same rounds: before and after in one run.
// Then, on Usher alone: POST /api/session/token and GET /api/session (its yardstick), and, in this
// process, the signing algorithms side by side (jose, one core): why access tokens are ES256
// while ID tokens stay RS256, the algorithm every OpenID Connect client must accept.
// BENCH_OIDC_TOKENS (default 1500) tokens per server and round, BENCH_ROUNDS (default 5) rounds;
// BENCH_QUICK=1: 500 tokens, 3 rounds.
import { generateKeyPairSync } from 'node:crypto';
import autocannon, { type Result } from 'autocannon';
import { SignJWT } from 'jose';
import { postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import {
  API,
  cpuSeconds,
  measureAlternated,
  memoryMiB,
  type OidcServer,
  type PairResult,
  SCENARIOS,
  type Scenario,
  startBaseline,
  startUsher,
} from './oidc-common.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const TOKENS = Number(process.env.BENCH_OIDC_TOKENS ?? (QUICK ? 500 : 1500));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 5));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 3 : 5));
const BEFORE = process.env.BENCH_OIDC_BEFORE;
const CONNECTIONS = 8;

/** Issue 48's targets: Usher's CPU per token against the library alone's. */
export const TARGETS: Record<Scenario, number> = {
  client_credentials: 0.85,
  authorization_code: 0.8,
  refresh_token: 0.8,
};

/** Usher's own token routes, 8 connections for SECONDS: req/s and CPU µs per request. */
async function usherRoutes(server: OidcServer): Promise<string[]> {
  const json = { 'content-type': 'application/json', origin: server.base };
  const session = await fetch(`${server.base}/api/sessions`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ email: 'bench@example.com', password: 'bench-password-1' }),
  });
  const { token } = (await session.json()) as { token: string };
  const bearer = { authorization: `Bearer ${token}` };
  const load = async (request: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body?: string;
  }) => {
    await autocannon({ url: server.base, connections: CONNECTIONS, duration: 1, requests: [request] });
    const before = cpuSeconds(server.pid);
    const result: Result = await autocannon({
      url: server.base,
      connections: CONNECTIONS,
      duration: SECONDS,
      requests: [request],
    });
    const used = cpuSeconds(server.pid) - before;
    return `${result.requests.average.toFixed(0)} | ${((used * 1e6) / Math.max(1, result['2xx'])).toFixed(0)} | ${result.errors + result.non2xx + result.timeouts}`;
  };
  return [
    '| load | req/s | Usher CPU µs each | errors |',
    '|---|---|---|---|',
    `| POST /api/session/token (JWT) | ${await load({
      method: 'POST',
      path: '/api/session/token',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ audience: API }),
    })} |`,
    `| GET /api/session (yardstick) | ${await load({ method: 'GET', path: '/api/session', headers: bearer })} |`,
  ];
}

function table(results: PairResult[], servers: OidcServer[]): string[] {
  const usher = servers.findIndex((s) => s.label === 'Usher');
  const lines = [
    `| token | ${servers.map((s) => `${s.label} µs/token (tokens/s)`).join(' | ')} | ${servers
      .slice(1)
      .map((s) => `ratio ${s.label}`)
      .join(' | ')} | target |`,
    `|---|${servers.map(() => '---|').join('')}${servers
      .slice(1)
      .map(() => '---|')
      .join('')}---|`,
  ];
  for (const result of results) {
    const target = TARGETS[result.scenario];
    const met = result.ratios[usher]! >= target;
    lines.push(
      `| ${SCENARIOS[result.scenario]} | ${result.servers
        .map(
          (s) =>
            `${s.cpuUs.toFixed(0)} (${s.tokensPerSecond.toFixed(0)})${s.errors ? ` ${s.errors} errors` : ''}`,
        )
        .join(' | ')} | ${result.ratios
        .slice(1)
        .map((r) => r.toFixed(2))
        .join(' | ')} | ≥ ${target} ${met ? 'met' : 'missed'} |`,
    );
  }
  return lines;
}

async function benchStore(kind: StoreKind): Promise<string> {
  const servers: OidcServer[] = [];
  try {
    servers.push(await startBaseline());
    servers.push(await startUsher(kind, { label: 'Usher' }));
    if (BEFORE) servers.push(await startUsher(kind, { label: 'Usher before', root: BEFORE }));
    const idle = servers.map((server) => memoryMiB(server.pid).rss);
    const results: PairResult[] = [];
    for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
      results.push(
        await measureAlternated(servers, scenario, {
          tokens: TOKENS,
          rounds: ROUNDS,
          warmup: Math.min(TOKENS, 500),
        }),
      );
      console.error(`${kind}: ${scenario} done`);
    }
    const usher = servers.find((s) => s.label === 'Usher')!;
    return [
      `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      '',
      ...table(results, servers),
      '',
      `| memory | ${servers.map((s) => s.label).join(' | ')} |`,
      `|---|${servers.map(() => '---|').join('')}`,
      `| RSS at start, MiB | ${idle.map((m) => m.toFixed(0)).join(' | ')} |`,
      `| peak RSS after the tokens, MiB | ${servers.map((s) => memoryMiB(s.pid).hwm.toFixed(0)).join(' | ')} |`,
      '',
      ...(await usherRoutes(usher)),
      '',
    ].join('\n');
  } finally {
    for (const server of servers) await server.close();
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

if (import.meta.main) {
  const report = [
    `<!-- npm run bench:oidc on ${new Date().toISOString()}: ${ROUNDS} alternated rounds of ${TOKENS} tokens per server, ${CONNECTIONS} connections, medians; server CPU per token from /proc${BEFORE ? `; Usher before: ${BEFORE}` : ''} -->`,
  ];
  for (const kind of ['sqlite', ...(postgresAvailable ? ['postgres' as const] : [])] as const) {
    report.push(await benchStore(kind));
  }
  report.push('### Signing one access token, by algorithm', '', await algorithms(), '');
  console.log(report.join('\n'));
}
