// Usher behind a real PgBouncer (Debian's package, 1.18) in transaction mode, with
// DATABASE_POOLER=transaction: the pooler hands each transaction (and each statement outside one)
// whichever of its few server connections is free, so nothing may rest on the session: no named
// statements, no startup parameters, no session-level lock or setting.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { schemaMigrations } from '../../src/features.ts';
import { newUser } from '../helpers/app.ts';
import { type PgBouncer, pgbouncerSkip, startPgBouncer } from '../helpers/pgbouncer.ts';
import { postJson, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';
import { freshDatabaseUrl } from '../helpers/stores.ts';

/** Rows of `text` run on `url` directly (not through the pooler). */
async function direct<T>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

describeUnless(pgbouncerSkip, 'Three instances through PgBouncer in transaction mode [postgres]', () => {
  let bouncer: PgBouncer;
  let servers: ServerProcess[] = [];
  let url = '';
  let drop: () => Promise<void> = async () => {};

  before(async () => {
    // Two server connections for three instances of four clients each: clients share them all.
    bouncer = await startPgBouncer({ poolSize: 2 });
    const fresh = await freshDatabaseUrl('postgres');
    url = fresh.url;
    drop = fresh.drop;
    // All three start at once on the empty database, through the pooler.
    servers = await Promise.all(
      [1, 2, 3].map(() =>
        startServer(
          {
            DATABASE_URL: bouncer.through(url),
            DATABASE_POOLER: 'transaction',
            DATABASE_POOL_SIZE: '4',
            PROFILE: 'b',
            // Every sign-in here comes from one address, many at once.
            SIGNIN_MAX_CONCURRENT_PER_ADDRESS: '10000',
            SIGNIN_MAX_CONCURRENT_PER_ACCOUNT: '10000',
          },
          60_000,
        ),
      ),
    );
  });
  after(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await bouncer?.stop();
    await drop();
  });

  test('they migrated the fresh database once, all serve, and no lock is left on any server connection', async () => {
    for (const server of servers)
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200, server.output());
    const applied = await direct<{ name: string }>(url, 'select name from kysely_migration order by name');
    const names = Object.keys(schemaMigrations()('postgres')).sort();
    assert.deepEqual(
      applied.map((row) => row.name),
      names,
    );
    const locks = await direct<{ count: string }>(
      url,
      "select count(*) from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())",
    );
    assert.equal(Number(locks[0]!.count), 0);
  });

  test('sign-ins and lookups on the benchmark’s paths, many at once over every instance, all answer (no statement named on another connection)', async () => {
    const users = await Promise.all(
      // Two sign-ins per account at most: more at once from one address is what the throttle stops.
      Array.from({ length: 30 }, async (_, i) => {
        const body = newUser();
        const created = await postJson(`${servers[i % 3]!.url}/api/users`, body);
        assert.equal(created.status, 201, JSON.stringify(created.json));
        return { ...body, id: String(created.json.id) };
      }),
    );
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 240 }, async (_, i) => {
        const server = servers[i % 3]!;
        const user = users[i % users.length]!;
        if (i % 4 === 0) {
          const signin = await postJson(`${server.url}/api/sessions`, {
            email: user.email,
            password: user.password,
          });
          statuses.push(signin.status);
          const session = await fetch(`${servers[(i + 1) % 3]!.url}/api/session`, {
            headers: { authorization: `Bearer ${signin.json.token}` },
          });
          statuses.push(session.status);
          await session.arrayBuffer();
        } else {
          const lookup = await fetch(`${server.url}/api/users/${user.id}`);
          statuses.push(lookup.status);
          assert.equal(((await lookup.json()) as { email: string }).email, user.email);
        }
      }),
    );
    const failed = statuses.filter((status) => status !== 200 && status !== 201);
    assert.deepEqual(failed, [], servers.map((s) => s.output().slice(-3000)).join('\n'));
    for (const server of servers) assert.doesNotMatch(server.output(), /prepared statement/);
  });
});

