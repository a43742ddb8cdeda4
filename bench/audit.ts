// `npm run bench:audit` (also the last step of `npm run bench`): what the audit log and webhooks
// cost, on SQLite and PostgreSQL.
//
// 1. Password sign-ins (POST /api/signin, 8 connections) on four Usher processes side by side, each
//    on its own database with the same 1,000 users, measured one after the other in a new order
//    each round: AUDIT_SIGNINS=false; AUDIT_SIGNINS=true (the default: the signin.succeeded record
//    written in the grant's statement on PostgreSQL, its transaction on SQLite); true with one
//    webhook subscribed to user.signed_in and the sender left out (each sign-in queues a delivery,
//    nothing sends it: what queuing adds); and the same with the sender running and a local receiver
//    answering 204 (queued and delivered). Usher's CPU per sign-in comes from /proc (the whole
//    process, and its main thread apart), and req/s; medians over the rounds.
//    Hashing is made cheap (argon2id m=1024 KiB, t=1, p=1: the test suite's CHEAP_HASH; production
//    may not go below m=19456, t=2, which costs ~20 ms of CPU a hash and would bury a statement's
//    cost), so these processes are Usher built by this file (`--serve`: buildApp with the hash
//    parameters replaced, everything else from the environment, as src/run.ts serves) rather than
//    bin/server.mjs, which enforces the production minimum. Both sides of every comparison run so.
// 2. Webhook delivery throughput: N user.created deliveries (one per user, as a bulk import queues
//    them) are written into the outbox while Usher is running, then a sign-in that queues one more
//    wakes the sender; the time until a plain node:http receiver on 127.0.0.1 (204, no verification,
//    every webhook-id counted) has all of them gives deliveries/s, and Usher's CPU until the last is
//    marked sent gives CPU per delivery. WEBHOOK_CONCURRENCY 16 (the default) and 64 (a quarter of
//    it per receiver: 4 and 16 in flight). Then the same with a second receiver that answers after
//    2 s, its deliveries interleaved with the first's as events arriving one by one would queue
//    them: the fast receiver's throughput against the single-receiver figure. Each scenario has its
//    own Usher and database, started first and kept, and the rounds take the scenarios in a new
//    order each time. A bare node:http client POSTing the same kind of body with 4 and 16 in flight
//    is the yardstick (its own CPU).
//
// BENCH_QUICK=1: one round, shorter loads, 300 deliveries (1,000 otherwise), printed only
// (BENCH_AUDIT_WRITE=1 writes anyway); BENCH_AUDIT_ONLY=signins or deliveries with it. BENCH_SECONDS,
// BENCH_ROUNDS (sign-ins), BENCH_AUDIT_DELIVERIES, BENCH_AUDIT_DELIVERY_ROUNDS, BENCH_AUDIT_STORES
// (default "sqlite,postgres"), BENCH_AUDIT_WRITE=0 (print, leave the docs alone),
// BENCH_AUDIT_NODE_ARGS (more Node options for the Usher processes, e.g. --cpu-prof),
// BENCH_AUDIT_SERVER_LOG=FILE (their log lines), BENCH_AUDIT_STALL_SECONDS (default 20: how long a
// delivery run waits for its receiver before it is reported as stalled, with the outbox's state).
// PostgreSQL: TEST_DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from '../src/db/database.ts';

type StoreKind = 'sqlite' | 'postgres';

const SELF = fileURLToPath(import.meta.url);
const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 3));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 5));
const DELIVERIES = Number(process.env.BENCH_AUDIT_DELIVERIES ?? (QUICK ? 300 : 1000));
const DELIVERY_ROUNDS = Number(process.env.BENCH_AUDIT_DELIVERY_ROUNDS ?? (QUICK ? 1 : 3));
const STORES = (process.env.BENCH_AUDIT_STORES ?? 'sqlite,postgres').split(',') as StoreKind[];
/** BENCH_AUDIT_ONLY=signins or deliveries (with BENCH_QUICK=1): one part, for a check. */
const ONLY = process.env.BENCH_AUDIT_ONLY;
if (ONLY && !QUICK)
  throw new Error('BENCH_AUDIT_ONLY goes with BENCH_QUICK=1: a partial run must not replace the results');
const WRITE = process.env.BENCH_AUDIT_WRITE === '1' || (!QUICK && process.env.BENCH_AUDIT_WRITE !== '0');
/** argon2id for every password in this bench: the test suite's CHEAP_HASH (test/helpers/app.ts). */
const HASH = { memoryKiB: 1024, passes: 1, parallelism: 1 } as const;
const USERS = 1000;
const CONNECTIONS = 8;
const PASSWORD = 'bench-password-1';
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-password-1' };
/** How long the second receiver takes to answer. */
const HANG_MS = 2000;
/** How long a run waits for the receiver to have every delivery before it reports a stall. */
const STALL_SECONDS = Number(process.env.BENCH_AUDIT_STALL_SECONDS ?? 20);
/** What src/launch.ts gives a server process at start (its entry file relaunches with them). */
const SERVER_FLAGS = ['--max-semi-space-size=4', '--no-memory-reducer-favors-memory'];
const CLK_TCK = 100;

