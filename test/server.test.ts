// The real process (CONTRACT "Running it"): `node src/server.ts` serves on PORT, keeps its data across
// a restart, starts with zero set-up on SQLite, and on SIGTERM lets in-flight requests finish and
// exits 0. Every child is killed in `after`, and every wait is bounded.
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { leaksSecret } from './helpers/app.ts';
import { describeEachStore } from './helpers/stores.ts';

const SERVER = join(import.meta.dirname, '..', 'src', 'server.ts');
// Limits on a failure (a server that never listens or never exits), not timings: a loaded machine
// (two CPU burners beside the suite) needs more than 15-20 s to start a server.
const READY_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 10_000;
const SUITE_TIMEOUT_MS = 120_000;

/** A port nothing listens on right now: bind port 0, read the port, release it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      if (address === null || typeof address === 'string') {
        probe.close();
        reject(new Error('no port'));
        return;
      }
      probe.close(() => resolve(address.port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

type Child = ChildProcessByStdio<null, Readable, Readable>;

const running = new Set<Child>();

/** Kills every child still alive; `after` hooks call it so no process outlives the file. */
function killAll(): void {
  for (const child of running) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  running.clear();
}

class ServerProcess {
  readonly child: Child;
  readonly port: number;
  readonly exited: Promise<Exit>;
  stdout = '';
  stderr = '';

