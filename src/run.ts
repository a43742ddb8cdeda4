// The process: configuration, then the app, then the port. A bad setting stops here, before listening.
import cluster from 'node:cluster';
import { flushCompileCache } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/database.ts';
import { checkMailTemplates, schemaMigrations } from './features.ts';
import { serveClusterMetrics } from './plugins/metrics.ts';
import { lowerThreadpoolPriority, sizeThreadpool } from './shared/threadpool.ts';

const SHUTDOWN_GRACE_MS = 10_000;

function readConfig(): Config {
  try {
    const config = loadConfig();
    checkMailTemplates(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`usher: configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

function fail(what: string, error: unknown): never {
  console.error(`usher: ${what}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}

/** One process serving the port: in-flight requests finish on SIGTERM/SIGINT, new ones get 503. */
async function serve(config: Config): Promise<void> {
  const app = await buildApp(config);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      app.log.error('shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    app.close().then(
      // The log destination is buffered: write out what is left before exiting.
      () => (app.log as unknown as { flush(cb: () => void): void }).flush(() => process.exit(0)),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // A worker's primary may disconnect it (primary shutting down): treat it as a SIGTERM.
  if (cluster.isWorker) cluster.worker?.on('disconnect', () => shutdown('disconnect'));
  const pool = await lowerThreadpoolPriority(config.threadpool.priority);
  if (config.threadpool.priority === 'idle' && pool.niced > 0)
    app.log.warn(
      pool,
      'hash threads that could not be given SCHED_IDLE (is chrt, from util-linux, installed?) run at a nice value instead',
    );
  // Node writes the compile cache at exit; a process that is killed instead would never save it.
  flushCompileCache();
  // Before the first request, not after: see collectStartupGarbage.
  collectStartupGarbage();
  await app.listen({ host: config.host, port: config.port });
}

/**
 * Starting leaves garbage behind (module sources read, schemas compiled, migrations run) that V8
 * keeps, with the young generation grown to its full size, until its memory reducer sees an idle
 * heap, which on a quiet server may take a long time: a full collection that compacts and
 * shrinks the heap, as the reducer's does, returns it to the system (about 15 MiB of idle RSS,
 * docs/benchmarks.md). V8 hands its `gc` only to contexts created while the flag is set, so it is
 * set just long enough to take `gc` from a new context, and no module ever sees a global `gc`.
 *
 * A collection that reduces memory also drops every object layout (V8's maps) that no live object
 * has, and the optimised code and inline caches that were built for those layouts: code that meets
 * the new layouts afterwards can end up on V8's generic, slowest paths for good. So it runs before
 * the server listens, when no request's code has run yet (a second after listening, as it first
 * did, it cost every later request about a third more instructions: decision 137), and with one
 * `process.nextTick` pending: Node's own `nextTick`, hot during start and on every request, then
 * still has a live tick object, so the layout of its tick objects survives.
 */
function collectStartupGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: object) => void;
  setFlagsFromString('--no-expose-gc');
  process.nextTick(keepTickLayout);
  // The last-resort flavour is the one that compacts and shrinks (the plain major one does not).
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

function keepTickLayout(): void {}

/**
 * The primary of WORKERS=N: migrates once, forks N workers that share the port, replaces a worker
 * that dies, sums the workers' metrics for whichever worker a scrape reaches, and on SIGTERM/SIGINT
 * asks every worker to finish and waits for all of them.
 */
async function supervise(config: Config): Promise<void> {
  // The metrics go over IPC: the advanced serialisation carries what JSON would not (NaN, ±Infinity).
  cluster.setupPrimary({ serialization: 'advanced' });
  serveClusterMetrics();
  const database = openDatabase(config.databaseUrl, config.database);
  try {
    await database.migrate(schemaMigrations());
  } catch (error) {
    // Workers retry by themselves while the database is down; anything else is fatal now.
    console.error(`usher: migrations not applied at start: ${(error as Error).message}`);
  } finally {
    await database.close();
  }

  let stopping = false;
  const fork = () => cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    console.error(`usher: worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
    setTimeout(fork, 500);
  });
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 1000).unref();
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  for (let i = 0; i < config.workers; i++) fork();
}

const config = readConfig();
sizeThreadpool(config.threadpool.size);
if (config.workers > 1 && cluster.isPrimary) {
  supervise(config).catch((error: unknown) => fail('failed to start workers', error));
} else {
  serve(config).catch((error: unknown) => fail('failed to start', error));
}
