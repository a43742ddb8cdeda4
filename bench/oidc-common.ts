// The token endpoint measured against oidc-provider alone (issue 48): what `npm run bench:oidc`
// and `npm run bench:check` share. Each server is a process of its own; only its CPU is counted,
// from /proc, per token it issued. Three scenarios, each with the same client on both sides (a
// confidential first-party client that may also use client_credentials) and ES256 JWT access
// tokens for the one resource:
// - client_credentials with `resource`: client authentication, the grant, a signed JWT;
// - the authorization-code exchange: the code spent (stored), an RS256 ID token, a JWT;
// - refresh: the refresh token spent and a new one stored (rotation), an ID token, a JWT.
// Codes and the first refresh tokens are minted before a measurement and are not counted. A pair
// of servers is measured in rounds, alternating which goes first, after a warm-up; the figures are
// medians. Nothing here starts on import.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshDatabaseUrl, type StoreKind } from '../test/helpers/databases.ts';
import { freePort } from '../test/helpers/process.ts';

/** The audience of the JWT access tokens (OIDC_RESOURCES on Usher). */
export const API = 'https://api.example.com';
/** Where the client says it lives; nothing listens there (the minting stops at the redirect). */
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASELINE_ENTRY = fileURLToPath(new URL('./oidc-baseline.ts', import.meta.url));
const CLK_TCK = 100;
const PASSWORD = 'bench-password-1';
// One PKCE pair for every authorization: the bench measures tokens, not PKCE's secrecy.
const VERIFIER = randomBytes(32).toString('base64url');
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

export type Scenario = 'client_credentials' | 'authorization_code' | 'refresh_token';
export const SCENARIOS: Record<Scenario, string> = {
  client_credentials: 'client_credentials + resource (JWT)',
  authorization_code: 'authorization code exchange (ID token + JWT)',
  refresh_token: 'refresh, rotated (ID token + JWT)',
};

export interface OidcServer {
  /** What the report calls it: `oidc-provider alone`, `Usher`, `Usher before`… */
  readonly label: string;
  readonly pid: number;
  /** http://127.0.0.1:PORT */
  readonly base: string;
  /** The provider's own URLs: `${base}${path}/token`… ('' for the library alone, '/oidc' for Usher). */
  readonly path: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The browser the codes are minted with: its cookies (Usher's session, the provider's own). */
  readonly jar: Map<string, string>;
  /** Refresh tokens, one per connection, renewed by every refresh. */
  refreshTokens: string[];
  close(): Promise<void>;
}

/**
 * The CPU time of a process, in seconds: the sum over its threads of the time each spent on a CPU
 * (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds), or, where that is missing, utime + stime from
 * `/proc/<pid>/stat` (in ticks of 10 ms: a quarter of a second of work is then read to ±4%).
 */
export function cpuSeconds(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    if (ns > 0) return ns / 1e9;
  } catch {
    // no schedstat: the ticks below
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** VmRSS and VmHWM (the peak) of a process, in MiB. */
export function memoryMiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

function stopper(child: ChildProcess, after: () => Promise<void> = async () => {}) {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    await after();
  };
}

