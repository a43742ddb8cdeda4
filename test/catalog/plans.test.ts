// Issue 25: one anonymous list request froze a SQLite server for seconds (no index on the sort
// keys, a count of the table on every request, OFFSET to any depth). These tests run every list
// order through HTTP on a database of tens of thousands of rows, record the SQL the app runs, and
// ask the database how it would run it (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL after
// ANALYZE): each page must be a walk of the sort order's index (no sort, no full scan) and every
// other read a search by key, so no table is counted or sorted. Then the depth bound: in an order
// read by skipping rows, page × size may be at most 10,000 (400 INVALID_QUERY beyond, an empty
// page past the end), while id order of products and users reaches any page through kept counts.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { type KyselyPlugin, type PluginTransformQueryArgs, type RootOperationNode, sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { openDatabase } from '../../src/db/database.ts';
import type { App } from '../../src/shared/fastify.ts';
import { testConfig } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PRODUCTS = 50_000;
const USERS = 40_000;
const REVIEWS = 80_000;
/**
 * Product 1's reviews, three in four: the deepest page (10,000) a fraction of them, as it is for
 * any product where depth matters. (Were it most of them, reading them all and sorting would be
 * PostgreSQL's cheaper plan, and rightly so.)
 */
const REVIEWS_OF_ONE = (REVIEWS * 3) / 4;

/** Keeps every query the app builds, to be compiled and explained afterwards. */
class Recorder implements KyselyPlugin {
  nodes: RootOperationNode[] = [];
  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    this.nodes.push(node);
    return node;
  }
  async transformResult<T>({ result }: { result: T }): Promise<T> {
    return result;
  }
}

interface Explained {
  sql: string;
  /** SQLite: EXPLAIN QUERY PLAN's lines; PostgreSQL: one line per plan node, "Node Type on relation using index (cond)". */
  plan: string[];
}

