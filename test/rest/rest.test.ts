// POST /rest (SPEC 4.1, CONTRACT "Documented endpoints"): profile B only; always 200
// {"restSupport": <boolean>} as application/json; charset=utf-8, true only for a JSON object whose
// email is a string, and nothing else echoed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const JSON_UTF8 = 'application/json; charset=utf-8';

function assertProbe(res: LightMyRequestResponse, expected: boolean): void {
  assert.equal(res.statusCode, 200, `status ${res.statusCode}: ${res.body}`);
  assert.equal(res.headers['content-type'], JSON_UTF8);
  const body = res.json();
  assert.deepStrictEqual(Object.keys(body), ['restSupport']);
  assert.deepStrictEqual(body, { restSupport: expected });
}

/** Sends `payload` as-is (a string or Buffer) with exactly the given headers. */
function send(t: TestApp, payload: string | Buffer, headers: Record<string, string>) {
  return t.inject({ method: 'POST', url: '/rest', headers, payload });
}

const asJson = (payload: string) => ({ payload, headers: { 'content-type': 'application/json' } });

describeEachStore('POST /rest, profile B', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
  });
  after(() => t.close());

  test('CONTRACT: /rest answers true for a JSON object whose email is a string', async () => {
    assertProbe(await t.post('/rest', { email: 'someone@example.com' }), true);
  });

  test('CONTRACT: /rest answers true for any string email, even an empty or odd one', async () => {
    assertProbe(await t.post('/rest', { email: '' }), true);
    assertProbe(await t.post('/rest', { email: 'not an address' }), true);
  });

  test('CONTRACT: /rest ignores extra fields in the body', async () => {
    assertProbe(
      await t.post('/rest', { email: 'a@example.com', name: 'A', password: 'secret-pass', id: 7 }),
      true,
    );
  });

  test('CONTRACT: /rest echoes nothing else (response keys are exactly restSupport)', async () => {
    const res = await t.post('/rest', {
      email: 'echo@example.com',
      name: 'Echo Name',
      password: 'echo-password-1',
    });
    assertProbe(res, true);
    assert.ok(!res.body.includes('echo@example.com'));
    assert.ok(!res.body.includes('Echo Name'));
    assert.ok(!res.body.includes('echo-password-1'));
  });

  test('CONTRACT: /rest accepts application/json with charset=UTF-8', async () => {
    const body = JSON.stringify({ email: 'a@example.com' });
    assertProbe(await send(t, body, { 'content-type': 'application/json; charset=UTF-8' }), true);
    assertProbe(await send(t, body, { 'content-type': 'application/json; charset=utf-8' }), true);
  });

  test('CONTRACT: /rest accepts application/json without a charset', async () => {
    assertProbe(
      await send(t, JSON.stringify({ email: 'a@example.com' }), { 'content-type': 'application/json' }),
      true,
    );
  });

  test('CONTRACT: /rest answers false when email is missing', async () => {
    assertProbe(await t.post('/rest', {}), false);
    assertProbe(await t.post('/rest', { name: 'No Email' }), false);
  });

  test('CONTRACT: /rest answers false when email is a number', async () => {
    assertProbe(await t.post('/rest', { email: 42 }), false);
  });

  test('CONTRACT: /rest answers false when email is null', async () => {
    assertProbe(await t.post('/rest', { email: null }), false);
  });

  test('CONTRACT: /rest answers false when email is an object', async () => {
    assertProbe(await t.post('/rest', { email: { address: 'a@example.com' } }), false);
  });

  test('CONTRACT: /rest answers false when email is an array or boolean', async () => {
    assertProbe(await t.post('/rest', { email: ['a@example.com'] }), false);
    assertProbe(await t.post('/rest', { email: true }), false);
  });

  test('CONTRACT: /rest answers false for a JSON array body', async () => {
    const { payload, headers } = asJson(JSON.stringify([{ email: 'a@example.com' }]));
    assertProbe(await send(t, payload, headers), false);
  });

  test('CONTRACT: /rest answers false for a JSON string body', async () => {
    const { payload, headers } = asJson(JSON.stringify('a@example.com'));
    assertProbe(await send(t, payload, headers), false);
  });

  test('CONTRACT: /rest answers false for a JSON null body', async () => {
    const { payload, headers } = asJson('null');
    assertProbe(await send(t, payload, headers), false);
  });

  test('CONTRACT: /rest answers false for a JSON number or boolean body', async () => {
    assertProbe(await send(t, '42', { 'content-type': 'application/json' }), false);
    assertProbe(await send(t, 'true', { 'content-type': 'application/json' }), false);
  });

  test('CONTRACT: /rest answers false for a malformed body', async () => {
    for (const bad of ['{', '{"email":', "{'email':'a@example.com'}", '{"email":"a"}}', 'email=a']) {
      const { payload, headers } = asJson(bad);
      assertProbe(await send(t, payload, headers), false);
    }
  });

  test('CONTRACT: /rest answers false for an empty body with a JSON content type', async () => {
    assertProbe(await send(t, '', { 'content-type': 'application/json' }), false);
    assertProbe(
      await t.inject({ method: 'POST', url: '/rest', headers: { 'content-type': 'application/json' } }),
      false,
    );
  });

  test('CONTRACT: /rest answers false for a text/plain content type', async () => {
    assertProbe(
      await send(t, JSON.stringify({ email: 'a@example.com' }), { 'content-type': 'text/plain' }),
      false,
    );
  });

  test('CONTRACT: /rest answers false for another non-JSON content type', async () => {
    assertProbe(
      await send(t, 'email=a%40example.com', { 'content-type': 'application/x-www-form-urlencoded' }),
      false,
    );
  });

  test('CONTRACT: /rest answers false for a body with no content type', async () => {
    assertProbe(await send(t, Buffer.from(JSON.stringify({ email: 'a@example.com' })), {}), false);
  });

  // The probe reads a user object: 32 KiB (src/shared/body-limits.ts, decision 155), where it read
  // 1 MiB before issue 25. A larger body is unreadable, and so `false`, like any other.
  const REST_LIMIT = 32 * 1024;
  const paddedTo = (bytes: number) => {
    const prefix = '{"email":"a@example.com","pad":"';
    return `${prefix}${'x'.repeat(bytes - prefix.length - 2)}"}`;
  };

  test('CONTRACT: /rest answers false for a body over 1 MiB', async () => {
    const big = JSON.stringify({ email: 'a@example.com', pad: 'x'.repeat(1024 * 1024) });
    assertProbe(await send(t, big, { 'content-type': 'application/json' }), false);
  });

  test('CONTRACT: /rest answers false for a body one byte over its 32 KiB limit', async () => {
    const body = paddedTo(REST_LIMIT + 1);
    assert.equal(Buffer.byteLength(body), REST_LIMIT + 1);
    assertProbe(await send(t, body, { 'content-type': 'application/json' }), false);
  });

  test('CONTRACT: /rest answers true for a body of exactly its 32 KiB limit', async () => {
    const body = paddedTo(REST_LIMIT);
    assert.equal(Buffer.byteLength(body), REST_LIMIT);
    assertProbe(await send(t, body, { 'content-type': 'application/json' }), true);
  });

  test('CONTRACT: /rest answers false for a prototype-poisoning body (__proto__)', async () => {
    const { payload, headers } = asJson('{"__proto__":{"x":1},"email":"a"}');
    assertProbe(await send(t, payload, headers), false);
  });

  test('CONTRACT: /rest answers false for a prototype-poisoning body (constructor.prototype)', async () => {
    const { payload, headers } = asJson('{"constructor":{"prototype":{"x":1}},"email":"a"}');
    assertProbe(await send(t, payload, headers), false);
  });

  test('CONTRACT: /rest never echoes the body, even when it cannot be read', async () => {
    const { payload, headers } = asJson('{"email":"leak-me@example.com",');
    const res = await send(t, payload, headers);
    assertProbe(res, false);
    assert.ok(!res.body.includes('leak-me'));
  });
});

describeEachStore('POST /rest, profile A', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'a');
  });
  after(() => t.close());

  test('CONTRACT: /rest is not served in profile A (404 NOT_FOUND)', async () => {
    const res = await t.post('/rest', { email: 'a@example.com' });
    assert.equal(res.statusCode, 404);
    const body = res.json();
    assert.deepStrictEqual(Object.keys(body).sort(), ['error', 'message']);
    assert.equal(body.error, 'NOT_FOUND');
    assert.equal(typeof body.message, 'string');
    assert.ok(!('restSupport' in body));
  });
});