async function listening(base: string, path: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 1500; i++) {
    if (child.exitCode !== null) throw new Error(`${base}: the server exited (${child.exitCode})`);
    try {
      const response = await fetch(`${base}${path}`);
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${base} did not start`);
}

/** oidc-provider alone (bench/oidc-baseline.ts), as its own process. */
export async function startBaseline(
  label = 'oidc-provider alone',
  env: Record<string, string> = {},
): Promise<OidcServer> {
  const port = await freePort();
  const clientId = `bench-${randomBytes(12).toString('base64url')}`;
  const clientSecret = randomBytes(32).toString('base64url');
  const child = spawn(process.execPath, [BASELINE_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      PORT: String(port),
      CLIENT_ID: clientId,
      CLIENT_SECRET: clientSecret,
      RESOURCE: API,
      REDIRECT_URI,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  await listening(base, '/.well-known/openid-configuration', child);
  return {
    label,
    pid: child.pid!,
    base,
    path: '',
    clientId,
    clientSecret,
    jar: new Map(),
    refreshTokens: [],
    close: stopper(child),
  };
}

export interface UsherOptions {
  label?: string;
  /** A checkout of Usher to run (a worktree of an older commit, for before and after); this one by default. */
  root?: string;
  /** More environment: NODE_OPTIONS for a young-generation size, LOG_LEVEL… */
  env?: Record<string, string>;
}

/**
 * Usher as `npm start` runs it (production settings, the access line at info), on a fresh
 * database, with one client registered by `usher clients add` and one account signed in in
 * `jar` (the browser the codes are minted with).
 */
export async function startUsher(kind: StoreKind, options: UsherOptions = {}): Promise<OidcServer> {
  const root = options.root ?? ROOT;
  const fresh = await freshDatabaseUrl(kind);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: fresh.url,
    PORT: String(port),
    PUBLIC_URL: base,
    LOG_LEVEL: 'info',
    MAIL_OUTBOX: mkdtempSync(join(tmpdir(), 'usher-bench-outbox-')),
    OIDC_RESOURCES: API,
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    // One address stands for many clients and browsers.
    OIDC_AUTHORIZATIONS_MAX_PER_ADDRESS: '1000000',
    SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
    SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
    REGISTRATION_MAX_PER_ADDRESS: '1000000',
    ...options.env,
  };
  const added = spawnSync(
    process.execPath,
    [
      join(root, 'bin/usher.mjs'),
      'clients',
      'add',
      '--name',
      'Bench service',
      '--redirect-uri',
      REDIRECT_URI,
      '--grant',
      'client_credentials',
      '--first-party',
    ],
    { env, encoding: 'utf8' },
  );
  if (added.status !== 0) throw new Error(`clients add failed: ${added.stderr}`);
  const { clientId, clientSecret } = JSON.parse(added.stdout) as { clientId: string; clientSecret: string };
  const child = spawn(process.execPath, [join(root, 'src/server.ts')], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const close = stopper(child, fresh.drop);
  try {
    await listening(base, '/readyz', child);
    const json = { 'content-type': 'application/json', origin: base, 'sec-fetch-site': 'same-origin' };
    const user = { email: 'bench@example.com', name: 'Bench', password: PASSWORD };
    const registered = await fetch(`${base}/api/users`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify(user),
    });
    if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
    const signedIn = await fetch(`${base}/api/signin`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ email: user.email, password: PASSWORD }),
    });
    if (signedIn.status !== 200) throw new Error(`sign-in answered ${signedIn.status}`);
    const jar = new Map<string, string>();
    keep(jar, signedIn);
    return {
      label: options.label ?? 'Usher',
      pid: child.pid!,
      base,
      path: '/oidc',
      clientId,
      clientSecret,
      jar,
      refreshTokens: [],
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

function keep(jar: Map<string, string>, response: Response): void {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair!.indexOf('=');
    const value = pair!.slice(at + 1);
    if (value === '' || /max-age=0/i.test(line)) jar.delete(pair!.slice(0, at));
    else jar.set(pair!.slice(0, at), value);
  }
}

/**
 * A code, as a browser gets one: the authorization request with the browser's cookies, its
 * redirects followed until the one to the app. Usher's consent page (prompt=consent) is answered
 * as its script does; the library alone finishes its interactions at once.
 */
async function authorize(server: OidcServer, consent: boolean): Promise<string> {
  const url = new URL(`${server.base}${server.path}/auth`);
  for (const [name, value] of Object.entries({
    client_id: server.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: consent ? 'openid email offline_access' : 'openid email',
    resource: API,
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    state: 'bench-state',
    nonce: 'bench-nonce',
    ...(consent ? { prompt: 'consent' } : {}),
  }))
    url.searchParams.set(name, value);
  const cookie = () => [...server.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  let current = url.href;
  let init: RequestInit = {};
  for (let hops = 0; hops < 10; hops++) {
    const response = await fetch(current, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: cookie() },
    });
    keep(server.jar, response);
    init = {};
    const location = response.headers.get('location');
    if (location) {
      await response.body?.cancel();
      const next = new URL(location, current);
      if (next.origin !== server.base) {
        const code = next.searchParams.get('code');
        if (!code) throw new Error(`${server.label}: sent back without a code: ${next.href}`);
        return code;
      }
      current = next.href;
      continue;
    }
    const body = await response.text();
    const page = new URL(current);
    if (response.status === 200 && page.pathname.startsWith(`${server.path}/interaction/`)) {
      // Usher's consent page: its script posts the decision and goes where it is told.
      const answer = await fetch(`${page.origin}${page.pathname}/consent`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          origin: server.base,
          'sec-fetch-site': 'same-origin',
          cookie: cookie(),
        },
        body: JSON.stringify({ decision: 'allow' }),
      });
      keep(server.jar, answer);
      if (answer.status !== 200) throw new Error(`${server.label}: consent answered ${answer.status}`);
      current = new URL(((await answer.json()) as { location: string }).location, current).href;
      continue;
    }
    throw new Error(`${server.label}: the authorization stopped at ${current} (${response.status}): ${body}`);
  }
  throw new Error(`${server.label}: too many redirects`);
}

/** `count` codes, minted `parallel` at a time (after one alone, so that one provider session serves all). */
export async function mintCodes(server: OidcServer, count: number, parallel = 4): Promise<string[]> {
  const codes = [await authorize(server, false)];
  let started = 1;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (started < count) {
        started++;
        codes.push(await authorize(server, false));
      }
    }),
  );
  return codes;
}

const basic = (server: OidcServer) =>
  `Basic ${Buffer.from(`${encodeURIComponent(server.clientId)}:${encodeURIComponent(server.clientSecret)}`).toString('base64')}`;

function tokenBody(server: OidcServer, scenario: Scenario, credential: string): string {
  switch (scenario) {
    case 'client_credentials':
      return new URLSearchParams({ grant_type: 'client_credentials', resource: API }).toString();
    case 'authorization_code':
      return new URLSearchParams({
        grant_type: 'authorization_code',
        code: credential,
        redirect_uri: REDIRECT_URI,
        code_verifier: VERIFIER,
      }).toString();
    case 'refresh_token':
      return new URLSearchParams({ grant_type: 'refresh_token', refresh_token: credential }).toString();
  }
  throw new Error(`${server.label}: no such scenario ${scenario}`);
}

/** Refresh tokens for `connections` chains, from codes minted with offline_access. */
export async function ensureRefreshTokens(server: OidcServer, connections: number): Promise<void> {
  while (server.refreshTokens.length < connections) {
    const code = await authorize(server, true);
    const answer = await post(server, tokenBody(server, 'authorization_code', code));
    const token = (JSON.parse(answer.body) as { refresh_token?: string }).refresh_token;
    if (answer.status !== 200 || !token)
      throw new Error(`${server.label}: no refresh token (${answer.status}): ${answer.body}`);
    server.refreshTokens.push(token);
  }
}

const agents = new WeakMap<OidcServer, Agent>();

function post(server: OidcServer, body: string): Promise<{ status: number; body: string }> {
  let agent = agents.get(server);
  if (!agent) {
    agent = new Agent({ keepAlive: true, maxSockets: 64 });
    agents.set(server, agent);
  }
  const url = new URL(`${server.base}${server.path}/token`);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: basic(server),
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export interface Measured {
  /** Server CPU µs per token issued. */
  cpuUs: number;
  tokensPerSecond: number;
  tokens: number;
  errors: number;
}

/**
 * Issues `count` tokens of a scenario on `connections` keep-alive connections and reads the
 * server's CPU around them. For the code exchange the codes are minted first, outside the
 * measurement; a refresh chain per connection goes on from the token the last refresh gave.
 */
export async function issueTokens(
  server: OidcServer,
  scenario: Scenario,
  count: number,
  connections = 8,
): Promise<Measured> {
  const codes = scenario === 'authorization_code' ? await mintCodes(server, count) : [];
  if (scenario === 'refresh_token') await ensureRefreshTokens(server, connections);
  let next = 0;
  let tokens = 0;
  let errors = 0;
  let firstError = '';
  const cpuBefore = cpuSeconds(server.pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async (_, lane) => {
      while (next < count) {
        const i = next++;
        const credential =
          scenario === 'authorization_code'
            ? codes[i]!
            : scenario === 'refresh_token'
              ? server.refreshTokens[lane]!
              : '';
        const answer = await post(server, tokenBody(server, scenario, credential));
        if (answer.status !== 200) {
          errors++;
          firstError ||= `${answer.status} ${answer.body}`;
          continue;
        }
        tokens++;
        if (scenario === 'refresh_token')
          server.refreshTokens[lane] = (JSON.parse(answer.body) as { refresh_token: string }).refresh_token;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  if (errors > 0) console.error(`${server.label} ${scenario}: ${errors} errors, the first: ${firstError}`);
  return { cpuUs: (cpu * 1e6) / Math.max(1, tokens), tokensPerSecond: tokens / seconds, tokens, errors };
}

export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export interface PairResult {
  scenario: Scenario;
  /** Per server, in the order given: the medians of its rounds. */
  servers: Array<{ label: string; cpuUs: number; tokensPerSecond: number; errors: number; rounds: number[] }>;
  /**
   * The first server's CPU per token ÷ each server's (1 for the first itself): the median of the
   * rounds' own ratios, each of two measurements made back to back, so that a busy machine's
   * drift between rounds cancels out.
   */
  ratios: number[];
}

/**
 * Servers measured side by side on one scenario: a warm-up on each, then `rounds` rounds of
 * `tokens` tokens on each, the order turned round each round so that a busy machine's drift
 * falls on all alike. The first server is the reference of the ratios.
 */
export async function measureAlternated(
  servers: OidcServer[],
  scenario: Scenario,
  options: { tokens: number; rounds: number; warmup?: number; connections?: number },
): Promise<PairResult> {
  const connections = options.connections ?? 8;
  for (const server of servers)
    await issueTokens(server, scenario, options.warmup ?? options.tokens, connections);
  const samples = servers.map(() => [] as Measured[]);
  for (let round = 0; round < options.rounds; round++) {
    const order = servers.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order)
      samples[i]!.push(await issueTokens(servers[i]!, scenario, options.tokens, connections));
  }
  const summary = servers.map((server, i) => ({
    label: server.label,
    cpuUs: median(samples[i]!.map((s) => s.cpuUs)),
    tokensPerSecond: median(samples[i]!.map((s) => s.tokensPerSecond)),
    errors: samples[i]!.reduce((n, s) => n + s.errors, 0),
    rounds: samples[i]!.map((s) => s.cpuUs),
  }));
  return {
    scenario,
    servers: summary,
    ratios: samples.map((own) => median(own.map((s, round) => samples[0]![round]!.cpuUs / s.cpuUs))),
  };
}
