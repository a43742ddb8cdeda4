// The access log's level: probes (/healthz, /readyz) and scrapes (/metrics) that succeed are logged
// at debug, every other request at info (issue 32: a load balancer and Prometheus ask all day).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const DEBUG = pino.levels.values.debug;
const INFO = pino.levels.values.info;

/** The access line of the request with this id, or undefined. */
function lineOf(t: TestApp, id: string): Record<string, unknown> | undefined {
  for (const line of t.logs.flatMap((chunk) => chunk.split('\n'))) {
    if (!line.includes('"msg":"request"') || !line.includes(`"reqId":"${id}"`)) continue;
    return JSON.parse(line) as Record<string, unknown>;
  }
  return undefined;
}

let seq = 0;
async function requestLine(t: TestApp, method: 'GET' | 'HEAD', url: string) {
  const id = `access-log-${++seq}`;
  const res = await t.inject({ method, url, headers: { 'x-request-id': id } });
  return { status: res.statusCode, line: lineOf(t, id) };
}

describeEachStore('access log levels', (store) => {
  let atInfo: TestApp;
  let atDebug: TestApp;
  before(async () => {
    atInfo = await startApp(store, 'b', { logLevel: 'info' });
    atDebug = await startApp(store, 'b', { logLevel: 'debug' });
  });
  after(async () => {
    await atInfo.close();
    await atDebug.close();
  });

  test('ISSUE 32: probes and scrapes are not logged at info, and are at debug', async () => {
    for (const [method, url] of [
      ['GET', '/healthz'],
      ['GET', '/readyz'],
      ['GET', '/metrics'],
      ['HEAD', '/healthz'],
      ['GET', '/healthz?from=lb'],
    ] as const) {
      const quiet = await requestLine(atInfo, method, url);
      assert.equal(quiet.status, 200, `${method} ${url}`);
      assert.equal(quiet.line, undefined, `${method} ${url}: no line at LOG_LEVEL=info`);
      const logged = await requestLine(atDebug, method, url);
      assert.equal(logged.line?.level, DEBUG, `${method} ${url}: a debug line at LOG_LEVEL=debug`);
      assert.equal(logged.line?.statusCode, 200);
    }
  });

  test('ISSUE 32: every other request stays at info, a failed probe included', async () => {
    for (const [method, url, status] of [
      ['GET', '/api/users/987654321', 404],
      ['GET', '/healthzz', 404],
      ['GET', '/openapi.json', 200],
    ] as const) {
      const { status: got, line } = await requestLine(atInfo, method, url);
      assert.equal(got, status, url);
      assert.equal(line?.level, INFO, `${url} at info`);
    }
    // A probe that fails (an unknown method on its path) is worth seeing.
    const id = 'access-log-failed-probe';
    const res = await atInfo.inject({ method: 'POST', url: '/healthz', headers: { 'x-request-id': id } });
    assert.equal(res.statusCode, 404);
    assert.equal(lineOf(atInfo, id)?.level, INFO);
  });
});