describeUnless(
  pgbouncerSkip,
  'The statement timeout through PgBouncer in transaction mode [postgres]',
  () => {
    let bouncer: PgBouncer;
    let database: Database;
    let url = '';
    let drop: () => Promise<void> = async () => {};

    before(async () => {
      bouncer = await startPgBouncer({ poolSize: 1 });
      const fresh = await freshDatabaseUrl('postgres');
      url = fresh.url;
      drop = fresh.drop;
      database = openDatabase(bouncer.through(url), {
        ...loadConfig({}).database,
        statementTimeoutMs: 300,
        pooler: 'transaction',
      });
    });
    after(async () => {
      await database?.close();
      await bouncer?.stop();
      await drop();
    });

    test('is taken by each transaction, and left on no server connection', async () => {
      const inside = await database.db
        .transaction()
        .execute((trx) => sql<{ statement_timeout: string }>`show statement_timeout`.execute(trx));
      assert.equal(inside.rows[0]!.statement_timeout, '300ms');
      // Outside a transaction the server's own setting holds, as for any other client of the pooler.
      const serverDefault = await direct<{ statement_timeout: string }>(url, 'show statement_timeout');
      const outside = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(database.db);
      assert.equal(outside.rows[0]!.statement_timeout, serverDefault[0]!.statement_timeout);
    });

    test('cancels a transaction’s statement that runs past it', async () => {
      await assert.rejects(
        database.db.transaction().execute((trx) => sql`select pg_sleep(2)`.execute(trx)),
        (error: { code?: string }) => error.code === '57014',
      );
    });
  },
);

describeUnless(pgbouncerSkip, 'The migration lock through PgBouncer in transaction mode [postgres]', () => {
  let bouncer: PgBouncer;
  let url = '';
  let drop: () => Promise<void> = async () => {};

  before(async () => {
    bouncer = await startPgBouncer({ poolSize: 2 });
    const fresh = await freshDatabaseUrl('postgres');
    url = fresh.url;
    drop = fresh.drop;
  });
  after(async () => {
    await bouncer?.stop();
    await drop();
  });

  test('is waited for inside the migrations’ transaction, so it ends with it whichever server connection ran it', async () => {
    // Another instance (a direct session here) holds the lock: Usher's migration must wait for it.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    const database = openDatabase(bouncer.through(url), {
      ...loadConfig({}).database,
      pooler: 'transaction',
    });
    try {
      await holder.query('select pg_advisory_lock(3853314791062309107)');
      const migrated = database.migrate(schemaMigrations());
      let waiting: { query: string; in_transaction: boolean }[] = [];
      for (let tries = 0; tries < 200 && waiting.length === 0; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        waiting = (
          await holder.query(
            `select query, xact_start < query_start as in_transaction from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`,
          )
        ).rows;
      }
      // A transaction-level lock, taken after the transaction began: a session-level one (what
      // Kysely takes) would outlive a crash on a pooled server connection.
      assert.equal(waiting.length, 1, 'the migration waits for the lock');
      assert.match(waiting[0]!.query, /pg_advisory_xact_lock/);
      assert.equal(waiting[0]!.in_transaction, true);
      await holder.query('select pg_advisory_unlock(3853314791062309107)');
      await migrated;
      const left = await holder.query(
        "select count(*)::int as count from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())",
      );
      assert.equal(left.rows[0].count, 0);
    } finally {
      await database.close();
      await holder.end();
    }
  });
});

describeUnless(
  pgbouncerSkip,
  'Through PgBouncer in transaction mode without DATABASE_POOLER [postgres]',
  () => {
    let bouncer: PgBouncer;
    let url = '';
    let drop: () => Promise<void> = async () => {};

    before(async () => {
      bouncer = await startPgBouncer({ poolSize: 2 });
      const fresh = await freshDatabaseUrl('postgres');
      url = fresh.url;
      drop = fresh.drop;
    });
    after(async () => {
      await bouncer?.stop();
      await drop();
    });

    test('Usher does not start, and says which setting it needs', async () => {
      await assert.rejects(
        startServer({ DATABASE_URL: bouncer.through(url) }),
        /set DATABASE_POOLER=transaction/,
      );
    });

    test('a URL that says pgbouncer=true chooses the transaction mode by itself', async () => {
      const pooled = new URL(bouncer.through(url));
      pooled.searchParams.set('pgbouncer', 'true');
      const server = await startServer({ DATABASE_URL: pooled.toString() }, 60_000);
      try {
        const body = newUser();
        const created = await postJson(`${server.url}/api/users`, body);
        assert.equal(created.status, 201);
        const signin = await postJson(`${server.url}/api/sessions`, {
          email: body.email,
          password: body.password,
        });
        assert.equal(signin.status, 201);
      } finally {
        await server.stop();
      }
    });
  },
);