// ---- The server process: Usher as src/run.ts serves it, with cheap hashing.

async function serve(): Promise<void> {
  const { loadConfig } = await import('../src/config.ts');
  const { buildApp } = await import('../src/app.ts');
  const { FEATURES } = await import('../src/features.ts');
  const { Composition } = await import('../src/kernel/composition.ts');
  const { lowerThreadpoolPriority, sizeThreadpool } = await import('../src/shared/threadpool.ts');
  const config = loadConfig(process.env);
  sizeThreadpool(config.threadpool.size);
  const passwordHash = { ...config.passwordHash, ...HASH };
  // BENCH_AUDIT_SENDER=off: the webhooks' background sender is left out; deliveries are queued
  // (the journal's part) and stay pending.
  const features =
    process.env.BENCH_AUDIT_SENDER === 'off'
      ? new Composition<typeof config>(
          FEATURES.modules.map((feature) =>
            feature.name === 'webhooks' ? { ...feature, background: undefined } : feature,
          ),
        )
      : FEATURES;
  const app = await buildApp({ ...config, passwordHash }, { features });
  process.once('SIGTERM', () => {
    app.close().then(
      // The log destination is buffered: written out before exiting, as src/run.ts does.
      () => (app.log as unknown as { flush(cb: () => void): void }).flush(() => process.exit(0)),
      () => process.exit(1),
    );
  });
  await lowerThreadpoolPriority(config.threadpool.priority);
  await app.listen({ host: config.host, port: config.port });
}

// ---- The bare yardstick: a node:http client POSTing `count` bodies to `url`, `inFlight` at once.

