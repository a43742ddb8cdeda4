// PostgreSQL outages: a 503 UNAVAILABLE within a bounded time, the process stays up, and it
// recovers by itself. The shared test server cannot be stopped under other test files, so a TCP
// proxy in front of it plays the server that goes away and comes back.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { newUser, startApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { freshDatabaseUrl, postgresAvailable, type Store } from '../helpers/stores.ts';

const skip = postgresAvailable ? false : 'TEST_DATABASE_URL is not set';
const CONNECT_TIMEOUT_MS = 500;
const database = (url: string) => ({
  database: {
    poolSize: 4,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    statementTimeoutMs: 2000,
    pooler: 'none' as const,
  },
  databaseUrl: url,
});

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

/** A TCP proxy that can be stopped (every connection cut) and started again on the same port. */
class TcpProxy {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  readonly port: number;
  readonly #target: { host: string; port: number };
  constructor(port: number, target: { host: string; port: number }) {
    this.port = port;
    this.#target = target;
  }
  /** Starting a started proxy, or stopping a stopped one, does nothing: tests may run in any order. */
  async start() {
    if (this.#server) return;
    this.#server = createServer((client) => {
      const upstream = connect(this.#target);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    this.#server.listen(this.port, '127.0.0.1');
    await once(this.#server, 'listening');
  }
  async stop() {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    for (const s of this.#sockets) s.destroy();
    server.close();
    await once(server, 'close');
  }
}

describeUnless(skip, 'Database outage [postgres]', () => {
  test('a port that refuses connections: 503 UNAVAILABLE quickly, /readyz 503, /healthz 200', async () => {
    const refused = await freePort(); // nothing listens there
    const store: Store = { kind: 'postgres', url: `postgres://postgres@127.0.0.1:${refused}/usher` };
    const app = await startApp(store, 'b', database(store.url));
    try {
      const { value: res, ms } = await timed(() => app.get('/api/users/1'));
      assert.equal(res.statusCode, 503);
      assert.deepEqual(res.json(), { error: 'UNAVAILABLE' });
      assert.ok(ms < 5000, `answered in ${ms} ms`);
      assert.equal((await app.get('/readyz')).statusCode, 503);
      assert.equal((await app.get('/readyz')).json().error, 'UNAVAILABLE');
      assert.equal((await app.get('/healthz')).statusCode, 200);
      const signin = await app.post('/api/signin', { email: 'a@example.com', password: 'whatever' });
      assert.equal(signin.statusCode, 503);
      assert.equal(signin.json().error, 'SIGNIN_FAILED');
      const reg = await app.post('/api/users', newUser());
      assert.equal(reg.statusCode, 503);
      assert.equal(reg.json().error, 'UNAVAILABLE');
    } finally {
      await app.close();
    }
  });

  test('a server that accepts but never answers: 503 within the connection timeout', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as { port: number };
    const store: Store = { kind: 'postgres', url: `postgres://postgres@127.0.0.1:${port}/usher` };
    const app = await startApp(store, 'a', database(store.url));
    try {
      const { value: res, ms } = await timed(() => app.get('/api/users/1'));
      assert.equal(res.statusCode, 503);
      assert.ok(ms < CONNECT_TIMEOUT_MS * 10, `answered in ${ms} ms`);
    } finally {
      await app.close();
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  describe('a server that stops and starts again', () => {
    let proxy: TcpProxy;
    let app: TestApp;
    let drop: () => Promise<void> = async () => {};
    let userId: number;

    before(async () => {
      const fresh = await freshDatabaseUrl('postgres');
      drop = fresh.drop;
      const real = new URL(fresh.url);
      proxy = new TcpProxy(await freePort(), { host: real.hostname, port: Number(real.port || 5432) });
      await proxy.start();
      const viaProxy = new URL(fresh.url);
      viaProxy.port = String(proxy.port);
      app = await startApp(
        { kind: 'postgres', url: viaProxy.toString() },
        'b',
        database(viaProxy.toString()),
      );
      // The set-up, not the outage: on a loaded machine a connection through the proxy can take
      // longer than the short timeout under test, and the first registration answer 503. It is
      // asked again (the same user) until the database is reached, for up to 30 s.
      const user = newUser();
      const deadline = Date.now() + 30_000;
      let res = await app.post('/api/users', user);
      while (res.statusCode === 503 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        res = await app.post('/api/users', user);
      }
      assert.equal(res.statusCode, 201, res.body);
      userId = res.json().id;
    });
    after(async () => {
      await app?.close();
      await proxy?.stop();
      await drop();
    });

    test('while it is down: 503 UNAVAILABLE and /readyz 503; the process stays up', async () => {
      await proxy.stop();
      for (let i = 0; i < 3; i++) {
        const res = await app.get(`/api/users/${userId}`);
        assert.equal(res.statusCode, 503);
        assert.deepEqual(res.json(), { error: 'UNAVAILABLE' });
      }
      assert.equal((await app.get('/readyz')).statusCode, 503);
      assert.equal((await app.get('/healthz')).statusCode, 200);
    });

    test('when it is back: requests succeed again without a restart', async () => {
      // Down first, whether or not the test above ran.
      await proxy.stop();
      assert.equal((await app.get(`/api/users/${userId}`)).statusCode, 503);
      await proxy.start();
      const deadline = Date.now() + 30_000;
      let status = 0;
      while (Date.now() < deadline) {
        status = (await app.get(`/api/users/${userId}`)).statusCode;
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status, 200);
      assert.equal((await app.get('/readyz')).statusCode, 200);
    });
  });
});
