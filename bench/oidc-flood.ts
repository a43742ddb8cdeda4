// `node bench/oidc-flood.ts`: what one client address can make the OpenID Connect provider store
// (issue 40). For each of four floods, on a fresh database and a fresh server (loopback only),
// FLOOD_CONNECTIONS loops send requests for FLOOD_SECONDS (at most FLOOD_MAX requests in all):
// - GET /oidc/session/end without a cookie, naming a client's registered post-logout URI and a state;
// - POST /oidc/request (PAR) by a confidential client, with a state;
// - GET /oidc/auth without a cookie (an interaction each), with a state;
// - GET /oidc/auth of a signed-in browser that never keeps the provider's cookie (first-party client).
// It reports the rows the provider's table (oidc_models) gained in the run, by model, and per
// minute: rows, payload bytes, the limits' table (limit_events) and both tables' bytes in use
// (SQLite: pages in use; PostgreSQL: pg_total_relation_size). A per-minute figure of a run shorter
// than a budget's window (15 minutes) is the run's rate, not what the budget lets through in a
// minute over time. SQLite always, PostgreSQL with TEST_DATABASE_URL.
//
// FLOOD_TREE=/path/to/a/checkout runs that checkout's server instead (a before/after comparison:
// `git worktree add /tmp/usher-before ec13c21`); FLOOD_STATE sets the state's length (default
// 14,000 characters, the issue's; 1,000 is the largest Usher now keeps).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { freshDatabaseUrl, postgresAvailable, type StoreKind } from '../test/helpers/databases.ts';
import { freePort } from '../test/helpers/process.ts';

const SECONDS = Number(process.env.FLOOD_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.FLOOD_CONNECTIONS ?? 4);
const MAX = Number(process.env.FLOOD_MAX ?? 20_000);
const STATE_LENGTH = Number(process.env.FLOOD_STATE ?? 14_000);
const TREE = process.env.FLOOD_TREE ?? new URL('..', import.meta.url).pathname;
const SERVER = join(TREE, 'src/server.ts');
const CLI = join(TREE, 'bin/usher.mjs');
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const POST_LOGOUT_URI = 'http://127.0.0.1:9/signed-out';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

const state = () =>
  randomBytes(Math.ceil((STATE_LENGTH * 3) / 4))
    .toString('base64url')
    .slice(0, STATE_LENGTH);

interface Sizes {
  models: number;
  byModel: Map<string, number>;
  payloadBytes: number;
  limitEvents: number;
  /** The two tables' bytes in use (SQLite: pages in use, WAL read through; PostgreSQL: relation sizes). */
  diskBytes: number;
}

async function sizes(kind: StoreKind, url: string): Promise<Sizes> {
  if (kind === 'sqlite') {
    const db = new DatabaseSync(url.slice('sqlite:'.length), { readOnly: true });
    try {
      const m = db
        .prepare('select count(*) as n, coalesce(sum(length(payload)), 0) as b from oidc_models')
        .get() as { n: number; b: number };
      const by = db.prepare('select model, count(*) as n from oidc_models group by model').all() as Array<{
        model: string;
        n: number;
      }>;
      const l = db.prepare('select count(*) as n from limit_events').get() as { n: number };
      // The file only grows and its WAL is reused: the pages in use say what the rows take.
      const pragma = (name: string) =>
        Number((db.prepare(`pragma ${name}`).get() as Record<string, number>)[name]);
      return {
        models: Number(m.n),
        byModel: new Map(by.map((row) => [row.model, Number(row.n)])),
        payloadBytes: Number(m.b),
        limitEvents: Number(l.n),
        diskBytes: (pragma('page_count') - pragma('freelist_count')) * pragma('page_size'),
      };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const m = await client.query(
      'select count(*)::int as n, coalesce(sum(octet_length(payload)), 0)::bigint as b from oidc_models',
    );
    const by = await client.query('select model, count(*)::int as n from oidc_models group by model');
    const l = await client.query('select count(*)::int as n from limit_events');
    const d = await client.query(
      "select (pg_total_relation_size('oidc_models') + pg_total_relation_size('limit_events'))::bigint as d",
    );
    return {
      models: Number(m.rows[0].n),
      byModel: new Map(by.rows.map((row: { model: string; n: number }) => [row.model, Number(row.n)])),
      payloadBytes: Number(m.rows[0].b),
      limitEvents: Number(l.rows[0].n),
      diskBytes: Number(d.rows[0].d),
    };
  } finally {
    await client.end();
  }
}

interface Flood {
  name: string;
  request(base: string, ctx: { clientId: string; basic: string; usherCookie: string }): Promise<Response>;
}

const FLOODS: Flood[] = [
  {
    name: 'GET /oidc/session/end, no cookie',
    request: (base, { clientId }) => {
      const url = new URL(`${base}/oidc/session/end`);
      url.searchParams.set('client_id', clientId);
      url.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_URI);
      url.searchParams.set('state', state());
      return fetch(url, { redirect: 'manual' });
    },
  },
  {
    name: 'POST /oidc/request (PAR)',
    request: (base, { clientId, basic }) =>
      fetch(`${base}/oidc/request`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
          scope: 'openid',
          code_challenge: CHALLENGE,
          code_challenge_method: 'S256',
          state: state(),
        }),
      }),
  },
  {
    name: 'GET /oidc/auth, no cookie',
    request: (base, { clientId }) => fetch(authorizationUrl(base, clientId, state()), { redirect: 'manual' }),
  },
  {
    name: 'GET /oidc/auth, signed in, no provider cookie',
    request: (base, { clientId, usherCookie }) =>
      fetch(authorizationUrl(base, clientId, randomBytes(16).toString('base64url')), {
        redirect: 'manual',
        headers: { cookie: usherCookie },
      }),
  },
];

