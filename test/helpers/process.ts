// Real server processes, for what app.inject cannot show: ports, signals, restarts, several instances.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { TEST_DATABASE_TIMEOUTS, TEST_OUTBOX } from './app.ts';

export const SERVER_ENTRY = fileURLToPath(new URL('../../src/server.ts', import.meta.url));

// Ports for servers a test starts, from a slice of 10000-31999 chosen by this process's pid:
// below the kernel's ephemeral range (32768+), so no port-0 socket of any process takes one, and
// apart from the test files running beside this one, which would otherwise race for a port
// between "free" and "listening" (a server then answering /healthz in another's place).
const PORTS_PER_PROCESS = 44;
let nextPort = 10_000 + (process.pid % 500) * PORTS_PER_PROCESS;
const lastPort = nextPort + PORTS_PER_PROCESS - 1;

async function bindable(port: number): Promise<boolean> {
  const server = createServer();
  try {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    server.close();
    await once(server, 'close');
    return true;
  } catch {
    return false;
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` now. */
export function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function freePort(): Promise<number> {
  while (nextPort <= lastPort) {
    const port = nextPort++;
    if (await bindable(port)) return port;
  }
  // More servers than the slice holds: let the kernel choose (the old, racy way).
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
  /** Sends a signal and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/**
 * How long a server may take to answer /healthz, or to exit after a signal, before it counts as
 * stuck. Only a limit on a failure: a server that is up is used at once. 15 s was too short on a
 * loaded 2-core machine (two CPU burners beside a test run): a server still loading its modules was
 * given up on, and one still shutting down was killed, its exit code lost; at a load average of 35
 * a server took 78 s to listen.
 */
const SERVER_LIMIT_MS = 120_000;

export async function startServer(
  env: Record<string, string>,
  timeoutMs = SERVER_LIMIT_MS,
): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      MAIL_OUTBOX: TEST_OUTBOX,
      // Tests register their users from one address, often many at once (NO_REGISTRATION_LIMITS).
      REGISTRATION_MAX_PER_ADDRESS: '1000000',
      REGISTRATION_MAX_CONCURRENT_PER_ADDRESS: '10000',
      REGISTRATION_MAX_CONCURRENT: '10000',
      DATABASE_CONNECT_TIMEOUT_MS: String(TEST_DATABASE_TIMEOUTS.connectTimeoutMs),
      DATABASE_STATEMENT_TIMEOUT_MS: String(TEST_DATABASE_TIMEOUTS.statementTimeoutMs),
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}): ${output}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not listen within ${timeoutMs} ms: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    url,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), SERVER_LIMIT_MS);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** What a finished process printed, and its exit code (null when a signal ended it). */
export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end with `input` on its stdin and PATH plus `env` as its environment,
 * collecting its output; killed after five minutes, so a stuck command fails its test rather than
 * hanging the run. (One minute was too short for `npm install` on a loaded 2-core machine: the
 * packed client's install was killed half-way and failed with no message.)
 */
const RUN_LIMIT_MS = 300_000;

/**
 * The compile cache test/run.ts gives the test processes, passed on to the commands they run (the
 * CLI loads the app's modules at every run): a start without stripping and compiling them again.
 */
const COMPILE_CACHE: Record<string, string> =
  process.env.NODE_COMPILE_CACHE === undefined ? {} : { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE };

export function runProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  input = '',
  cwd?: string,
): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...COMPILE_CACHE, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    // A child that exits before reading its input (a usage error) closes the pipe: EPIPE, not a failure.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, RUN_LIMIT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // 'close', not 'exit': only then has everything the child wrote been read.
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout,
        stderr: killed ? `${stderr}\n[killed after ${RUN_LIMIT_MS / 1000} s]` : stderr,
      });
    });
  });
}

export async function postJson(
  url: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}