async function barePost(url: string, count: number, inFlight: number): Promise<void> {
  const { Agent, request } = await import('node:http');
  const { createHmac } = await import('node:crypto');
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const key = randomBytes(32);
  const post = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({
        type: 'user.created',
        timestamp: new Date().toISOString(),
        data: { userId: 900000 + i, via: 'import', email: `bare${i}@example.com`, name: `Bare ${i}` },
      });
      const id = `msg_${randomBytes(16).toString('base64url')}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
      const req = request(url, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
      });
      req.on('error', reject);
      req.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve());
      });
      req.end(body);
    });
  const run = async (n: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < n) await post(next++);
      }),
    );
  };
  await run(50); // warm-up
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(count);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  process.stdout.write(
    JSON.stringify({ perSecond: (count * 1000) / ms, cpuUs: (cpu.user + cpu.system) / count }),
  );
}

// ---- Measuring

function cpuSeconds(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** The whole process's CPU seconds, its main thread's (the event loop) and its hashing pool's. */
function processCpu(pid: number, poolThreadName: string): { all: number; loop: number; pool: number } {
  let pool = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === poolThreadName)
        pool += cpuSeconds(`/proc/${pid}/task/${tid}/stat`);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return {
    all: cpuSeconds(`/proc/${pid}/stat`),
    loop: cpuSeconds(`/proc/${pid}/task/${pid}/stat`),
    pool,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- The bench

async function main(): Promise<void> {
  process.env.TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/postgres';
  const { spawn } = await import('node:child_process');
  const { mkdtempSync, openSync, rmSync } = await import('node:fs');
  const { createServer } = await import('node:http');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { default: autocannon } = await import('autocannon');
  const { sql } = await import('kysely');
  const { loadConfig } = await import('../src/config.ts');
  const { openDatabase } = await import('../src/db/database.ts');
  const { schemaMigrations } = await import('../src/features.ts');
  const { PasswordHasher } = await import('../src/passwords/hasher.ts');
  const { POOL_THREAD_NAME } = await import('../src/shared/threadpool.ts');
  const { webhookBody } = await import('../src/webhooks/events.ts');
  const { newMessageId } = await import('../src/webhooks/sink.ts');
  const { freshDatabaseUrl } = await import('../test/helpers/databases.ts');
  const { freePort } = await import('../test/helpers/process.ts');

  const outbox = mkdtempSync(join(tmpdir(), 'usher-bench-outbox-'));
  const encryptionKey = randomBytes(32).toString('base64');
  // Frozen: autocannon writes a content-length into the headers object it is given.
  const json = Object.freeze({ 'content-type': 'application/json' });
  const cpuOf = (pid: number) => processCpu(pid, POOL_THREAD_NAME);

  // One cheap hash shared by every seeded password (each row its own salt would change nothing here).
  const hasher = new PasswordHasher({ ...loadConfig({}).passwordHash, ...HASH, concurrency: 1 });
  const userHash = await hasher.hash(PASSWORD);
  const adminHash = await hasher.hash(ADMIN.password);

  /** The schema, USERS users with a password, and an admin (the last id). */
  async function seed(url: string): Promise<void> {
    const database = openDatabase(url, loadConfig({}).database);
    try {
      await database.migrate(schemaMigrations());
      const now = new Date().toISOString();
      for (let start = 0; start < USERS; start += 250) {
        const rows = Array.from({ length: Math.min(250, USERS - start) }, (_, i) => ({
          email: `bench${start + i}@example.com`,
          email_key: `bench${start + i}@example.com`,
          name: `Bench User ${start + i}`,
          name_key: `bench user ${start + i}`,
          created_at: now,
          updated_at: now,
        }));
        const ids = await database.db.insertInto('users').values(rows).returning('id').execute();
        await database.db
          .insertInto('password_credentials')
          .values(ids.map(({ id }) => ({ user_id: id, hash: userHash, changed_at: Date.now() })))
          .execute();
      }
      const admin = await database.db
        .insertInto('users')
        .values({
          email: ADMIN.email,
          email_key: ADMIN.email,
          name: 'Bench Admin',
          name_key: 'bench admin',
          role: 'admin',
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await database.db
        .insertInto('password_credentials')
        .values({ user_id: admin.id, hash: adminHash, changed_at: Date.now() })
        .execute();
    } finally {
      await database.close();
    }
  }

  interface Server {
    child: ChildProcess;
    pid: number;
    base: string;
  }

  async function launch(url: string, extra: Record<string, string>): Promise<Server> {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const nodeArgs = (process.env.BENCH_AUDIT_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...SERVER_FLAGS, ...nodeArgs, SELF, '--serve'], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: url,
        PORT: String(port),
        PUBLIC_URL: base,
        // The production default: one access-log line per request (to /dev/null here).
        LOG_LEVEL: 'info',
        MALLOC_ARENA_MAX: '1',
        MAIL_OUTBOX: outbox,
        ENCRYPTION_KEY: encryptionKey,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        // The load generator is one address standing for many clients.
        SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
        SIGNIN_MAX_FAILURES_PER_ADDRESS: '1000000',
        ...extra,
      },
      // BENCH_AUDIT_SERVER_LOG=FILE: the servers' log lines (stdout) go there instead of nowhere.
      stdio: [
        'ignore',
        process.env.BENCH_AUDIT_SERVER_LOG ? openSync(process.env.BENCH_AUDIT_SERVER_LOG, 'a') : 'ignore',
        'inherit',
      ],
    });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    for (let i = 0; i < 3000; i++) {
      if (exited) throw new Error(`Usher (${url}) exited at start`);
      try {
        if ((await fetch(`${base}/readyz`)).ok) return { child, pid: child.pid!, base };
      } catch {
        // not listening yet
      }
      await sleep(10);
    }
    throw new Error('Usher did not become ready');
  }

  async function stop(server: Server): Promise<void> {
    if (server.child.exitCode !== null || server.child.signalCode !== null) return;
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }

  async function adminToken(base: string): Promise<string> {
    const response = await fetch(`${base}/api/sessions`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify(ADMIN),
    });
    if (!response.ok) throw new Error(`admin sign-in answered ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { token: string }).token;
  }

  async function addWebhook(base: string, token: string, url: string, events: string[]): Promise<void> {
    const response = await fetch(`${base}/api/admin/webhooks`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ url, events }),
    });
    if (response.status !== 201)
      throw new Error(`POST /api/admin/webhooks answered ${response.status}: ${await response.text()}`);
  }

  /** A plain receiver: counts each POST (and each distinct webhook-id), answers 204 after `delayMs`. */
  async function receiver(delayMs: number) {
    const state = {
      count: 0,
      ids: new Set<string>(),
      lastAt: 0,
      waiting: undefined as { n: number; resolve: () => void } | undefined,
      reset() {
        this.count = 0;
        this.ids.clear();
        this.lastAt = 0;
      },
      /** Resolves once `n` POSTs have arrived since the last reset. */
      reach(n: number): Promise<void> {
        if (this.count >= n) return Promise.resolve();
        return new Promise((resolve) => {
          this.waiting = { n, resolve };
        });
      },
    };
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        state.count++;
        state.lastAt = performance.now();
        const id = request.headers['webhook-id'];
        if (typeof id === 'string') state.ids.add(id);
        if (state.waiting && state.count >= state.waiting.n) {
          const { resolve } = state.waiting;
          state.waiting = undefined;
          resolve();
        }
        const answer = () => {
          response.statusCode = 204;
          response.end();
        };
        if (delayMs > 0) setTimeout(answer, delayMs);
        else answer();
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return {
      state,
      url: `http://127.0.0.1:${port}/usher`,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  // ---- 1. Sign-ins

  type Variant = 'off' | 'on' | 'queued' | 'delivered';
  const VARIANTS: Record<Variant, { label: string; env: Record<string, string>; webhook: boolean }> = {
    off: { label: 'AUDIT_SIGNINS=false', env: { AUDIT_SIGNINS: 'false' }, webhook: false },
    on: { label: 'AUDIT_SIGNINS=true (default)', env: { AUDIT_SIGNINS: 'true' }, webhook: false },
    queued: {
      label: 'AUDIT_SIGNINS=true, a webhook on user.signed_in, sender off (queued only)',
      env: { AUDIT_SIGNINS: 'true', BENCH_AUDIT_SENDER: 'off' },
      webhook: true,
    },
    delivered: {
      label: 'AUDIT_SIGNINS=true, a webhook on user.signed_in, sender on (queued and delivered)',
      env: { AUDIT_SIGNINS: 'true' },
      webhook: true,
    },
  };
  const variants = Object.keys(VARIANTS) as Variant[];

  interface SigninSample {
    rps: number;
    cpuUs: number;
    loopUs: number;
    poolUs: number;
    p50: number;
    p99: number;
    requests: number;
    errors: number;
  }

  async function signinLoad(base: string, seconds: number) {
    return autocannon({
      url: base,
      connections: CONNECTIONS,
      duration: seconds,
      requests: [
        {
          setupRequest: (() => ({
            method: 'POST',
            path: '/api/signin',
            headers: { ...json },
            body: JSON.stringify({
              email: `bench${Math.floor(Math.random() * USERS)}@example.com`,
              password: PASSWORD,
            }),
          })) as never,
        },
      ],
    });
  }

  async function measureSignins(server: Server): Promise<SigninSample> {
    const before = cpuOf(server.pid);
    const r = await signinLoad(server.base, SECONDS);
    const after = cpuOf(server.pid);
    const ok = Math.max(1, r['2xx']);
    return {
      rps: r.requests.average,
      cpuUs: ((after.all - before.all) * 1e6) / ok,
      loopUs: ((after.loop - before.loop) * 1e6) / ok,
      poolUs: ((after.pool - before.pool) * 1e6) / ok,
      p50: r.latency.p50,
      p99: r.latency.p99,
      requests: r['2xx'],
      errors: r.errors + r.timeouts + r.non2xx,
    };
  }

  interface Written {
    signins: number;
    audit: number;
    deliveries: number;
    sent: number;
  }

  /** What each database holds afterwards: the check that each variant did what it says. */
  async function written(url: string): Promise<Written> {
    const database = openDatabase(url, loadConfig({}).database);
    try {
      const count = async (query: string) =>
        Number(
          (await sql<{ n: number | bigint | string }>`${sql.raw(query)}`.execute(database.db)).rows[0]!.n,
        );
      return {
        signins: await count('select count(*) as n from sessions'),
        audit: await count("select count(*) as n from audit_events where type = 'signin.succeeded'"),
        deliveries: await count(
          "select count(*) as n from webhook_deliveries where event_type = 'user.signed_in'",
        ),
        sent: await count("select count(*) as n from webhook_deliveries where status = 'sent'"),
      };
    } finally {
      await database.close();
    }
  }

  async function signinPhase(kind: StoreKind) {
    const sink = await receiver(0);
    const servers = new Map<Variant, Server & { url: string; drop: () => Promise<void> }>();
    const samples = new Map<Variant, SigninSample[]>(variants.map((v) => [v, []]));
    let checks: Record<Variant, Written> | undefined;
    try {
      for (const variant of variants) {
        const fresh = await freshDatabaseUrl(kind);
        await seed(fresh.url);
        const server = await launch(fresh.url, VARIANTS[variant].env);
        servers.set(variant, { ...server, url: fresh.url, drop: fresh.drop });
        if (VARIANTS[variant].webhook)
          await addWebhook(server.base, await adminToken(server.base), sink.url, ['user.signed_in']);
        else await adminToken(server.base); // the same one sign-in on every variant
      }
      for (const variant of variants) await signinLoad(servers.get(variant)!.base, 1); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        // A new order each round, so that a shared machine's drift falls on all alike.
        const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
        for (const variant of order) samples.get(variant)!.push(await measureSignins(servers.get(variant)!));
        console.error(`${kind} sign-ins: round ${round + 1} of ${ROUNDS} done`);
      }
    } finally {
      for (const server of servers.values()) await stop(server);
      await sink.close();
      if (servers.size === variants.length) {
        checks = Object.fromEntries(
          await Promise.all(variants.map(async (v) => [v, await written(servers.get(v)!.url)] as const)),
        ) as Record<Variant, Written>;
      }
      for (const server of servers.values()) await server.drop();
    }
    const summary = (variant: Variant) => {
      const list = samples.get(variant)!;
      const cpu = list.map((s) => s.cpuUs);
      return {
        rps: median(list.map((s) => s.rps)),
        cpuUs: median(cpu),
        cpuMin: Math.min(...cpu),
        cpuMax: Math.max(...cpu),
        loopUs: median(list.map((s) => s.loopUs)),
        poolUs: median(list.map((s) => s.poolUs)),
        p50: median(list.map((s) => s.p50)),
        p99: median(list.map((s) => s.p99)),
        requests: list.reduce((n, s) => n + s.requests, 0),
        errors: list.reduce((n, s) => n + s.errors, 0),
        written: checks?.[variant],
      };
    };
    return Object.fromEntries(variants.map((v) => [v, summary(v)])) as Record<
      Variant,
      ReturnType<typeof summary>
    >;
  }

  // ---- 2. Deliveries

  interface DeliveryScenario {
    name: string;
    concurrency: number;
    hanging: boolean;
  }
  const SCENARIOS: DeliveryScenario[] = [
    { name: 'one receiver', concurrency: 16, hanging: false },
    { name: 'one receiver', concurrency: 64, hanging: false },
    { name: 'two receivers, the other answering after 2 s', concurrency: 16, hanging: true },
    { name: 'two receivers, the other answering after 2 s', concurrency: 64, hanging: true },
  ];
  const scenarioKey = (s: DeliveryScenario) => `${s.hanging ? 'hang' : 'one'}|${s.concurrency}`;

  interface DeliverySample {
    perSecond: number;
    cpuUs: number;
    duplicates: number;
    slowDelivered: number;
    /** Set when the receiver did not get them all within STALL_SECONDS: what it got, and the outbox then. */
    stalled?: { received: number; of: number; seconds: number; claimedNotSent: number; failed: number };
  }

  /** Writes `count` user.created deliveries for `fast` (and as many for `slow`, interleaved). */
  async function queue(
    database: Database,
    count: number,
    fast: bigint,
    slow: bigint | undefined,
  ): Promise<void> {
    const now = new Date();
    const rows = [];
    for (let i = 0; i < count; i++) {
      const userId = BigInt(100_000 + i);
      const payload = webhookBody(
        {
          type: 'user.created',
          userId,
          data: {
            via: 'import',
            email: `imported${i}@example.com`,
            name: `Imported User ${i}`,
            emailVerified: false,
            role: 'user',
            createdAt: now.toISOString(),
          },
        },
        now,
      );
      const messageId = newMessageId();
      for (const webhookId of slow === undefined ? [fast] : [fast, slow])
        rows.push({
          webhook_id: webhookId,
          message_id: messageId,
          event_type: 'user.created',
          user_id: userId,
          payload,
          created_at: now.toISOString(),
          retry_until: now.getTime() + 24 * 3600 * 1000,
          next_attempt_at: now.getTime(),
        });
    }
    for (let i = 0; i < rows.length; i += 500)
      await database.db
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 500))
        .execute();
  }

  async function pendingOf(database: Database, webhookId: bigint): Promise<number> {
    const row = await database.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number | bigint | string>().as('n'))
      .where('webhook_id', '=', webhookId)
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async function bare(url: string, inFlight: number): Promise<{ perSecond: number; cpuUs: number }> {
    const child = spawn(
      process.execPath,
      [SELF, '--bare-post', url, String(Math.min(DELIVERIES, 1000)), String(inFlight)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      out += text;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`the bare client exited ${code}`);
    return JSON.parse(out) as { perSecond: number; cpuUs: number };
  }

  async function deliveryPhase(kind: StoreKind) {
    const fast = await receiver(0);
    const slow = await receiver(HANG_MS);
    const samples = new Map<string, DeliverySample[]>(SCENARIOS.map((s) => [scenarioKey(s), []]));
    const bareSamples = new Map<number, { perSecond: number; cpuUs: number }[]>();
    // Each scenario its own Usher and database, all started first and kept for every round, so that
    // the rounds can go over the scenarios in a new order each time without a restart in between.
    const running = new Map<
      string,
      Server & { database: Database; drop: () => Promise<void>; fastId: bigint; slowId: bigint }
    >();

    /** One measurement: `count` deliveries queued (and as many for the slow receiver), a sign-in wakes the sender. */
    async function once(scenario: DeliveryScenario, count: number): Promise<DeliverySample> {
      const { database, fastId, slowId, pid, base } = running.get(scenarioKey(scenario))!;
      // What the last run left (sent rows, the slow receiver's pending ones): each run starts alike.
      await sql`delete from webhook_deliveries`.execute(database.db);
      await queue(database, count, fastId, scenario.hanging ? slowId : undefined);
      await sleep(200);
      fast.state.reset();
      slow.state.reset();
      const expected = count + 1;
      const arrived = fast.state.reach(expected);
      const cpu0 = cpuOf(pid).all;
      const t0 = performance.now();
      const signin = await fetch(`${base}/api/signin`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify(ADMIN),
      });
      if (!signin.ok) throw new Error(`the waking sign-in answered ${signin.status}`);
      let timer: NodeJS.Timeout | undefined;
      const stalled = new Promise<'stalled'>((resolve) => {
        timer = setTimeout(() => resolve('stalled'), STALL_SECONDS * 1000);
      });
      const outcome = await Promise.race([arrived, stalled]);
      clearTimeout(timer);
      if (outcome === 'stalled') {
        // What the outbox looks like when the receiver waited in vain.
        const count = async (where: string) =>
          Number(
            (
              await sql<{ n: number | bigint | string }>`${sql.raw(
                `select count(*) as n from webhook_deliveries where webhook_id = ${fastId} and ${where}`,
              )}`.execute(database.db)
            ).rows[0]!.n,
          );
        const sample = {
          perSecond: fast.state.count / STALL_SECONDS,
          cpuUs: ((cpuOf(pid).all - cpu0) * 1e6) / Math.max(1, fast.state.count + slow.state.count),
          duplicates: fast.state.count - fast.state.ids.size,
          slowDelivered: slow.state.count,
          stalled: {
            received: fast.state.count,
            of: expected,
            seconds: STALL_SECONDS,
            claimedNotSent: await count("status = 'pending' and claimed_until is not null"),
            failed: await count("(status = 'failed' or last_error is not null)"),
          },
        };
        console.error(
          `${kind}: the receiver got ${fast.state.count} of ${expected} in ${STALL_SECONDS} s`,
          sample.stalled,
        );
        await sql`delete from webhook_deliveries`.execute(database.db);
        return sample;
      }
      const seconds = (fast.state.lastAt - t0) / 1000;
      // Until the last one is marked sent: its UPDATE is part of a delivery's cost.
      for (let i = 0; i < 2000 && (await pendingOf(database, fastId)) > 0; i++) await sleep(5);
      const cpu = cpuOf(pid).all - cpu0;
      const slowDelivered = slow.state.count;
      // The slow receiver's backlog is dropped, so its sender stops taking more of it.
      await sql`delete from webhook_deliveries where status = 'pending'`.execute(database.db);
      return {
        perSecond: expected / seconds,
        cpuUs: (cpu * 1e6) / (fast.state.count + slowDelivered),
        duplicates: fast.state.count - fast.state.ids.size,
        slowDelivered,
      };
    }

    try {
      for (const scenario of SCENARIOS) {
        const fresh = await freshDatabaseUrl(kind);
        await seed(fresh.url);
        const database = openDatabase(fresh.url, loadConfig({}).database);
        const server = await launch(fresh.url, {
          WEBHOOK_POLL_MS: '600000',
          WEBHOOK_CONCURRENCY: String(scenario.concurrency),
        });
        try {
          // The receivers, registered as an admin does: the fast one also listens to user.signed_in,
          // which is how a run is started (a sign-in queues one delivery and wakes the sender).
          const token = await adminToken(server.base);
          await addWebhook(server.base, token, fast.url, ['user.created', 'user.signed_in']);
          await addWebhook(server.base, token, slow.url, ['user.created']);
          const hooks = await database.db
            .selectFrom('webhooks')
            .select(['id', 'url'])
            .orderBy('id')
            .execute();
          running.set(scenarioKey(scenario), {
            ...server,
            database,
            drop: fresh.drop,
            fastId: hooks.find((h) => h.url === fast.url)!.id,
            slowId: hooks.find((h) => h.url === slow.url)!.id,
          });
        } catch (error) {
          await stop(server);
          await database.close();
          await fresh.drop();
          throw error;
        }
        // Warm-up; a sender that stalls (the receiver short after STALL_SECONDS) is reported as such, once.
        const warm = await once(scenario, Math.min(200, DELIVERIES));
        if (warm.stalled) samples.get(scenarioKey(scenario))!.push(warm);
      }
      for (let round = 0; round < DELIVERY_ROUNDS; round++) {
        const order = SCENARIOS.map((_, i) => SCENARIOS[(i + round) % SCENARIOS.length]!);
        for (const scenario of order) {
          if (samples.get(scenarioKey(scenario))!.some((s) => s.stalled)) continue;
          const sample = await once(scenario, DELIVERIES);
          samples.get(scenarioKey(scenario))!.push(sample);
          console.error(
            `${kind} ${scenario.name}, WEBHOOK_CONCURRENCY=${scenario.concurrency}: ${sample.perSecond.toFixed(0)}/s, ${sample.cpuUs.toFixed(0)} µs each`,
          );
        }
        for (const inFlight of [4, 16]) {
          const list = bareSamples.get(inFlight) ?? [];
          list.push(await bare(fast.url, inFlight));
          bareSamples.set(inFlight, list);
        }
        console.error(`${kind} deliveries: round ${round + 1} of ${DELIVERY_ROUNDS} done`);
      }
    } finally {
      for (const server of running.values()) await stop(server);
      for (const server of running.values()) {
        await server.database.close();
        await server.drop();
      }
      await fast.close();
      await slow.close();
    }
    return {
      scenarios: SCENARIOS.map((scenario) => {
        const list = samples.get(scenarioKey(scenario))!;
        return {
          ...scenario,
          perSecond: median(list.map((s) => s.perSecond)),
          perSecondMin: Math.min(...list.map((s) => s.perSecond)),
          perSecondMax: Math.max(...list.map((s) => s.perSecond)),
          cpuUs: median(list.map((s) => s.cpuUs)),
          duplicates: list.reduce((n, s) => n + s.duplicates, 0),
          slowDelivered: median(list.map((s) => s.slowDelivered)),
          stalled: list.find((s) => s.stalled)?.stalled,
        };
      }),
      bare: [...bareSamples].map(([inFlight, list]) => ({
        inFlight,
        perSecond: median(list.map((s) => s.perSecond)),
        cpuUs: median(list.map((s) => s.cpuUs)),
      })),
    };
  }

  // ---- Report

  const STORE_NAMES: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };
  type SigninResult = Awaited<ReturnType<typeof signinPhase>>;
  type DeliveryResult = Awaited<ReturnType<typeof deliveryPhase>>;
  const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '–');
  const pct = (x: number, of: number) => `${x >= of ? '+' : ''}${(((x - of) / of) * 100).toFixed(1)}%`;

  function signinTable(kind: StoreKind, r: SigninResult): string {
    const lines = [
      `#### ${STORE_NAMES[kind]}: sign-ins`,
      '',
      '| sign-in with | req/s | Usher CPU µs/sign-in (min–max) | of it, main thread + hashing threads | against the row above | p50/p99 ms | records and deliveries written per sign-in | non-2xx+errors |',
      '|---|---|---|---|---|---|---|---|',
    ];
    variants.forEach((variant, i) => {
      const s = r[variant];
      const above = i === 0 ? undefined : r[variants[i - 1]!];
      const w = s.written;
      const per = w
        ? `${(w.audit / Math.max(1, w.signins)).toFixed(2)} audit, ${(w.deliveries / Math.max(1, w.signins)).toFixed(2)} queued${variant === 'delivered' ? `, ${(w.sent / Math.max(1, w.deliveries)).toFixed(2)} of them sent` : ''}`
        : '–';
      lines.push(
        `| ${VARIANTS[variant].label} | ${f0(s.rps)} | **${f0(s.cpuUs)}** (${f0(s.cpuMin)}–${f0(s.cpuMax)}) | ${f0(s.loopUs)} + ${f0(s.poolUs)} | ${above ? `${s.cpuUs - above.cpuUs >= 0 ? '+' : ''}${f0(s.cpuUs - above.cpuUs)} µs (${pct(s.cpuUs, above.cpuUs)}); main thread ${s.loopUs - above.loopUs >= 0 ? '+' : ''}${f0(s.loopUs - above.loopUs)} µs` : ''} | ${s.p50}/${s.p99} | ${per} | ${s.errors} |`,
      );
    });
    lines.push('');
    return lines.join('\n');
  }

  function deliveryTable(kind: StoreKind, r: DeliveryResult, single: Map<number, number>): string {
    const lines = [
      `#### ${STORE_NAMES[kind]}: webhook deliveries`,
      '',
      `| ${DELIVERIES.toLocaleString('en')} deliveries to a local receiver | WEBHOOK_CONCURRENCY (per receiver) | deliveries/s (min–max) | against one receiver | Usher CPU µs/delivery | the slow receiver's, meanwhile | duplicates |`,
      '|---|---|---|---|---|---|---|',
    ];
    for (const s of r.scenarios) {
      const one = single.get(s.concurrency);
      const name = `${s.name}${s.concurrency === 16 ? ' (default)' : ''}`;
      const slots = `${s.concurrency} (${Math.max(1, Math.floor(s.concurrency / 4))})`;
      if (s.stalled) {
        const st = s.stalled;
        lines.push(
          `| ${name} | ${slots} | **stalled**: ${st.received} of ${st.of} in ${st.seconds} s; ${st.claimedNotSent} left claimed and not sent${st.failed ? `, ${st.failed} with an error` : ''} | | – | ${s.hanging ? `${f0(s.slowDelivered)} answered` : ''} | ${s.duplicates} |`,
        );
        continue;
      }
      lines.push(
        `| ${name} | ${slots} | **${f0(s.perSecond)}** (${f0(s.perSecondMin)}–${f0(s.perSecondMax)}) | ${s.hanging && one ? (s.perSecond / one).toFixed(2) : ''} | ${f0(s.cpuUs)} | ${s.hanging ? `${f0(s.slowDelivered)} answered` : ''} | ${s.duplicates} |`,
      );
    }
    lines.push(
      '',
      `Yardstick, the same receiver: a bare node:http client POSTing the same kind of body (signed, kept-alive), ${r.bare.map((b) => `${b.inFlight} in flight ${f0(b.perSecond)}/s at ${f0(b.cpuUs)} µs CPU each`).join('; ')}.`,
      '',
    );
    return lines.join('\n');
  }

  const started = new Date();
  const parts: string[] = [];
  const stores = STORES.filter((kind) => kind === 'sqlite' || kind === 'postgres');
  try {
    for (const kind of stores) {
      if (ONLY !== 'deliveries') {
        const signins = await signinPhase(kind);
        parts.push(signinTable(kind, signins));
        console.error(parts.at(-1));
      }
      if (ONLY === 'signins') continue;
      const deliveries = await deliveryPhase(kind);
      const single = new Map(
        deliveries.scenarios.filter((s) => !s.hanging && !s.stalled).map((s) => [s.concurrency, s.perSecond]),
      );
      parts.push(deliveryTable(kind, deliveries, single));
      console.error(parts.at(-1));
    }
  } finally {
    rmSync(outbox, { recursive: true, force: true });
  }
  const generated = [
    `<!-- npm run bench:audit${QUICK ? ' (BENCH_QUICK)' : ''} on ${started.toISOString()}: sign-ins ${ROUNDS} rounds of ${SECONDS} s per variant, ${CONNECTIONS} connections, medians; deliveries ${DELIVERY_ROUNDS} rounds of ${DELIVERIES} each, medians; argon2id m=${HASH.memoryKiB} KiB, t=${HASH.passes}, p=${HASH.parallelism} -->`,
    '',
    `Password hashing: argon2id m=${HASH.memoryKiB} KiB, t=${HASH.passes}, p=${HASH.parallelism} (the tests' parameters, not production's m=19456, t=2) in every variant.`,
    '',
    ...parts,
  ].join('\n');
  console.log(generated);
  if (WRITE) writeDocs(generated);
}

