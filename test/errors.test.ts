// The one error path (SPEC 7, CONTRACT "Documented endpoints" and "Beyond the spec"): unknown routes,
// hostile bodies and hostile path ids get the right code in the right shape, never a 5xx, and a real
// 500 never shows a stack trace or a file path.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import type { Profile } from '../src/config.ts';
import { type Database, openDatabase } from '../src/db/database.ts';
import type { App } from '../src/shared/fastify.ts';
import { leaksSecret, newUser, startApp, type TestApp, testConfig } from './helpers/app.ts';
import { describeEachStore } from './helpers/stores.ts';

const PROFILES: readonly Profile[] = ['a', 'b'];
const MIB = 1024 * 1024;

/** What the assertions read from a response, whether injected or from a real socket. */
interface Res {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly body: string;
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON; the tests assert on it field by field
  json(): any;
}

/**
 * GET over a real socket with the path sent byte for byte. Injection parses the URL with WHATWG
 * rules first (`%2e%2e` becomes `..` and is resolved away), which a raw HTTP client does not do.
 */
function rawGet(port: number, path: string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'GET', path, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({
          statusCode: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: () => JSON.parse(body),
        });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

function keys(body: object): string[] {
  return Object.keys(body).sort();
}

/** A `{error, message}` body with exactly those keys, the given code and a non-empty message. */
function assertWithMessage(res: Res, status: number, code: string): void {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.deepStrictEqual(keys(body), ['error', 'message']);
  assert.equal(body.error, code);
  assert.equal(typeof body.message, 'string');
  assert.notEqual(body.message, '');
}

/** A `{error}` body with exactly that key (the documented endpoints' shape). */
function assertCodeOnly(res: Res, status: number, code: string): void {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.deepStrictEqual(res.json(), { error: code });
}

/** SIGNIN_FAILED in the profile's shape: A exactly {error}, B exactly {error, message}. */
function assertSigninFailed(res: Res, profile: Profile, status: number): void {
  if (profile === 'a') assertCodeOnly(res, status, 'SIGNIN_FAILED');
  else assertWithMessage(res, status, 'SIGNIN_FAILED');
}

/** True when the text looks like it carries a stack trace or a source path. */
function leaksInternals(text: string): boolean {
  return (
    text.includes('    at ') ||
    /\bat .+:\d+:\d+/.test(text) ||
    /\.(ts|js|mjs|cjs)\b/.test(text) ||
    text.includes('node_modules') ||
    text.includes('file://') ||
    text.includes('/work/') ||
    text.includes(process.cwd()) ||
    /\/(home|usr|tmp|opt|var)\//.test(text)
  );
}

function assertNoInternals(res: Res): void {
  assert.ok(!leaksInternals(res.body), `response leaks internals: ${res.body}`);
}

interface HostileBody {
  readonly name: string;
  readonly payload: string;
  readonly headers: Record<string, string>;
  /** Status and code POST /api/users answers with. */
  readonly status: number;
  readonly code: string;
}

const validUser = () => ({ email: 'hostile@example.com', name: 'Hostile', password: 'hostile-pass-1' });
const json = { 'content-type': 'application/json' };

function hostileBodies(): HostileBody[] {
  const valid = JSON.stringify(validUser());
  const inner = valid.slice(1, -1);
  return [
    { name: 'malformed JSON', payload: '{"email":', headers: json, status: 400, code: 'VALIDATION_FAILED' },
    {
      name: 'JSON with a trailing garbage',
      payload: `${valid}}`,
      headers: json,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    { name: 'an empty JSON body', payload: '', headers: json, status: 400, code: 'VALIDATION_FAILED' },
    {
      name: 'prototype poisoning (__proto__)',
      payload: `{"__proto__":{"isAdmin":true},${inner}}`,
      headers: json,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'prototype poisoning (constructor.prototype)',
      payload: `{"constructor":{"prototype":{"isAdmin":true}},${inner}}`,
      headers: json,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    { name: 'a JSON array', payload: `[${valid}]`, headers: json, status: 400, code: 'VALIDATION_FAILED' },
    { name: 'JSON null', payload: 'null', headers: json, status: 400, code: 'VALIDATION_FAILED' },
    { name: 'a JSON string', payload: '"hello"', headers: json, status: 400, code: 'VALIDATION_FAILED' },
    {
      name: 'a text/plain content type',
      payload: valid,
      headers: { 'content-type': 'text/plain' },
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
    },
    {
      name: 'a form content type',
      payload: 'email=a%40example.com&name=A&password=password1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
    },
    {
      name: 'a body over 1 MiB',
      payload: JSON.stringify({ ...validUser(), pad: 'x'.repeat(MIB) }),
      headers: json,
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    },
  ];
}

/** Path segments that cannot name a user; each must be a 404 USER_NOT_FOUND, never a 400 or 500. */
const HOSTILE_IDS: readonly (readonly [label: string, segment: string])[] = [
  ['abc', 'abc'],
  ['-1', '-1'],
  ['0', '0'],
  ['1.5', '1.5'],
  ['1e3', '1e3'],
  ['0x10', '0x10'],
  ['01', '01'],
  ['+1', '+1'],
  ['" 1" (leading space)', '%201'],
  ['"1 " (trailing space)', '1%20'],
  ['%00', '%00'],
  ['1%00', '1%00'],
  ['2^63 (9223372036854775808)', '9223372036854775808'],
  ['99999999999999999999', '99999999999999999999'],
  ['a 300-character digit string', '1'.repeat(300)],
  ['%2e%2e', '%2e%2e'],
  ['a malformed percent escape (%zz)', '%zz'],
  ['an unknown in-range id (2^63-1)', '9223372036854775807'],
];

for (const profile of PROFILES) {
  describeEachStore(`error path, profile ${profile.toUpperCase()}`, (store) => {
    let t: TestApp;
    before(async () => {
      t = await startApp(store, profile);
    });
    after(() => t.close());

    test('CONTRACT: an unknown route is 404 NOT_FOUND with exactly error and message', async () => {
      for (const [method, url] of [
        ['GET', '/'],
        ['GET', '/api'],
        ['GET', '/api/nothing'],
        ['GET', '/api/users/1/friends'],
        ['DELETE', '/api/nothing/1'],
        ['PATCH', '/api/users/1'],
        ['GET', '/%2e%2e/etc/passwd'],
      ] as const) {
        const res = await t.inject({ method, url });
        assertWithMessage(res, 404, 'NOT_FOUND');
        assertNoInternals(res);
      }
    });

    test('CONTRACT: an unknown route answered with a JSON body is still 404 NOT_FOUND', async () => {
      assertWithMessage(await t.post('/api/nothing', { a: 1 }), 404, 'NOT_FOUND');
    });

    test(`CONTRACT: GET /api/users ${profile === 'a' ? 'is not served in profile A (404 NOT_FOUND)' : 'is served in profile B'}`, async () => {
      const res = await t.get('/api/users');
      if (profile === 'a') assertWithMessage(res, 404, 'NOT_FOUND');
      else {
        assert.equal(res.statusCode, 200);
        assert.ok(Array.isArray(res.json()));
      }
    });

    describe('CONTRACT: hostile bodies on POST /api/users get a coded 4xx with a message, never a 5xx', () => {
      for (const hostile of hostileBodies()) {
        test(`CONTRACT: POST /api/users with ${hostile.name} is ${hostile.status} ${hostile.code}`, async () => {
          const res = await t.inject({
            method: 'POST',
            url: '/api/users',
            headers: hostile.headers,
            payload: hostile.payload,
          });
          assertWithMessage(res, hostile.status, hostile.code);
          assertNoInternals(res);
          assert.equal(res.headers.location, undefined);
        });
      }
    });

    test('CONTRACT: POST /api/users with a body and no content type is refused with a 4xx, never stored', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/api/users',
        payload: Buffer.from(JSON.stringify(validUser())),
      });
      assert.ok(res.statusCode === 415 || res.statusCode === 400, `got ${res.statusCode}: ${res.body}`);
      assertWithMessage(
        res,
        res.statusCode,
        res.statusCode === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_FAILED',
      );
    });

    test('CONTRACT: the poisoned registration bodies created no user', async () => {
      const res = await t.post('/api/signin', { email: validUser().email, password: validUser().password });
      assertSigninFailed(res, profile, 401);
    });

    describe(`CONTRACT: hostile bodies on POST /api/signin are SIGNIN_FAILED in profile ${profile.toUpperCase()}'s shape`, () => {
      for (const hostile of hostileBodies()) {
        test(`CONTRACT: POST /api/signin with ${hostile.name} is ${hostile.status} SIGNIN_FAILED`, async () => {
          const res = await t.inject({
            method: 'POST',
            url: '/api/signin',
            headers: hostile.headers,
            payload: hostile.payload,
          });
          assertSigninFailed(res, profile, hostile.status);
          assertNoInternals(res);
        });
      }

      test('CONTRACT: POST /api/signin with a non-string field is 400 SIGNIN_FAILED', async () => {
        for (const body of [
          { email: 42, password: 'password1' },
          { email: 'a@example.com', password: null },
          { email: ['a@example.com'], password: 'password1' },
          { email: 'a@example.com', password: { $ne: '' } },
        ]) {
          assertSigninFailed(await t.post('/api/signin', body), profile, 400);
        }
      });

      test('CONTRACT: POST /api/signin with a body and no content type is a 4xx SIGNIN_FAILED', async () => {
        const res = await t.inject({
          method: 'POST',
          url: '/api/signin',
          payload: Buffer.from(JSON.stringify({ email: 'a@example.com', password: 'password1' })),
        });
        assert.ok(res.statusCode === 415 || res.statusCode === 400, `got ${res.statusCode}: ${res.body}`);
        assertSigninFailed(res, profile, res.statusCode);
      });
    });

    describe('CONTRACT: a path id that cannot name a user is 404 USER_NOT_FOUND, never 400 or 500', () => {
      let port = 0;
      before(async () => {
        await t.app.listen({ host: '127.0.0.1', port: 0 });
        port = (t.app.server.address() as AddressInfo).port;
      });

      for (const [label, segment] of HOSTILE_IDS) {
        test(`CONTRACT: GET /api/users/${label} is 404 {"error":"USER_NOT_FOUND"} exactly`, async () => {
          assertCodeOnly(await rawGet(port, `/api/users/${segment}`), 404, 'USER_NOT_FOUND');
        });
      }

      test('CONTRACT: a malformed URL elsewhere is refused in the one error shape ({error, message}), never a 5xx', async () => {
        for (const path of ['/api/nothing/%zz', '/%zz', `/api/${'x'.repeat(300)}/1`]) {
          const res = await rawGet(port, path);
          assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${path}: ${res.statusCode} ${res.body}`);
          const body = res.json();
          assert.deepStrictEqual(keys(body), ['error', 'message'], `${path}: ${res.body}`);
          assert.match(body.error, /^[A-Z][A-Z_]*$/);
        }
      });
    });
  });
}

/** Builds an app on a database that is closed before any request, so every query fails. */
async function brokenApp(url: string, profile: Profile, logs: string[]): Promise<{ app: App; db: Database }> {
  const config = testConfig({ kind: url.startsWith('sqlite:') ? 'sqlite' : 'postgres', url }, profile);
  const db = openDatabase(url, config.database);
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = await buildApp(config, { database: db, logStream });
  await db.close();
  return { app, db };
}

for (const profile of PROFILES) {
  describeEachStore(`a failing database, profile ${profile.toUpperCase()}`, (store) => {
    let app: App;
    const logs: string[] = [];
    const attempt = newUser();
    before(async () => {
      ({ app } = await brokenApp(store.url, profile, logs));
    });
    after(async () => {
      // The onClose hook closes the (already closed) database again; that must not hang the test.
      await app.close().catch(() => {});
    });

    test('CONTRACT: a 500 on registration is INTERNAL (or 503 UNAVAILABLE) with a message and no stack', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/users',
        headers: json,
        payload: JSON.stringify(attempt),
      });
      assert.ok(res.statusCode === 500 || res.statusCode === 503, `got ${res.statusCode}: ${res.body}`);
      assertWithMessage(res, res.statusCode, res.statusCode === 500 ? 'INTERNAL' : 'UNAVAILABLE');
      assertNoInternals(res);
      assert.ok(!res.body.includes('    at '));
    });

    test('CONTRACT: a 500 is logged with its details (details are logged, never returned)', async () => {
      // Its own failing request: the other tests here may not have run yet.
      const from = logs.length;
      const res = await app.inject({
        method: 'POST',
        url: '/api/users',
        headers: json,
        payload: JSON.stringify(newUser()),
      });
      assert.ok(res.statusCode === 500 || res.statusCode === 503, `got ${res.statusCode}: ${res.body}`);
      const errors = logs
        .slice(from)
        .map((line) => JSON.parse(line) as { level: number })
        .filter((entry) => entry.level >= 50);
      assert.ok(errors.length > 0, 'no error-level log line for the failed request');
    });

    test('SPEC 7: a failure on GET /api/users/{id} is the code alone ({error}, exact keys)', async () => {
      const res = await app.inject({ method: 'GET', url: '/api/users/1' });
      assert.ok(res.statusCode === 500 || res.statusCode === 503, `got ${res.statusCode}: ${res.body}`);
      assertCodeOnly(res, res.statusCode, res.statusCode === 500 ? 'INTERNAL' : 'UNAVAILABLE');
      assertNoInternals(res);
    });

    test('SPEC 7: sign-in failing with an exception is SIGNIN_FAILED in the profile shape, no stack', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/signin',
        headers: json,
        payload: JSON.stringify({ email: 'someone@example.com', password: 'password1' }),
      });
      assert.ok(res.statusCode === 500 || res.statusCode === 503, `got ${res.statusCode}: ${res.body}`);
      assertSigninFailed(res, profile, res.statusCode);
      assertNoInternals(res);
    });

    if (profile === 'b') {
      test('SPEC 7: a failure on GET /api/users is the code alone, no stack', async () => {
        const res = await app.inject({ method: 'GET', url: '/api/users' });
        assert.ok(res.statusCode === 500 || res.statusCode === 503, `got ${res.statusCode}: ${res.body}`);
        assertCodeOnly(res, res.statusCode, res.statusCode === 500 ? 'INTERNAL' : 'UNAVAILABLE');
        assertNoInternals(res);
      });
    }

    test('CONTRACT: /readyz is 503 UNAVAILABLE when the database does not answer; /healthz stays 200', async () => {
      assertWithMessage(await app.inject({ method: 'GET', url: '/readyz' }), 503, 'UNAVAILABLE');
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 200);
      assert.deepStrictEqual(health.json(), { status: 'ok' });
    });

    test('CONTRACT: no response or log line of the failing app holds the password', () => {
      for (const line of logs) assert.ok(!leaksSecret(line, [attempt.password]), `log line leaks: ${line}`);
    });
  });
}
