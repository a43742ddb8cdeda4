// X-Request-Id (CONTRACT): 1 to 128 characters of [A-Za-z0-9._:-] are taken as the request's id;
// anything else, or none, gets a new one. Either way the answer carries it (exposed to CORS
// callers too) and the access line logs it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ORIGIN = 'https://app.example';

/** The access lines (msg "request") the app wrote for `url`. */
function accessLines(t: TestApp, url: string): Array<Record<string, unknown>> {
  return t.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.url === url);
}

let seq = 0;
/** A URL no other request of this file asks, so its access line is its own. */
const fresh = () => `/api/users/${900_000_000 + ++seq}`;

describeEachStore('X-Request-Id', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b', { corsOrigins: [ORIGIN] });
  });
  after(() => t.close());

  const ask = (url: string, id?: string): Promise<LightMyRequestResponse> =>
    t.inject({ method: 'GET', url, headers: id === undefined ? {} : { 'x-request-id': id } });

  test('ISSUE 32: a well-formed X-Request-Id is echoed and is the access line reqId', async () => {
    for (const id of ['abc-123', 'A.b_c:d-9', 'x'.repeat(128), '7']) {
      const url = fresh();
      const res = await ask(url, id);
      assert.equal(res.statusCode, 404);
      assert.equal(res.headers['x-request-id'], id);
      const [line] = accessLines(t, url);
      assert.equal(line?.reqId, id, `${id}: the access line carries it`);
    }
  });

  test('ISSUE 32: an ill-formed one (too long, other characters, empty) is replaced by a new id, not refused', async () => {
    for (const id of ['x'.repeat(129), 'has space', 'a/b', 'quote"d', 'é', '']) {
      const url = fresh();
      const res = await ask(url, id);
      assert.equal(res.statusCode, 404, `${JSON.stringify(id)} is answered as without it`);
      const echoed = res.headers['x-request-id'] as string;
      assert.match(echoed, UUID, JSON.stringify(id));
      assert.equal(accessLines(t, url)[0]?.reqId, echoed);
    }
  });

  test('ISSUE 32: without one, each answer carries an id of its own, on successes and refusals alike', async () => {
    const ids = new Set<string>();
    for (const res of [
      await ask('/healthz'),
      await ask(fresh()),
      await t.post('/api/signin', '{'),
      await t.inject({ method: 'GET', url: '/healthz', headers: { host: '' } }),
    ]) {
      const id = res.headers['x-request-id'] as string;
      assert.match(id, UUID, `${res.statusCode}`);
      ids.add(id);
    }
    assert.equal(ids.size, 4);
  });

  test('ISSUE 48: the new ids are random version 4 UUIDs, all different, past a batch of them', async () => {
    // Ids are made 256 at a time (plugins/request-logger.ts): 600 answers use three batches.
    const ids = new Set<string>();
    const hexDigits = new Map<string, number>();
    for (let i = 0; i < 600; i++) {
      const id = (await ask('/healthz')).headers['x-request-id'] as string;
      assert.match(id, UUID);
      ids.add(id);
      // The 30 digits neither the version nor the variant sets.
      for (const digit of id.replaceAll('-', '').slice(0, 12) +
        id.replaceAll('-', '').slice(13, 16) +
        id.replaceAll('-', '').slice(17))
        hexDigits.set(digit, (hexDigits.get(digit) ?? 0) + 1);
    }
    assert.equal(ids.size, 600);
    // 18,000 random hex digits: each of the 16 about 1,125 times (a fixed or skewed batch would not be).
    assert.equal(hexDigits.size, 16);
    for (const [digit, count] of hexDigits) assert.ok(count > 900 && count < 1350, `${digit}: ${count}`);
  });

  test('ISSUE 32: CORS callers may send X-Request-Id and read it back', async () => {
    const preflight = await t.inject({
      method: 'OPTIONS',
      url: '/api/session',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-request-id',
      },
    });
    assert.equal(preflight.statusCode, 204);
    assert.match(String(preflight.headers['access-control-allow-headers']), /(^|,\s*)x-request-id(,|$)/i);
    const res = await t.inject({
      method: 'GET',
      url: '/healthz',
      headers: { origin: ORIGIN, 'x-request-id': 'from-app-1' },
    });
    assert.equal(res.headers['x-request-id'], 'from-app-1');
    assert.match(String(res.headers['access-control-expose-headers']), /(^|,\s*)x-request-id(,|$)/i);
  });
});