  constructor(env: Record<string, string>, cwd: string, port: number) {
    this.port = port;
    this.child = spawn(process.execPath, [SERVER], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'info', PORT: String(port), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(this.child);
    this.child.stdout.on('data', (c: Buffer) => {
      this.stdout += c;
    });
    this.child.stderr.on('data', (c: Buffer) => {
      this.stderr += c;
    });
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        running.delete(this.child);
        resolve({ code, signal });
      });
    });
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  describe(): string {
    return `stdout:\n${this.stdout}\nstderr:\n${this.stderr}`;
  }

  /** Resolves once GET /healthz answers 200; fails if the process exits or the deadline passes. */
  async waitReady(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.alive) throw new Error(`server exited before it was ready\n${this.describe()}`);
      try {
        const res = await fetch(this.url('/healthz'), { signal: AbortSignal.timeout(1000) });
        if (res.status === 200) {
          assert.deepStrictEqual(await res.json(), { status: 'ok' });
          return;
        }
        await res.body?.cancel();
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    throw new Error(`server not ready within ${READY_TIMEOUT_MS} ms\n${this.describe()}`);
  }

  /** Resolves once stdout holds a line matching `pattern`. */
  async waitForLog(pattern: RegExp, timeoutMs = REQUEST_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.stdout.split('\n').some((line) => pattern.test(line))) return;
      if (!this.alive) break;
      await sleep(2);
    }
    throw new Error(`no log line matching ${pattern} within ${timeoutMs} ms\n${this.describe()}`);
  }

  /** Sends `signal` and waits for the exit; kills the process if it does not exit in time. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<Exit> {
    if (this.alive) this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        reject(
          new Error(`server did not exit within ${EXIT_TIMEOUT_MS} ms of ${signal}\n${this.describe()}`),
        );
      }, EXIT_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

async function startServer(env: Record<string, string>, cwd: string): Promise<ServerProcess> {
  const server = new ServerProcess(env, cwd, await freePort());
  await server.waitReady();
  return server;
}

function post(server: ServerProcess, path: string, body: unknown): Promise<Response> {
  return fetch(server.url(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}

function get(server: ServerProcess, path: string): Promise<Response> {
  return fetch(server.url(path), { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
}

let counter = 0;
function newUser() {
  counter += 1;
  return {
    email: `server${counter}.${process.pid}@example.com`,
    name: `Server User ${counter}`,
    password: `server-pass-${counter}-${process.pid}`,
  };
}

describeEachStore('the server process', (store) => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'usher-server-'));
  });
  after(() => {
    killAll();
    rmSync(cwd, { recursive: true, force: true });
  });

  test('CONTRACT: a registered user survives a SIGTERM (exit 0) and a restart on the same database', {
    timeout: SUITE_TIMEOUT_MS,
  }, async () => {
    const env = { DATABASE_URL: store.url };
    const user = newUser();

    const first = await startServer(env, cwd);
    let created: { id: number; email: string; name: string };
    try {
      const res = await post(first, '/api/users', user);
      assert.equal(res.status, 201, await res.clone().text());
      created = (await res.json()) as typeof created;
      assert.equal(res.headers.get('location'), `/api/users/${created.id}`);
      const fetched = await get(first, `/api/users/${created.id}`);
      assert.equal(fetched.status, 200);
    } finally {
      const exit = await first.stop('SIGTERM');
      assert.deepStrictEqual(exit, { code: 0, signal: null }, first.describe());
    }
    assert.ok(!leaksSecret(first.stdout + first.stderr, [user.password]), 'a log line leaks the password');

    const second = await startServer(env, cwd);
    try {
      const res = await get(second, `/api/users/${created.id}`);
      assert.equal(res.status, 200);
      assert.deepStrictEqual(await res.json(), created);

      const signin = await post(second, '/api/signin', { email: user.email, password: user.password });
      assert.equal(signin.status, 200, await signin.clone().text());
      assert.equal(((await signin.json()) as { user: { id: number } }).user.id, created.id);

      const duplicate = await post(second, '/api/users', { ...user, email: user.email.toUpperCase() });
      assert.equal(duplicate.status, 409);
      assert.equal(((await duplicate.json()) as { error: string }).error, 'EMAIL_TAKEN');
    } finally {
      const exit = await second.stop('SIGTERM');
      assert.deepStrictEqual(exit, { code: 0, signal: null }, second.describe());
    }
  });

  test('CONTRACT: SIGTERM lets an in-flight request finish (201), then the process exits 0', {
    timeout: SUITE_TIMEOUT_MS,
  }, async () => {
    const env = { DATABASE_URL: store.url };
    const user = newUser();
    const server = await startServer(env, cwd);
    let exit: Exit;
    let status: number;
    let created: { id: number };
    try {
      // Registration hashes with production argon2id parameters (tens of ms): the signal lands
      // while the handler is still working.
      const inFlight = post(server, '/api/users', user);
      // The access log line comes only when a response is done, so give the slow hash a head start.
      await new Promise((r) => setTimeout(r, 300));
      server.child.kill('SIGTERM');
      const res = await inFlight;
      status = res.status;
      created = (await res.json()) as { id: number };
    } finally {
      exit = await server.stop('SIGTERM');
    }
    assert.equal(status, 201, server.describe());
    assert.deepStrictEqual(exit, { code: 0, signal: null }, server.describe());
    assert.match(server.stdout, /shutting down/);

    // The registration that finished during shutdown was committed.
    const again = await startServer(env, cwd);
    try {
      const res = await get(again, `/api/users/${created.id}`);
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { email: string }).email, user.email);
    } finally {
      assert.equal((await again.stop('SIGTERM')).code, 0);
    }
  });

  test('CONTRACT: SIGINT also stops the server cleanly (exit 0)', { timeout: SUITE_TIMEOUT_MS }, async () => {
    const server = await startServer({ DATABASE_URL: store.url }, cwd);
    const exit = await server.stop('SIGINT');
    assert.deepStrictEqual(exit, { code: 0, signal: null }, server.describe());
  });
});

describe('the server process with zero set-up (SQLite default)', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'usher-zero-'));
  });
  after(() => {
    killAll();
    rmSync(cwd, { recursive: true, force: true });
  });

  test('CONTRACT: without DATABASE_URL the server creates ./data/usher.db under its working directory and serves', {
    timeout: SUITE_TIMEOUT_MS,
  }, async () => {
    // A directory of its own: the other test here starts a server in the suite's, which makes data/.
    const home = mkdtempSync(join(cwd, 'zero-'));
    assert.ok(!existsSync(join(home, 'data')));
    const server = await startServer({}, home);
    try {
      assert.ok(existsSync(join(home, 'data', 'usher.db')), 'data/usher.db was not created under the cwd');
      const user = newUser();
      const res = await post(server, '/api/users', user);
      assert.equal(res.status, 201, await res.clone().text());
      const { id } = (await res.json()) as { id: number };
      assert.equal((await get(server, `/api/users/${id}`)).status, 200);
      const ready = await get(server, '/readyz');
      assert.equal(ready.status, 200);
      assert.deepStrictEqual(await ready.json(), { status: 'ok' });
    } finally {
      const exit = await server.stop('SIGTERM');
      assert.deepStrictEqual(exit, { code: 0, signal: null }, server.describe());
    }
  });

  test('CONTRACT: the server listens on PORT and HOST (127.0.0.1 by default)', {
    timeout: SUITE_TIMEOUT_MS,
  }, async () => {
    const server = new ServerProcess({ HOST: '' }, cwd, await freePort());
    try {
      await server.waitReady();
      const res = await get(server, '/healthz');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    } finally {
      assert.equal((await server.stop('SIGTERM')).code, 0);
    }
  });
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes raw HTTP/1.1 requests on one keep-alive socket and reads `count` responses (bodies sized
 * by Content-Length). `send` is called with a writer so a test can write the second request later.
 */
