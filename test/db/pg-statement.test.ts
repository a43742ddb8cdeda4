// The hot reads' named statements on PostgreSQL (db/pg-statement.ts): parsed and described once
// per connection, then run as Bind and Execute with values parsed by position. They must give what
// Kysely's own driver gives, keep each connection's parsers to what that connection's server-side
// statement returns, and fail a run (never the process) on a server error, a lost connection or a
// parser that throws. PostgreSQL only: SQLite has its own statement cache (db/sqlite-dialect.ts).
import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { namedStatementRunner } from '../../src/db/pg-statement.ts';
import { named, runPrepared } from '../../src/db/prepared.ts';
import { describeUnless } from '../helpers/skip.ts';
import { freshDatabaseUrl, postgresAvailable } from '../helpers/stores.ts';

describeUnless(!postgresAvailable && 'TEST_DATABASE_URL is not set', 'Named statements on PostgreSQL', () => {
  let url: string;
  let drop: () => Promise<void>;
  let database: Database;
  let admin: pg.Client;
  /** The backend process ids of the test database's other connections (the pool's). */
  const poolBackends = async () =>
    (
      await admin.query<{ pid: number }>(
        'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      )
    ).rows.map((row) => row.pid);

  before(async () => {
    ({ url, drop } = await freshDatabaseUrl('postgres'));
    // One connection: which connection a run takes is then known.
    database = openDatabase(url, { ...loadConfig({}).database, poolSize: 1 });
    admin = new pg.Client(url);
    await admin.connect();
  });

  /** A table of one row of its own, so that no test sees another's schema change. */
  let tables = 0;
  const probe = async () => {
    const name = `probe_${++tables}`;
    await admin.query(`create table ${name} (id int8 primary key, n int8, t text, at timestamptz, gone text);
      insert into ${name} values (1, 9007199254740993, 'ünïcode', '2026-11-24T10:11:12.345678Z', null)`);
    return name;
  };
  after(async () => {
    await admin?.end();
    await database?.close();
    await drop?.();
  });

  const select = (text: string) => named(CompiledQuery.raw(text, []));
  /** A run through the server's own path: runPrepared on the database's Kysely instance. */
  const run = (query: ReturnType<typeof select>, parameters: unknown[]) =>
    Promise.resolve(runPrepared(database.db, query, parameters));

  test('values come back as Kysely gives them, on the first run (described) and on later ones (not)', async () => {
    const table = await probe();
    const query = select(`select id, n, t, at, gone from ${table} where id = $1`);
    const kysely = await sql<
      Record<string, unknown>
    >`select id, n, t, at, gone from ${sql.table(table)} where id = ${1n}`.execute(database.db);
    const expected = kysely.rows.map((row) => Object.values(row));
    assert.equal(typeof expected[0]![0], 'bigint');
    assert.equal(expected[0]![1], 9007199254740993n, 'an int8 above 2^53 keeps every digit');
    assert.ok(expected[0]![3] instanceof Date);
    for (let n = 1; n <= 3; n++) assert.deepEqual(await run(query, [1n]), expected, `run ${n}`);
    assert.deepEqual(await run(query, [2n]), [], 'no row');
  });

  test("a schema change under a prepared statement: refused on its connection, then prepared and described afresh on a new one (never parsed with the old column's parser)", async () => {
    const table = await probe();
    const query = select(`select n from ${table} where id = $1`);
    assert.deepEqual(await run(query, [1n]), [[9007199254740993n]]);
    await admin.query(`alter table ${table} alter column n type text using n::text`);
    await assert.rejects(run(query, [1n]), { code: '0A000' });
    // The failed run's connection was not given back to the pool: the next run prepares again.
    assert.deepEqual(await run(query, [1n]), [['9007199254740993']]);
  });

  test("a server error fails the run with PostgreSQL's code, and the next run is answered", async () => {
    const query = select('select 1 / ($1::int - 1) as q');
    await assert.rejects(run(query, [1]), { code: '22012' });
    assert.deepEqual(await run(query, [2]), [[1]]);
  });

  test('the connection terminated during a run: the run fails, the next one is answered on a new connection', async () => {
    const slow = select('select pg_sleep($1::float8) is null as slept');
    const running = run(slow, [5]);
    let backends: number[] = [];
    for (let i = 0; i < 100 && backends.length === 0; i++) {
      backends = (
        await admin.query<{ pid: number }>(
          "select pid from pg_stat_activity where datname = current_database() and query like 'select pg_sleep%' and state = 'active'",
        )
      ).rows.map((row) => row.pid);
      if (backends.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(backends.length, 1, 'the run is on the server');
    // Expected before the termination: the run may fail before the terminating query returns.
    const refused = assert.rejects(running, { code: '57P01' });
    await admin.query('select pg_terminate_backend($1)', [backends[0]]);
    await refused;
    assert.deepEqual(await run(slow, [0]), [[false]]);
    assert.deepEqual(await poolBackends().then((pids) => pids.includes(backends[0]!)), false);
  });

  test("a column parser that throws fails the run with its error, and neither the socket's handler nor the process sees it", async () => {
    const table = await probe();
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on('error', () => {});
    const broken = new Error('unparseable');
    const runNamed = namedStatementRunner(
      pool,
      (oid, format) => {
        if (oid === pg.types.builtins.TEXT)
          return () => {
            throw broken;
          };
        return pg.types.getTypeParser(oid, format) as (text: string) => unknown;
      },
      { unnamed: false },
    );
    let uncaught: unknown;
    const onUncaught = (error: unknown) => {
      uncaught = error;
    };
    process.on('uncaughtException', onUncaught);
    try {
      await assert.rejects(runNamed(`${table}_t`, `select t from ${table} where id = $1`, [1n]), broken);
      // A statement without a text column on the same pool is answered.
      assert.deepEqual(await runNamed(`${table}_id`, `select id from ${table} where id = $1`, [1n]), [['1']]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await pool.end();
    }
    assert.equal(uncaught, undefined);
  });
});

describeUnless(
  !postgresAvailable && 'TEST_DATABASE_URL is not set',
  'Named statements: a value pg cannot send',
  () => {
    // The first run on a new client is written from the socket's data handler once the client has
    // connected: a throw there would escape the run (it hung this test before the values were
    // converted up front), hence a timeout rather than a hang.
    test('fails the run with the error, once, and the pool answers the next run', {
      timeout: 30_000,
    }, async () => {
      const { url, drop } = await freshDatabaseUrl('postgres');
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      pool.on('error', () => {});
      const runNamed = namedStatementRunner(pool, (oid, format) => pg.types.getTypeParser(oid, format), {
        unnamed: false,
      });
      const unsendable = new Error('unsendable');
      try {
        await assert.rejects(
          runNamed('echo', 'select $1::text as v', [
            {
              toPostgres() {
                throw unsendable;
              },
            },
          ]),
          unsendable,
        );
        assert.deepEqual(await runNamed('echo', 'select $1::text as v', ['x']), [['x']]);
      } finally {
        await pool.end();
        await drop();
      }
    });
  },
);

describeUnless(
  !postgresAvailable && 'TEST_DATABASE_URL is not set',
  'Named statements on a pool of their own',
  () => {
    let url: string;
    let drop: () => Promise<void>;
    before(async () => {
      ({ url, drop } = await freshDatabaseUrl('postgres'));
    });
    after(() => drop?.());
    const parserOf = (oid: number, format: 'text' | 'binary') =>
      pg.types.getTypeParser(oid, format) as (text: string) => unknown;

    test("the connection lost mid-run without a word from the server (a network drop), on a pool that listens for no client's errors: the run fails, nothing is thrown from the socket's handler", async () => {
      // PostgreSQL through a TCP relay that the test cuts: the client sees its socket close with
      // no ErrorResponse first, the one case in which pg emits 'error' on a checked-out client.
      const target = new URL(url);
      const sockets = new Set<Socket>();
      const relay = createServer((inbound) => {
        const outbound = connect(Number(target.port || 5432), target.hostname);
        for (const socket of [inbound, outbound]) {
          sockets.add(socket);
          socket.on('error', () => {});
        }
        inbound.pipe(outbound).pipe(inbound);
      });
      await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
      const relayed = new URL(url);
      relayed.host = `127.0.0.1:${(relay.address() as AddressInfo).port}`;
      // No 'connect' listener here (openDatabase adds one): the runner must not need it.
      const pool = new pg.Pool({ connectionString: relayed.toString(), max: 1 });
      pool.on('error', () => {});
      const runNamed = namedStatementRunner(pool, parserOf, { unnamed: false });
      let uncaught: unknown;
      const onUncaught = (error: unknown) => {
        uncaught = error;
      };
      process.on('uncaughtException', onUncaught);
      try {
        assert.deepEqual(await runNamed('held', 'select pg_sleep($1::float8) is null as held', [0]), [
          [false],
        ]);
        const running = runNamed('held', 'select pg_sleep($1::float8) is null as held', [5]);
        const refused = assert.rejects(running, /Connection terminated unexpectedly/);
        // Cut once the run is on the server (a fixed 100 ms stood here: on a loaded machine the
        // cut could come before the run was sent).
        const watcher = new pg.Client({ connectionString: url });
        await watcher.connect();
        try {
          const deadline = Date.now() + 20_000;
          for (;;) {
            const { rows } = await watcher.query(
              "select 1 from pg_stat_activity where datname = current_database() and query like 'select pg_sleep%' and state = 'active'",
            );
            if (rows.length > 0) break;
            assert.ok(Date.now() < deadline, 'the held run reached the server within 20 s');
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        } finally {
          await watcher.end();
        }
        for (const socket of sockets) socket.destroy();
        await refused;
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(await runNamed('held', 'select pg_sleep($1::float8) is null as held', [0]), [
          [false],
        ]);
      } finally {
        process.off('uncaughtException', onUncaught);
        await pool.end();
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => relay.close(resolve));
      }
      assert.equal(uncaught, undefined);
    });

    test("with pg's query_timeout: a run slower than it fails with pg's timeout, and a run that answers leaves no timer behind", async () => {
      // idleTimeoutMillis 0: the pool keeps no timer for an idle client, so a timer left is pg's.
      const pool = new pg.Pool({ connectionString: url, max: 1, query_timeout: 300, idleTimeoutMillis: 0 });
      pool.on('error', () => {});
      const runNamed = namedStatementRunner(pool, parserOf, { unnamed: false });
      const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
      try {
        await assert.rejects(
          runNamed('slow', 'select pg_sleep($1::float8) is null as slept', [2]),
          /Query read timeout/,
        );
        assert.deepEqual(await runNamed('slow', 'select pg_sleep($1::float8) is null as slept', [0]), [
          [false],
        ]);
        const before = timers();
        assert.deepEqual(await runNamed('slow', 'select pg_sleep($1::float8) is null as slept', [0]), [
          [false],
        ]);
        assert.equal(timers(), before, "pg's read timer was cleared when the run answered");
      } finally {
        await pool.end();
      }
    });
  },
);

describe('Named statements: names', () => {
  test('the same SQL gets the same name; other SQL another', () => {
    const a = named(CompiledQuery.raw('select 1', []));
    assert.match(a.name, /^usher_[A-Za-z0-9_-]{24}$/);
    assert.equal(named(CompiledQuery.raw('select 1', [])).name, a.name);
    assert.notEqual(named(CompiledQuery.raw('select 2', [])).name, a.name);
  });
});
