// A real PgBouncer (Debian's package) in transaction mode in front of the test PostgreSQL: the
// pooler Usher's DATABASE_POOLER=transaction is for. Shared by the tests and the benchmarks.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_ADMIN_URL } from './databases.ts';
import { accepting, freePort } from './process.ts';

const CANDIDATES = [process.env.PGBOUNCER, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The PgBouncer binary, or undefined when it is not installed. */
export const PGBOUNCER = CANDIDATES.find((path): path is string => !!path && existsSync(path));

/** Why a PgBouncer test cannot run here, or false when it can. */
export const pgbouncerSkip: string | false = !PG_ADMIN_URL
  ? 'TEST_DATABASE_URL is not set'
  : !PGBOUNCER
    ? 'PgBouncer is not installed (apt-get install pgbouncer)'
    : false;

export interface PgBouncer {
  /** The process id, for its CPU accounting (bench/pooler.ts). */
  readonly pid: number;
  /** `url` (a database URL on the test PostgreSQL) as reached through this PgBouncer. */
  through(url: string): string;
  /** What PgBouncer logged. */
  log(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** Server connections per database and user: few, so that clients share them. */
  poolSize: number;
}

/** Starts PgBouncer in transaction mode on a free loopback port, in front of TEST_DATABASE_URL's server. */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  if (pgbouncerSkip) throw new Error(pgbouncerSkip);
  const upstream = new URL(PG_ADMIN_URL!);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'usher-pgbouncer-'));
  // PgBouncer will not run as root; as root it is told to become the database's own user, who
  // must be able to read its files and write its log.
  const root = process.getuid?.() === 0;
  if (root) chmodSync(dir, 0o777);
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 1000',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const child: ChildProcess = spawn(PGBOUNCER!, root ? ['-u', 'postgres', ini] : [ini], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    try {
      return output + readFileSync(join(dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return output;
    }
  };
  for (let waited = 0; ; waited += 50) {
    if (child.exitCode !== null) throw new Error(`PgBouncer exited (${child.exitCode}): ${log()}`);
    const open = await accepting(port);
    if (open) break;
    if (waited > 10_000) {
      child.kill('SIGKILL');
      throw new Error(`PgBouncer did not listen within 10 s: ${log()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    pid: child.pid!,
    through(url) {
      const pooled = new URL(url);
      pooled.hostname = '127.0.0.1';
      pooled.port = String(port);
      return pooled.toString();
    },
    log,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