describeEachStore('list plans at tens of thousands of rows', (store) => {
  const recorder = new Recorder();
  let base: ReturnType<typeof openDatabase>;
  let app: App;

  before(async () => {
    // Seeding takes longer than a request may.
    base = openDatabase(store.url, { ...testConfig(store, 'b').database, statementTimeoutMs: 300_000 });
    app = await buildApp(testConfig(store, 'b'), {
      database: { ...base, db: base.db.withPlugin(recorder) },
      logStream: new Writable({ write: (_chunk, _encoding, done) => done() }),
    });
    const db = base.db;
    if (base.dialect === 'postgres') {
      await sql`insert into users (email, email_key, name, created_at, updated_at)
        select 'seeded' || g || '@example.com', 'seeded' || g || '@example.com', md5(g::text),
               now() - random() * interval '100 days', now()
          from generate_series(1, ${USERS}) g`.execute(db);
      await sql`insert into products (name, description, price, owner_id, created_at, updated_at)
        select md5(g::text), repeat(md5(g::text), 30), (random() * 100000)::int, 1 + g % 100,
               now() - random() * interval '100 days', now()
          from generate_series(1, ${PRODUCTS}) g`.execute(db);
      await sql`insert into reviews (product_id, author_id, rating, text, written_at, updated_at)
        select case when g % 4 = 0 then 2 + g % 500 else 1 end, 1 + g % 100, 1 + g % 5,
               repeat('t', 200), now() - random() * interval '100 days', now()
          from generate_series(1, ${REVIEWS}) g`.execute(db);
      await sql`analyze`.execute(db);
    } else {
      const series = (n: number) =>
        sql`with recursive g(n) as (select 1 union all select n + 1 from g where n < ${n})`;
      const someTime = sql`strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || (abs(random()) % 8640000) || ' seconds')`;
      await sql`${series(USERS)} insert into users (email, email_key, name, created_at, updated_at)
        select 'seeded' || n || '@example.com', 'seeded' || n || '@example.com', hex(randomblob(8)),
               ${someTime}, ${someTime} from g`.execute(db);
      await sql`${series(PRODUCTS)} insert into products (name, description, price, owner_id, created_at, updated_at)
        select hex(randomblob(8)), hex(zeroblob(500)), abs(random()) % 100000, 1 + n % 100, ${someTime}, ${someTime}
          from g`.execute(db);
      await sql`${series(REVIEWS)} insert into reviews (product_id, author_id, rating, text, written_at, updated_at)
        select case when n % 4 = 0 then 2 + n % 500 else 1 end, 1 + n % 100, 1 + n % 5,
               hex(zeroblob(100)), ${someTime}, ${someTime} from g`.execute(db);
    }
  });
  after(async () => {
    await app?.close();
  });

  async function explain(node: RootOperationNode): Promise<Explained> {
    const compiled = base.db.getExecutor().compileQuery(node, { queryId: 'plan' });
    if (base.dialect === 'sqlite') {
      const { rows } = await base.db.executeQuery<{ detail: string }>({
        ...compiled,
        sql: `explain query plan ${compiled.sql}`,
      });
      return { sql: compiled.sql, plan: rows.map((r) => r.detail) };
    }
    const { rows } = await base.db.executeQuery<{ 'QUERY PLAN': [{ Plan: PgNode }] }>({
      ...compiled,
      sql: `explain (format json) ${compiled.sql}`,
    });
    const plan: string[] = [];
    const walk = (n: PgNode) => {
      plan.push(
        [
          n['Node Type'],
          n['Relation Name'] && `on ${n['Relation Name']}`,
          n['Index Name'] && `using ${n['Index Name']}`,
          n['Index Cond'] && `(${n['Index Cond']})`,
        ]
          .filter(Boolean)
          .join(' '),
      );
      for (const child of n.Plans ?? []) walk(child);
    };
    walk(rows[0]!['QUERY PLAN'][0].Plan);
    return { sql: compiled.sql, plan };
  }

  /** GET `url` (expecting 200) and the plans of every read it made. */
  async function plansOf(url: string): Promise<Explained[]> {
    recorder.nodes = [];
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    assert.ok(res.json().length > 0, `${url} should hold rows`);
    const reads = recorder.nodes.filter((n) => n.kind === 'SelectQueryNode' || n.kind === 'RawNode');
    return Promise.all(reads.map(explain));
  }

  /**
   * Every read of a catalog or users table walks an index or searches one by key: never a sort,
   * never a scan of the table other than the page walking one of `indexes` (which the LIMIT
   * stops), and one of them is walked. (The counts tables hold a row per 1,024 ids or per product:
   * PostgreSQL may read such a small table whole.)
   */
  function assertIndexed(url: string, explained: Explained[], table: string, ...indexes: string[]): void {
    const all = explained.map((e) => `${e.sql}\n    ${e.plan.join('\n    ')}`).join('\n');
    let walked = false;
    const readsBaseTable = (q: string) => /from "(products|reviews|users)"/.test(q);
    for (const { plan } of explained.filter((e) => readsBaseTable(e.sql))) {
      for (const line of plan) {
        if (base.dialect === 'sqlite') {
          assert.doesNotMatch(line, /TEMP B-TREE/, `${url} sorts rows:\n${all}`);
          if (/^SCAN /.test(line)) {
            assert.ok(
              indexes.some((index) =>
                new RegExp(`^SCAN ${table} USING (COVERING )?INDEX ${index}$`).test(line),
              ),
              `${url} scans more than its sort index:\n${all}`,
            );
          }
          const walks = (index: string) => line.includes(index === 'PRIMARY KEY' ? index : `INDEX ${index}`);
          if (indexes.some(walks)) walked = true;
        } else {
          assert.doesNotMatch(line, /Sort|Seq Scan|Bitmap/, `${url} sorts or scans rows:\n${all}`);
          if (/Index (Only )?Scan/.test(line) && !line.includes('(')) {
            assert.ok(
              indexes.some((index) => line.endsWith(`using ${index}`)),
              `${url} walks an index other than ${indexes.join(' or ')}:\n${all}`,
            );
          }
          if (indexes.some((index) => line.includes(`using ${index}`))) walked = true;
        }
      }
    }
    assert.ok(walked, `${url} does not walk ${indexes.join(' or ')}:\n${all}`);
  }

  const pages = ['page=1', 'page=100'];
  const pkey = (table: string) => (store.kind === 'sqlite' ? 'PRIMARY KEY' : `${table}_pkey`);

  test('ISSUE 25: every order of products, either way, at page 1 and at the deepest page, walks its index', async () => {
    const index = {
      id: pkey('products'),
      name: 'products_name',
      price: 'products_price',
      createdAt: 'products_created_at',
    };
    for (const [key, name] of Object.entries(index)) {
      for (const sort of [key, `-${key}`]) {
        for (const page of pages) {
          const url = `/api/products?sort=${sort}&size=100&${page}`;
          assertIndexed(url, await plansOf(url), 'products', name);
        }
      }
    }
  });

  test("ISSUE 25: every order of a product's reviews, either way, walks its index from that product's first entry", async () => {
    const index = {
      // For a product with most of the reviews, PostgreSQL may rather walk the primary key (also
      // in id order) and skip the others' reviews; for a rare one it takes the first.
      id: store.kind === 'sqlite' ? ['reviews_product_id'] : ['reviews_product_id', 'reviews_pkey'],
      time: ['reviews_product_written_at'],
      rating: ['reviews_product_rating'],
    };
    for (const [key, names] of Object.entries(index)) {
      for (const sort of [key, `-${key}`]) {
        for (const page of pages) {
          const url = `/api/products/1/reviews?sort=${sort}&size=100&${page}`;
          assertIndexed(url, await plansOf(url), 'reviews', ...names);
        }
      }
    }
  });

  test('ISSUE 25: every order of users, either way, walks its index', async () => {
    const emailIndex = store.kind === 'sqlite' ? 'sqlite_autoindex_users_1' : 'users_email_key_key';
    const index = { id: pkey('users'), name: 'users_name', email: emailIndex, createdAt: 'users_created_at' };
    for (const [key, name] of Object.entries(index)) {
      for (const sort of [key, `-${key}`]) {
        for (const page of pages) {
          const url = `/api/users?sort=${sort}&size=100&${page}`;
          assertIndexed(url, await plansOf(url), 'users', name);
        }
      }
    }
  });

  test('ISSUE 25: X-Total-Count comes from kept counts: no request reads a whole table to count it', async () => {
    for (const url of [
      '/api/products?size=1',
      '/api/products/1/reviews?size=1',
      '/api/users?size=1&sort=name',
    ]) {
      const explained = await plansOf(url);
      const counting = explained.filter((e) => /count\(/i.test(e.sql));
      assert.deepEqual(counting, [], `${url} counts rows`);
    }
    assert.equal(
      (await app.inject({ method: 'GET', url: '/api/products?size=1' })).headers['x-total-count'],
      String(PRODUCTS),
    );
    assert.equal(
      (await app.inject({ method: 'GET', url: '/api/products/1/reviews?size=1' })).headers['x-total-count'],
      String(REVIEWS_OF_ONE),
    );
  });

  test('ISSUE 25: beyond page × size = 10,000 an order of skipped rows is 400 INVALID_QUERY, saying what to do', async () => {
    for (const url of [
      '/api/products?sort=name&size=100&page=101',
      '/api/products?sort=-price&size=100&page=400',
      '/api/products?sort=createdAt&size=7&page=1429',
      '/api/products/1/reviews?sort=-time&size=100&page=101',
      '/api/products/1/reviews?size=100&page=101',
    ]) {
      recorder.nodes = [];
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.json().error, 'INVALID_QUERY', url);
      assert.match(
        res.json().message,
        /^page: page × size may be at most 10000 in this order; sort=\S+ reads it from the other end/,
        url,
      );
      const listed = recorder.nodes.map((n) => base.db.getExecutor().compileQuery(n, { queryId: 'q' }).sql);
      assert.ok(
        listed.every((q) => !/limit/i.test(q)),
        `${url} is refused before any page is read:\n${listed.join('\n')}`,
      );
    }
    assert.match(
      (await app.inject({ method: 'GET', url: '/api/products?sort=name&size=100&page=101' })).json().message,
      /or sort by id, which pages to any depth$/,
    );
    // GET /api/users is a documented endpoint: its errors carry the code alone.
    const users = await app.inject({ method: 'GET', url: '/api/users?sort=email&size=100&page=101' });
    assert.equal(users.statusCode, 400);
    assert.deepEqual(users.json(), { error: 'INVALID_QUERY' });
    // The deepest page allowed is served, with its size.
    const deepest = await app.inject({ method: 'GET', url: '/api/products?sort=createdAt&size=7&page=1428' });
    assert.equal(deepest.statusCode, 200);
    assert.equal(deepest.json().length, 7);
  });

  test('ISSUE 25: a page past the end is still an empty array in every order, with the total', async () => {
    for (const [url, total] of [
      ['/api/products?sort=name&size=100&page=999999999', PRODUCTS],
      ['/api/products?size=100&page=999999999', PRODUCTS],
      ['/api/products/1/reviews?sort=rating&size=100&page=601', REVIEWS_OF_ONE],
      ['/api/users?sort=-createdAt&size=100&page=999999999', USERS],
    ] as const) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.deepEqual(res.json(), [], url);
      assert.equal(res.headers['x-total-count'], String(total), url);
    }
  });

  test("ISSUE 25: in a bounded order, Link's next and last stop at the deepest page served", async () => {
    const links = (header: unknown) =>
      Object.fromEntries(
        String(header)
          .split(', ')
          .map((part) => {
            const [, url, rel] = /^<([^>]*)>; rel="(\w+)"$/.exec(part)!;
            return [rel, url];
          }),
      );
    const first = links(
      (await app.inject({ method: 'GET', url: '/api/products?sort=name&size=100' })).headers.link,
    );
    assert.equal(first.last, '/api/products?sort=name&size=100&page=100');
    const deepest = await app.inject({ method: 'GET', url: '/api/products?sort=name&size=100&page=100' });
    assert.equal(
      deepest.headers['x-total-count'],
      String(PRODUCTS),
      'the total is still the whole collection',
    );
    assert.equal(links(deepest.headers.link).next, undefined);
    // Id order has no bound: last is the real last page.
    const byId = links((await app.inject({ method: 'GET', url: '/api/products?size=100' })).headers.link);
    assert.equal(byId.last, `/api/products?size=100&page=${PRODUCTS / 100}`);
  });

  test('ISSUE 25: id order of products and users serves any page, the rows LIMIT/OFFSET would give', async () => {
    for (const [table, url] of [
      ['products', '/api/products'],
      ['users', '/api/users'],
    ] as const) {
      for (const descending of [false, true]) {
        const page = 377;
        const res = await app.inject({
          method: 'GET',
          url: `${url}?size=100&page=${page}${descending ? '&sort=-id' : ''}`,
        });
        assert.equal(res.statusCode, 200);
        const expected = await base.db
          .selectFrom(table)
          .select('id')
          .orderBy('id', descending ? 'desc' : 'asc')
          .limit(100)
          .offset((page - 1) * 100)
          .execute();
        assert.deepEqual(
          res.json().map((r: { id: number }) => r.id),
          expected.map((r) => Number(r.id)),
          `${url} page ${page}${descending ? ' descending' : ''}`,
        );
      }
    }
  });
});

interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PgNode[];
}