const START = '<!-- bench:audit:start -->';
const END = '<!-- bench:audit:end -->';
const HEADING = '## Round 13 (audit log and webhooks: what they cost)';
const INTRO = `\`npm run bench:audit\` (bench/audit.ts, also the last step of \`npm run bench\`) measures what
recording an account event costs a sign-in, and how fast queued webhook deliveries go out, on each
store.

**Sign-ins.** Four Usher processes side by side, each on its own database with the same 1,000 users,
\`POST /api/signin\` with autocannon (8 connections), measured one after the other in a new order
each round: \`AUDIT_SIGNINS=false\`; \`true\` (the default: the \`signin.succeeded\` record written
in the grant's one statement on PostgreSQL, its transaction on SQLite); \`true\` with a webhook
subscribed to \`user.signed_in\` and the sender left out (each sign-in queues a delivery that nothing
sends: what queuing adds); and the same with the sender on and a local receiver answering 204.
Usher's CPU per sign-in comes from \`/proc\` (the whole process; its main thread and its hashing
threads apart); the last column counts what each database holds afterwards, the check that each
variant did what it says. Password hashing is made cheap so that a statement's cost can show: these
processes are Usher as \`src/run.ts\` serves it, built by the bench with argon2id m=1024 KiB, t=1,
p=1 (the test suite's parameters; production may not go below m=19456, t=2, about 20 ms of CPU a
hash, which would bury everything measured here).

**Deliveries.** Each scenario has its own Usher (\`WEBHOOK_ALLOW_PRIVATE=true\`, \`ENCRYPTION_KEY\`
set, \`WEBHOOK_CONCURRENCY\` 16, the default, or 64; a quarter of it per receiver) and database. N
\`user.created\` deliveries, one per user as a bulk import queues them, are written into the outbox
while Usher runs; a sign-in that queues one more wakes the sender, and a plain \`node:http\` receiver
on 127.0.0.1 answering 204 counts them (and their \`webhook-id\`s, for duplicates): deliveries/s is
until it has the last one, Usher's CPU until the last is marked sent. Then the same with a second
receiver that answers after 2 s, its deliveries interleaved with the first's as events arriving one
by one queue them: the fast receiver's rate against the single-receiver one. A run whose receiver
is still short after 20 s is reported as stalled, with what the outbox held then. A bare
\`node:http\` client POSTing the same kind of signed body to the same receiver is the yardstick.`;

/** Replaces the generated part of Round 13 (appending the section at the end the first time). */
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

if (process.argv[2] === '--serve') await serve();
else if (process.argv[2] === '--bare-post')
  await barePost(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
else await main();