function authorizationUrl(base: string, clientId: string, withState: string): URL {
  const url = new URL(`${base}/oidc/auth`);
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'openid email',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    state: withState,
    nonce: randomBytes(16).toString('base64url'),
  }))
    url.searchParams.set(name, value);
  return url;
}

async function flood(kind: StoreKind, which: Flood): Promise<string> {
  const fresh = await freshDatabaseUrl(kind);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: fresh.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: base,
    LOG_LEVEL: 'warn',
    MAIL_OUTBOX: mkdtempSync(join(tmpdir(), 'usher-flood-outbox-')),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    REGISTRATION_MAX_PER_ADDRESS: '1000000',
  };
  const added = spawnSync(
    process.execPath,
    [
      CLI,
      'clients',
      'add',
      '--name',
      'Flood',
      '--redirect-uri',
      REDIRECT_URI,
      '--post-logout-redirect-uri',
      POST_LOGOUT_URI,
      '--first-party',
    ],
    { env, encoding: 'utf8' },
  );
  if (added.status !== 0) throw new Error(`clients add failed: ${added.stderr}`);
  const { clientId, clientSecret } = JSON.parse(added.stdout) as { clientId: string; clientSecret: string };
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
  const child = spawn(process.execPath, [SERVER], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    let ready = false;
    for (let i = 0; i < 1000 && !ready; i++) {
      try {
        ready = (await fetch(`${base}/readyz`)).ok;
      } catch {
        // not listening yet
      }
      if (!ready) await new Promise((r) => setTimeout(r, 20));
    }
    if (!ready) throw new Error('the server did not become ready');
    await fetch(`${base}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'flood@example.com', name: 'Flood', password: 'flood-password-1' }),
    });
    const signin = await fetch(`${base}/api/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ email: 'flood@example.com', password: 'flood-password-1' }),
    });
    const usherCookie = (
      signin.headers.getSetCookie().find((c) => c.startsWith('usher_session=')) ?? ''
    ).split(';')[0]!;
    if (!usherCookie) throw new Error(`sign-in answered ${signin.status}`);
    // The provider is built on first use.
    await (await fetch(`${base}/oidc/.well-known/openid-configuration`)).text();
    const before = await sizes(kind, fresh.url);
    const statuses = new Map<number, number>();
    let sent = 0;
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline && sent < MAX) {
          sent++;
          const response = await which.request(base, { clientId, basic, usherCookie });
          await response.body?.cancel();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        }
      }),
    );
    const minutes = (performance.now() - started) / 60_000;
    const after = await sizes(kind, fresh.url);
    const perMinute = (n: number) => Math.round(n / minutes);
    const mib = (n: number) => (n / 1024 / 1024).toFixed(2);
    const answered = [...statuses].map(([status, n]) => `${n}×${status}`).join(', ');
    const models = [...after.byModel]
      .map(([model, n]) => [model, n - (before.byModel.get(model) ?? 0)] as const)
      .filter(([, n]) => n !== 0)
      .map(([model, n]) => `${model} ${n}`)
      .join(', ');
    const kib = (n: number) => (n / 1024).toFixed(0);
    return `| ${which.name} | ${sent} (${answered}) | ${after.models - before.models} (${models || 'none'}), ${kib(after.payloadBytes - before.payloadBytes)} KiB | ${perMinute(after.models - before.models)} | ${mib(perMinute(after.payloadBytes - before.payloadBytes))} | ${perMinute(after.limitEvents - before.limitEvents)} | ${mib(perMinute(after.diskBytes - before.diskBytes))} |`;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await fresh.drop();
  }
}

const report = [
  `<!-- node bench/oidc-flood.ts on ${new Date().toISOString()}: ${TREE}, ${SECONDS} s per flood, ${CONNECTIONS} connections, state ${STATE_LENGTH} characters -->`,
];
for (const kind of ['sqlite', ...(postgresAvailable ? ['postgres' as const] : [])] as const) {
  report.push(
    '',
    `### ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    '',
    '| flood from one address | requests (answers) | provider rows added (by model), payload | provider rows/min | payload MiB/min | limit events/min | tables MiB/min |',
    '|---|---|---|---|---|---|---|',
  );
  for (const which of FLOODS) report.push(await flood(kind, which));
}
console.log(report.join('\n'));
