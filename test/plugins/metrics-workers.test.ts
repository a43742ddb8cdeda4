// WORKERS=2: a scrape reaches one worker at random, and reports the sum over both (CONTRACT), so
// counters do not jump from one scrape to the next. A real server process: the workers, the
// primary and the messages between them are what is tested.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { newUser } from '../helpers/app.ts';
import { waitUntil } from '../helpers/mail.ts';
import { postJson, type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore } from '../helpers/stores.ts';

/** A GET on a connection of its own: the cluster hands each new connection to the next worker. */
function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}

describeEachStore('WORKERS=2: /metrics adds up the workers', (store) => {
  let server: ServerProcess;
  before(async () => {
    // Mail cannot be written (a file is not a folder): what is queued stays waiting, retried.
    server = await startServer({ DATABASE_URL: store.url, WORKERS: '2', MAIL_OUTBOX: '/dev/null/outbox' });
    // Both workers listening: each scrape then sums two.
    await waitUntil(
      async () => sample((await get(`${server.url}/metrics`)).body, 'usher_workers') === 2,
      15_000,
      'both workers in the sum',
    );
  });
  after(() => server.stop('SIGKILL'));

  test('ISSUE 32: after N requests spread over both workers, every scrape counts N, whichever worker answers', async () => {
    const N = 24;
    for (let i = 0; i < N; i++) assert.equal((await get(`${server.url}/no/such/page/${i}`)).status, 404);
    for (let scrape = 0; scrape < 10; scrape++) {
      const res = await get(`${server.url}/metrics`);
      assert.equal(res.status, 200);
      assert.equal(
        sample(res.body, 'usher_http_requests_total{method="GET",route="unmatched",status="404"}'),
        N,
        `scrape ${scrape}`,
      );
      assert.equal(sample(res.body, 'usher_workers'), 2);
    }
    // Sign-in outcomes are there at 0 in the sum too, once per label (not once per worker).
    const text = (await get(`${server.url}/metrics`)).body;
    assert.equal(sample(text, 'usher_signin_attempts_total{outcome="throttled"}'), 0);
    assert.equal(text.match(/^usher_signin_attempts_total\{outcome="throttled"\} /gm)?.length, 1);
  });

  test('ISSUE 32: a gauge every worker reads from the shared database is reported once, not once per worker', async () => {
    const registered = await postJson(`${server.url}/api/users`, newUser());
    assert.equal(registered.status, 201);
    // Its verification mail is retried, not sent, and waits in the outbox every worker reads.
    await waitUntil(
      async () =>
        (sample((await get(`${server.url}/metrics`)).body, 'usher_mail_deliveries_total{outcome="retry"}') ??
          0) >= 1,
      15_000,
      'a delivery attempt',
    );
    for (let scrape = 0; scrape < 6; scrape++) {
      const text = (await get(`${server.url}/metrics`)).body;
      assert.equal(sample(text, 'usher_mail_waiting'), 1, `scrape ${scrape}`);
      // Each worker's own pool is summed: SQLite's one connection per worker.
      if (store.kind === 'sqlite') assert.equal(sample(text, 'usher_db_pool_connections{state="total"}'), 2);
    }
  });
});
