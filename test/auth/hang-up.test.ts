// Issue 25: guesses from clients that hang up before their answer leave the same trace as any
// other: judged, counted by the throttle, one audit line and one metric each, and a line in the
// access log. Real sockets, closed by the client right after sending.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { metric, waitUntil } from '../helpers/mail.ts';
import { describeEachStore } from '../helpers/stores.ts';

const WRONG = 'definitely-wrong-1';

/** Sends one sign-in and closes the connection without reading anything. */
function hangUpAfterSending(port: number, body: object): Promise<void> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /api/signin HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
        () => {
          socket.destroy();
          resolve();
        },
      );
    });
    socket.on('error', reject);
  });
}

describeEachStore('Sign-in attempts from clients that hang up', (store) => {
  const throttle = {
    windowMs: 900_000,
    perAccountAddress: 5,
    perAccount: 1000,
    perAddress: 1000,
    concurrentPerAccount: 1000,
    concurrentPerAddress: 1000,
    deviceTtlMs: 30 * 24 * 3600 * 1000,
  };
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startApp(store, 'b', { throttle });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  after(() => t.close());

  test('ISSUE 25: each guess is judged, counted, audited and logged although no one waits for its answer', async () => {
    const u = await register(t);
    const failuresBefore = await metric(t, 'usher_signin_attempts_total', 'outcome="failure"');
    const audited = () =>
      t.logs.filter((l) => l.includes('"event":"signin"') && l.includes(`"userId":"${u.id}"`)).length;
    for (let i = 0; i < throttle.perAccountAddress; i++) {
      await hangUpAfterSending(port, { email: u.email, password: WRONG });
    }
    await waitUntil(() => audited() === throttle.perAccountAddress, 15_000, 'an audit line per guess');
    assert.equal(
      await metric(t, 'usher_signin_attempts_total', 'outcome="failure"'),
      failuresBefore + throttle.perAccountAddress,
    );
    // One access line each: the answer's, or a 499 when the connection was gone before it.
    await waitUntil(
      () =>
        t.logs.filter((l) => l.includes('"url":"/api/signin"') && /"statusCode":(401|499)/.test(l)).length >=
        throttle.perAccountAddress,
      15_000,
      'an access line per guess',
    );
    // And counted: the right password from the same address is now throttled.
    const next = await t.inject({
      method: 'POST',
      url: '/api/signin',
      remoteAddress: '127.0.0.1',
      payload: { email: u.email, password: u.password },
    });
    assert.equal(next.statusCode, 429);
  });
});