function rawExchange(
  port: number,
  count: number,
  send: (write: (request: string) => void) => Promise<void>,
): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = Buffer.alloc(0);
    const responses: RawResponse[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`only ${responses.length} of ${count} responses within ${REQUEST_TIMEOUT_MS} ms`));
    }, REQUEST_TIMEOUT_MS);
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(responses);
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [statusLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8');
        buffer = buffer.subarray(end + 4 + length);
        responses.push({ status: Number(statusLine.split(' ')[1]), headers, body });
        if (responses.length === count) finish();
      }
    });
    socket.on('error', (error) => finish(error));
    socket.on('close', () => {
      if (responses.length < count) finish(new Error(`socket closed after ${responses.length} responses`));
    });
    socket.on('connect', () => {
      send((request) => socket.write(request)).catch((error: Error) => finish(error));
    });
  });
}

function rawPost(path: string, body: unknown): string {
  const payload = JSON.stringify(body);
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: keep-alive\r\n\r\n${payload}`
  );
}

// Slow hashing holds a request in flight long enough to act while the server is shutting down:
// the most passes the configuration allows, 0.85 s a hash on a fast 2-core machine (40 passes
// took 0.34 s there, and the registration could finish before the second request was written).
// Normal scheduling for the hash: under SCHED_IDLE (SQLite's default) a machine kept busy by other
// test files can leave a 100-pass hash waiting past the request timeout, and these tests are about
// shutdown, not scheduling.
const SLOW_HASH = { ARGON2_PASSES: '100', HASH_CONCURRENCY: '1', HASH_THREAD_NICE: '0' };

describe('shutdown details', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'usher-shutdown-'));
  });
  after(() => {
    killAll();
    rmSync(cwd, { recursive: true, force: true });
  });

  test('CONTRACT: a request arriving during shutdown gets 503 UNAVAILABLE in the one error shape ({error, message})', {
    timeout: SUITE_TIMEOUT_MS,
  }, async () => {
    const server = await startServer(SLOW_HASH, cwd);
    try {
      const [first, second] = await rawExchange(server.port, 2, async (write) => {
        write(rawPost('/api/users', newUser()));
        // The access log line comes only when a response is done, so give the slow hash a head start.
        await new Promise((r) => setTimeout(r, 300));
        server.child.kill('SIGTERM');
        await server.waitForLog(/shutting down/);
        write(rawPost('/api/users', newUser()));
      });
      assert.equal(first?.status, 201, first?.body);
      assert.equal(second?.status, 503, second?.body);
      const body = JSON.parse(second?.body ?? '');
      assert.deepStrictEqual(Object.keys(body).sort(), ['error', 'message'], second?.body);
      assert.equal(body.error, 'UNAVAILABLE');
    } finally {
      assert.equal((await server.stop('SIGTERM')).code, 0, server.describe());
    }
  });

  test('CONTRACT: after SIGTERM the process exits promptly once in-flight requests finish (idle keep-alive sockets do not hold it)', {
    timeout: SUITE_TIMEOUT_MS,
  }, async () => {
    const server = await startServer(SLOW_HASH, cwd);
    let finishedAt = 0;
    try {
      const inFlight = post(server, '/api/users', newUser());
      // The access log line comes only when a response is done, so give the slow hash a head start.
      await new Promise((r) => setTimeout(r, 300));
      server.child.kill('SIGTERM');
      const res = await inFlight;
      finishedAt = Date.now();
      assert.equal(res.status, 201);
      await res.body?.cancel();
    } finally {
      const exit = await server.stop('SIGTERM');
      assert.equal(exit.code, 0, server.describe());
    }
    const lag = Date.now() - finishedAt;
    assert.ok(lag < 2000, `the process exited ${lag} ms after its last response`);
  });
});
