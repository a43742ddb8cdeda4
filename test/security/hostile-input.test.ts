// ISSUE 11: input that costs the server far more than it costs the client. A password that NFKC
// expands 18-fold stalls the event loop; sign-in emails of any length become throttle keys that
// fill the database (and, on PostgreSQL, break the index insert with a 500); control characters
// reach stored names; the common-password check misses padded and upper-case forms; a request
// without a Host header gets Node's bare 400. Each test states the behaviour after the fix; the
// figures (healthz latency, database size, RSS) go to the test diagnostics so a run shows them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, type TestContext, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import type { Profile } from '../../src/config.ts';
import { NO_THROTTLE, newUser, sessionToken, signIn, startApp, type TestApp } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore, freshDatabaseUrl, type StoreKind } from '../helpers/stores.ts';

const MIB = 1024 * 1024;
/**
 * src/shared/body-limits.ts: sign-in and registration read 32 KiB (1 MiB before issue 25, when
 * these tests sent 1 MB); more is refused with 413 before it is parsed.
 */
const BODY_LIMIT_BYTES = 32 * 1024;
/** U+FDFA ARABIC LIGATURE SALLALLAHOU ALAYHE WASALLAM: 3 bytes in UTF-8, 18 code points after NFKC. */
const EXPANDING = '\ufdfa';
/** As many as a JSON body under the limit can carry (with 1 KiB left for the rest of the body). */
const HUGE_PASSWORD = EXPANDING.repeat(Math.floor((BODY_LIMIT_BYTES - 1024) / 3));
/** The fix refuses longer passwords before normalising them. */
const PASSWORD_MAX_UNITS = 4096;
const EMAIL_MAX = 254;
/** As long an email as a sign-in body can carry (it was 100 KB when sign-in read 1 MiB). */
const LONGEST_EMAIL = 30 * 1024;
const SIMULTANEOUS = 10;
const HEALTHZ_POLL_MS = 20;
/**
 * The target for the worst /healthz answer while the hostile requests run is 100 ms. The
 * assertion allows ten times that: a shared CI machine with two cores parses ten JSON bodies
 * and schedules the test's own polling on the same cores, and an occasional GC pause or a
 * descheduled process must not fail the build. Before the fix the stall is measured in seconds,
 * so the bound still tells the two apart. The real figure is printed as a diagnostic.
 */
const HEALTHZ_BOUND_MS = 1000;
const HEALTHZ_GOAL_MS = 100;
const FLOOD_SIGNINS = 150;
/**
 * 30 KB of random hex: distinct, incompressible, and the body stays under sign-in's 32 KiB. (The
 * emails were 900 KB when sign-in read 1 MiB.)
 */
const FLOOD_EMAIL_BYTES = 30 * 1024;
/** Under the 4.4 MB that 150 such emails would take as keys, stored as they came. */
const FLOOD_DB_BOUND_BYTES = 3 * MIB;
/**
 * With 900 KB emails the bound was 250 MB (135 MB of bodies in flight at once; over 400 MB before
 * the fix). With 30 KB bodies the flood holds 4.5 MB in flight.
 */
const FLOOD_RSS_BOUND_BYTES = 100 * MIB;
const REQUEST_TIMEOUT_MS = 60_000;
const SERVER_TEST_TIMEOUT_MS = 120_000;
/** General category Cc: exactly U+0000-U+001F and U+007F-U+009F. */
const CONTROL_CHARACTER = /\p{Cc}/u;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (bytes: number) => `${(bytes / MIB).toFixed(1)} MB`;
const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;

/** An email of exactly `length` characters, unique in this process, ending in @example.com. */
function emailOfLength(length: number, fill: 'hex' | 'repeat' | 'multibyte' = 'hex'): string {
  const domain = '@example.com';
  const tag = `${process.pid}.${randomBytes(4).toString('hex')}.`;
  const rest = length - domain.length - tag.length;
  const body =
    fill === 'hex'
      ? randomBytes(Math.ceil(rest / 2))
          .toString('hex')
          .slice(0, rest)
      : fill === 'repeat'
        ? 'a'.repeat(rest)
        : 'é'.repeat(rest);
  const email = `${tag}${body}${domain}`;
  assert.equal(email.length, length);
  return email;
}

// ---------------------------------------------------------------------------------------------
// Real server helpers.

interface Reply {
  status: number;
  json: Record<string, unknown>;
  text: string;
}

async function send(method: 'POST' | 'PUT', url: string, body: string, token?: string): Promise<Reply> {
  const res = await fetch(url, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // asserted by the caller through `text`
  }
  return { status: res.status, json, text };
}

interface Polled<T> {
  result: T;
  /** Worst /healthz answer time while `work` ran, in ms. */
  worstMs: number;
  medianMs: number;
  polls: number;
  /** How long `work` took, in ms. */
  workMs: number;
  /** Polls that did not get 200 {"status":"ok"}. */
  failures: string[];
}

/**
 * Runs `work` while GET /healthz is sent every 20 ms over its own connections (a poll does not wait
 * for the one before, so a stalled event loop shows up as the age of the oldest unanswered poll).
 */
async function whilePollingHealthz<T>(baseUrl: string, work: () => Promise<T>): Promise<Polled<T>> {
  const latencies: number[] = [];
  const failures: string[] = [];
  const inFlight: Promise<void>[] = [];
  const poll = () => {
    const started = performance.now();
    inFlight.push(
      fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).then(
        async (res) => {
          const text = await res.text();
          latencies.push(performance.now() - started);
          if (res.status !== 200) failures.push(`${res.status} ${text}`);
        },
        (error: unknown) => {
          latencies.push(performance.now() - started);
          failures.push(String(error));
        },
      ),
    );
  };
  poll();
  const timer = setInterval(poll, HEALTHZ_POLL_MS);
  const started = performance.now();
  let result: T;
  try {
    result = await work();
  } finally {
    clearInterval(timer);
  }
  const workMs = performance.now() - started;
  poll();
  await Promise.all(inFlight);
  const sorted = [...latencies].sort((x, y) => x - y);
  return {
    result,
    worstMs: Math.round(sorted.at(-1) ?? 0),
    medianMs: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
    polls: sorted.length,
    workMs: Math.round(workMs),
    failures,
  };
}

function reportLatency(t: TestContext, what: string, polled: Polled<unknown>): void {
  t.diagnostic(
    `${what}: worst /healthz ${polled.worstMs} ms (median ${polled.medianMs} ms, ${polled.polls} polls, ` +
      `goal ${HEALTHZ_GOAL_MS} ms, bound ${HEALTHZ_BOUND_MS} ms); the requests took ${polled.workMs} ms`,
  );
}

function statusCounts(replies: { status: number }[]): string {
  const counts = new Map<number, number>();
  for (const r of replies) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n}× ${status}`).join(', ');
}

/** Resident memory of a process, from /proc (Linux). */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)\s*kB/.exec(status)?.[1] ?? Number.NaN) * 1024;
}

/** The bytes the store holds: the SQLite file and its WAL, or pg_database_size. */
async function databaseBytes(kind: StoreKind, url: string): Promise<number> {
  if (kind === 'sqlite') {
    const path = url.slice('sqlite:'.length);
    const size = (p: string) => {
      try {
        return statSync(p).size;
      } catch {
        return 0;
      }
    };
    return size(path) + size(`${path}-wal`);
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ size: string }>(
      'select pg_database_size(current_database())::text as size',
    );
    return Number(rows[0]!.size);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP over TCP, for requests fetch cannot make (no Host header).

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function parseResponse(text: string): RawResponse | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = text.slice(end + 4);
  let body: string;
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    body = '';
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(rest.slice(at, lineEnd), 16);
      if (size === 0) break;
      if (rest.length < lineEnd + 2 + size) return undefined;
      body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
      at = lineEnd + 2 + size + 2;
    }
  } else {
    const length = Number(headers['content-length'] ?? 0);
    if (rest.length < length) return undefined;
    body = rest.slice(0, length);
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

/** Writes `request` and resolves with the first complete response (or what came before a close). */
function rawRequest(port: number, request: string, waitMs = 5000): Promise<{ text: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text });
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (parseResponse(text)) done();
    });
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => socket.write(request));
  });
}

// ---------------------------------------------------------------------------------------------
// In-process helpers.

function metricSample(text: string, name: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) return Number(line.split(' ').at(-1));
  }
  return 0;
}

/** How many argon2 hashes (hashing or verifying, the dummy one included) the app has run. */
async function hashCount(t: TestApp): Promise<number> {
  return metricSample((await t.get('/metrics')).body, 'usher_password_hash_seconds_count');
}

function assertSigninFailure(profile: Profile, status: number, body: string, what: string): void {
  assert.equal(status, 401, `${what}: ${status} ${body.slice(0, 300)}`);
  const json = JSON.parse(body) as Record<string, unknown>;
  if (profile === 'a') assert.deepEqual(json, { error: 'SIGNIN_FAILED' }, what);
  else {
    assert.deepEqual(Object.keys(json).sort(), ['error', 'message'], what);
    assert.equal(json.error, 'SIGNIN_FAILED', what);
    assert.equal(typeof json.message, 'string', what);
  }
}

/** A database row as text (SQLite gives integers as bigint, which JSON.stringify refuses). */
function rowText(row: Record<string, unknown>): string {
  return JSON.stringify(row, (_key, value) => (typeof value === 'bigint' ? String(value) : value));
}

function assertValidationFailed(status: number, body: string, field: string, what: string): void {
  assert.equal(status, 400, `${what}: ${status} ${body.slice(0, 300)}`);
  const json = JSON.parse(body) as Record<string, unknown>;
  assert.equal(json.error, 'VALIDATION_FAILED', `${what}: ${body.slice(0, 300)}`);
  assert.ok(String(json.message).startsWith(`${field}:`), `${what}: message ${JSON.stringify(json.message)}`);
}

describeEachStore('ISSUE 11: hostile input', (store) => {
  const apps = {} as Record<Profile, TestApp>;
  /** Every email this file sent to a sign-in: none may be found in the throttle table. */
  const signinEmails = new Set<string>();

  before(async () => {
    apps.a = await startApp(store, 'a', { throttle: NO_THROTTLE });
    apps.b = await startApp(store, 'b', { throttle: NO_THROTTLE });
  });
  after(async () => {
    await apps.a?.close();
    await apps.b?.close();
  });

  const signin = (t: TestApp, email: string, password: string) => {
    signinEmails.add(email);
    return t.post('/api/signin', { email, password });
  };

  async function account(t: TestApp, overrides: Parameters<typeof newUser>[0] = {}) {
    const user = newUser(overrides);
    const res = await t.post('/api/users', user);
    assert.equal(res.statusCode, 201, res.body);
    return { ...user, id: String(res.json().id), token: await signIn(t, user) };
  }

  const put = (t: TestApp, id: string, token: string, body: unknown) =>
    t.inject({
      method: 'PUT',
      url: `/api/users/${id}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  // ---- A: passwords too long to normalise ---------------------------------------------------

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 11 A: profile ${profile.toUpperCase()}: a password over ${PASSWORD_MAX_UNITS} UTF-16 code units is 400 VALIDATION_FAILED "password: …" at registration and PUT`, async () => {
      const t = apps[profile];
      const me = await account(t);
      for (const [what, password] of [
        [`${PASSWORD_MAX_UNITS + 1} × "a"`, 'a'.repeat(PASSWORD_MAX_UNITS + 1)],
        [`${PASSWORD_MAX_UNITS + 1} × U+FDFA`, EXPANDING.repeat(PASSWORD_MAX_UNITS + 1)],
        ['as much U+FDFA as the body limit lets through (31 KB)', HUGE_PASSWORD],
      ] as const) {
        const reg = await t.post('/api/users', newUser({ password }));
        assertValidationFailed(reg.statusCode, reg.body, 'password', `registration, ${what}`);
        const res = await put(t, me.id, me.token, { email: me.email, name: me.name, password });
        assertValidationFailed(res.statusCode, res.body, 'password', `PUT, ${what}`);
      }
      // The old password still works: the refused change changed nothing.
      assert.equal((await signin(t, me.email, me.password)).statusCode, 200);
    });

    test(`ISSUE 11 A: profile ${profile.toUpperCase()}: a sign-in with a password over ${PASSWORD_MAX_UNITS} code units is 401 SIGNIN_FAILED without hashing, for a known and an unknown email`, async () => {
      const t = apps[profile];
      const me = await account(t);
      const before = await hashCount(t);
      for (const email of [me.email, emailOfLength(40)]) {
        for (const password of ['a'.repeat(PASSWORD_MAX_UNITS + 1), HUGE_PASSWORD]) {
          const res = await signin(t, email, password);
          assertSigninFailure(profile, res.statusCode, res.body, `${password.length} code units`);
        }
      }
      assert.equal(await hashCount(t), before, 'argon2 ran for a password that is too long to be anyone’s');
    });

    test(`ISSUE 11 A: profile ${profile.toUpperCase()}: the new limit is in UTF-16 code units, above the 1024 code points the rules allow: 1024 astral or decomposed characters still register and sign in`, async () => {
      const t = apps[profile];
      for (const [what, password] of [
        ['1024 emoji (2048 code units)', '\u{1f511}'.repeat(1024)],
        ['1024 × e + U+0301 (2048 code points, 1024 after NFKC)', 'e\u0301'.repeat(1024)],
      ] as const) {
        const user = newUser({ password });
        const reg = await t.post('/api/users', user);
        assert.equal(reg.statusCode, 201, `${what}: ${reg.body}`);
        assert.equal((await signin(t, user.email, password)).statusCode, 200, what);
      }
    });
  }

  // ---- B: sign-in emails as throttle keys -----------------------------------------------------

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 11 B: profile ${profile.toUpperCase()}: sign-in with a 254-, 255-character or 3 KB email is 401 SIGNIN_FAILED in the profile's shape, never a 500`, async () => {
      const t = apps[profile];
      const failures: string[] = [];
      for (const [what, email] of [
        ['254 characters', emailOfLength(EMAIL_MAX)],
        ['254 characters, upper case', emailOfLength(EMAIL_MAX).toUpperCase()],
        ['255 characters', emailOfLength(EMAIL_MAX + 1)],
        ['3 KB of random hex', emailOfLength(3 * 1024)],
        ['3 KB of one letter', emailOfLength(3 * 1024, 'repeat')],
        ['3 KB of é (6 KB of UTF-8)', emailOfLength(3 * 1024, 'multibyte')],
        ['2,000 characters of random hex', emailOfLength(2000)],
      ] as const) {
        const res = await signin(t, email, 'some-password-1');
        try {
          assertSigninFailure(profile, res.statusCode, res.body, what);
        } catch (error) {
          failures.push(
            `${what}: ${res.statusCode} ${res.body.slice(0, 120)} (${(error as Error).message.split('\n')[0]})`,
          );
        }
      }
      assert.deepEqual(failures, []);
    });

    test(`ISSUE 11 B: profile ${profile.toUpperCase()}: a sign-in email over ${EMAIL_MAX} characters runs no hash`, async () => {
      const t = apps[profile];
      const before = await hashCount(t);
      for (const length of [EMAIL_MAX + 1, 3 * 1024, LONGEST_EMAIL]) {
        const res = await signin(t, emailOfLength(length), 'some-password-1');
        assertSigninFailure(profile, res.statusCode, res.body, `${length} characters`);
      }
      assert.equal(await hashCount(t), before, 'argon2 ran for an email no account can have');
    });
  }

  test(`ISSUE 11 B: an email over ${EMAIL_MAX} characters records no sign-in attempt; a ${EMAIL_MAX}-character one is stored only as a 64-hex-character digest in signin_attempts`, async () => {
    const t = apps.b;
    const long = [emailOfLength(EMAIL_MAX), emailOfLength(EMAIL_MAX), emailOfLength(EMAIL_MAX, 'repeat')];
    const short = `short.${process.pid}@example.com`;
    for (const email of [...long, long[0]!.toUpperCase(), ` ${long[1]} `, short]) {
      const res = await signin(t, email, 'wrong-password-1');
      assert.equal(res.statusCode, 401, res.body);
    }
    const database = openTestDatabase(store);
    try {
      const count = async () =>
        Number(
          (await sql<{ n: number | string }>`select count(*) as n from signin_attempts`.execute(database.db))
            .rows[0]!.n,
        );
      const rows = (await sql<Record<string, unknown>>`select * from signin_attempts`.execute(database.db))
        .rows;
      assert.ok(rows.length >= long.length + 1, `${rows.length} rows in signin_attempts`);
      for (const row of rows) {
        assert.match(String(row.account_digest), /^[0-9a-f]{64}$/, rowText(row));
        for (const [column, value] of Object.entries(row)) {
          if (typeof value !== 'string') continue;
          assert.ok(value.length <= 64, `signin_attempts.${column} holds ${value.length} characters`);
        }
        const text = rowText(row).toLowerCase();
        for (const email of signinEmails) {
          const key = email.trim().toLowerCase();
          // The whole email, and its first 32 characters (a truncated key would hold those).
          assert.ok(
            !text.includes(key) && !text.includes(key.slice(0, 32)),
            `a row holds ${key.slice(0, 40)}…`,
          );
        }
      }
      // Sign-ins with emails no account can have leave no row at all.
      const before = await count();
      for (const length of [EMAIL_MAX + 1, 3 * 1024, LONGEST_EMAIL]) {
        const res = await signin(t, emailOfLength(length), 'wrong-password-1');
        assert.equal(res.statusCode, 401, res.body);
      }
      assert.equal(await count(), before, 'rows were recorded for emails over 254 characters');
    } finally {
      await database.close();
    }
  });

  // ---- C: control characters in names ----------------------------------------------------------

  const CONTROLS = [
    ['ESC', '\u001b'],
    ['BEL', '\u0007'],
    ['CR', '\r'],
    ['LF', '\n'],
    ['TAB', '\t'],
    ['DEL', '\u007f'],
    ['U+0085 (NEL)', '\u0085'],
    ['U+009B (CSI)', '\u009b'],
  ] as const;

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 11 C: profile ${profile.toUpperCase()}: a name with a control character (${CONTROLS.map(([n]) => n).join(', ')}) is 400 VALIDATION_FAILED "name: …" at registration and PUT`, async () => {
      const t = apps[profile];
      const me = await account(t, { name: 'Plain Name' });
      const failures: string[] = [];
      for (const [what, control] of CONTROLS) {
        const name = `Mallory${control}[2J Admin`;
        const reg = await t.post('/api/users', newUser({ name }));
        const res = await put(t, me.id, me.token, { email: me.email, name });
        for (const [where, r] of [
          ['registration', reg],
          ['PUT', res],
        ] as const) {
          try {
            assertValidationFailed(r.statusCode, r.body, 'name', `${where}, ${what}`);
          } catch {
            failures.push(`${where} with ${what}: ${r.statusCode} ${r.body.slice(0, 100)}`);
          }
        }
      }
      assert.deepEqual(failures, []);
      assert.equal(
        (await t.get(`/api/users/${me.id}`)).json().name,
        'Plain Name',
        'a refused PUT changed the name',
      );
    });

    test(`ISSUE 11 C: profile ${profile.toUpperCase()}: ordinary Unicode names (accents, CJK, Arabic, emoji with ZWJ) still register and are shown as sent`, async () => {
      const t = apps[profile];
      for (const name of [
        'José Müller-Łukasiewicz',
        '张伟',
        '山田 太郎',
        'محمد',
        'Zoë 🙂',
        '👩‍💻 Dev',
        'ﾊﾝｶｸ',
        'Ⅻ',
      ]) {
        assert.ok(!CONTROL_CHARACTER.test(name));
        const res = await t.post('/api/users', newUser({ name }));
        assert.equal(res.statusCode, 201, `${name}: ${res.body}`);
        assert.equal(res.json().name, name);
      }
    });
  }

  // ---- D: the common-password check on the trimmed, case-folded, NFKC form ----------------------

  for (const profile of ['a', 'b'] as const) {
    test(`ISSUE 11 D: profile ${profile.toUpperCase()}: "password1" padded with spaces or in upper case is refused as common (400 "password: …common…") at registration and PUT`, async () => {
      const t = apps[profile];
      const me = await account(t);
      const failures: string[] = [];
      for (const password of [
        'password1 ',
        ' password1',
        'PASSWORD1',
        '  Password1  ',
        'ｐａｓｓｗｏｒｄ１ ',
      ]) {
        const reg = await t.post('/api/users', newUser({ password }));
        const res = await put(t, me.id, me.token, { email: me.email, name: me.name, password });
        for (const [where, r] of [
          ['registration', reg],
          ['PUT', res],
        ] as const) {
          const json = r.json() as { error?: string; message?: string };
          if (
            r.statusCode !== 400 ||
            json.error !== 'VALIDATION_FAILED' ||
            !String(json.message).startsWith('password:') ||
            !/common/i.test(String(json.message))
          ) {
            failures.push(`${where} ${JSON.stringify(password)}: ${r.statusCode} ${r.body}`);
          }
        }
      }
      assert.deepEqual(failures, []);
    });

    test(`ISSUE 11 D: profile ${profile.toUpperCase()}: a password that is not common keeps its surrounding spaces: it signs in with them, not without`, async () => {
      const t = apps[profile];
      const password = `  Tangerine-Kite-${randomBytes(3).toString('hex')}  `;
      const user = newUser({ password });
      const reg = await t.post('/api/users', user);
      assert.equal(reg.statusCode, 201, reg.body);
      assert.equal((await signin(t, user.email, password)).statusCode, 200, 'with the spaces');
      assert.equal((await signin(t, user.email, password.trim())).statusCode, 401, 'without the spaces');
    });
  }

  // ---- Against a real server process: the event loop, the database and the memory ------------

  describe('a real server (profile B)', () => {
    let server: ServerProcess;
    before(async () => {
      server = await startServer({ DATABASE_URL: store.url, PROFILE: 'b', LOG_LEVEL: 'info' });
    });
    after(async () => {
      if (server) assert.equal(await server.stop('SIGTERM'), 0, server.output().slice(-2000));
    });
    const serverHashCount = async () =>
      metricSample(await (await fetch(`${server.url}/metrics`)).text(), 'usher_password_hash_seconds_count');

    test(`ISSUE 11 A: ${SIMULTANEOUS} simultaneous registrations with ~31 KB of U+FDFA as password are 400 "password: …" and /healthz keeps answering within ${HEALTHZ_BOUND_MS} ms`, {
      timeout: SERVER_TEST_TIMEOUT_MS,
    }, async (t) => {
      const bodies = Array.from({ length: SIMULTANEOUS }, (_, i) =>
        JSON.stringify({
          email: `stall.${i}.${process.pid}@example.com`,
          name: 'Stall',
          password: HUGE_PASSWORD,
        }),
      );
      for (const body of bodies) assert.ok(Buffer.byteLength(body) < BODY_LIMIT_BYTES);
      const polled = await whilePollingHealthz(server.url, () =>
        Promise.all(bodies.map((body) => send('POST', `${server.url}/api/users`, body))),
      );
      reportLatency(t, `${SIMULTANEOUS} registrations of ${kb(Buffer.byteLength(bodies[0]!))}`, polled);
      t.diagnostic(`statuses: ${statusCounts(polled.result)}`);
      for (const reply of polled.result)
        assertValidationFailed(reply.status, reply.text, 'password', 'registration');
      assert.deepEqual(polled.failures, []);
      assert.ok(polled.worstMs < HEALTHZ_BOUND_MS, `worst /healthz ${polled.worstMs} ms`);
    });

    test(`ISSUE 11 A: ${SIMULTANEOUS} simultaneous PUT /api/users/{id} with ~31 KB of U+FDFA as password are 400 "password: …" and /healthz keeps answering within ${HEALTHZ_BOUND_MS} ms`, {
      timeout: SERVER_TEST_TIMEOUT_MS,
    }, async (t) => {
      const me = newUser();
      assert.equal((await send('POST', `${server.url}/api/users`, JSON.stringify(me))).status, 201);
      const signedIn = await fetch(`${server.url}/api/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(me),
      });
      assert.equal(signedIn.status, 200);
      const id = String(((await signedIn.json()) as { user: { id: number } }).user.id);
      const token = sessionToken(signedIn.headers.getSetCookie());
      assert.ok(token);
      const body = JSON.stringify({ email: me.email, name: me.name, password: HUGE_PASSWORD });
      const polled = await whilePollingHealthz(server.url, () =>
        Promise.all(
          Array.from({ length: SIMULTANEOUS }, () =>
            send('PUT', `${server.url}/api/users/${id}`, body, token),
          ),
        ),
      );
      reportLatency(t, `${SIMULTANEOUS} PUTs of ${kb(Buffer.byteLength(body))}`, polled);
      t.diagnostic(`statuses: ${statusCounts(polled.result)}`);
      for (const reply of polled.result) assertValidationFailed(reply.status, reply.text, 'password', 'PUT');
      assert.deepEqual(polled.failures, []);
      assert.ok(polled.worstMs < HEALTHZ_BOUND_MS, `worst /healthz ${polled.worstMs} ms`);
    });

    test(`ISSUE 11 A: ${SIMULTANEOUS} simultaneous sign-ins with ~31 KB of U+FDFA as password (half for existing accounts) are 401 SIGNIN_FAILED and /healthz keeps answering within ${HEALTHZ_BOUND_MS} ms`, {
      timeout: SERVER_TEST_TIMEOUT_MS,
    }, async (t) => {
      const emails: string[] = [];
      for (let i = 0; i < SIMULTANEOUS / 2; i++) {
        const user = newUser();
        assert.equal((await send('POST', `${server.url}/api/users`, JSON.stringify(user))).status, 201);
        emails.push(user.email, emailOfLength(40));
      }
      const bodies = emails.map((email) => JSON.stringify({ email, password: HUGE_PASSWORD }));
      const hashesBefore = await serverHashCount();
      const polled = await whilePollingHealthz(server.url, () =>
        Promise.all(bodies.map((body) => send('POST', `${server.url}/api/signin`, body))),
      );
      reportLatency(t, `${SIMULTANEOUS} sign-ins of ${kb(Buffer.byteLength(bodies[0]!))}`, polled);
      t.diagnostic(`statuses: ${statusCounts(polled.result)}`);
      for (const reply of polled.result) assertSigninFailure('b', reply.status, reply.text, 'sign-in');
      const hashes = (await serverHashCount()) - hashesBefore;
      t.diagnostic(`argon2 runs for these sign-ins: ${hashes}`);
      assert.equal(hashes, 0, 'argon2 ran for passwords that are too long to be anyone’s');
      assert.deepEqual(polled.failures, []);
      assert.ok(polled.worstMs < HEALTHZ_BOUND_MS, `worst /healthz ${polled.worstMs} ms`);
    });

    for (const [what, head] of [
      ['no Host header', 'GET /healthz?probe=no-host HTTP/1.1\r\n'],
      ['an empty Host header', 'GET /healthz?probe=empty-host HTTP/1.1\r\nHost:\r\n'],
    ] as const) {
      test(`ISSUE 11 E: a request with ${what} is 400 {"error":"BAD_REQUEST","message"} as JSON with the security headers, and has an access-log line`, {
        timeout: SERVER_TEST_TIMEOUT_MS,
      }, async () => {
        const marker = /probe=[a-z-]+/.exec(head)![0];
        const { text } = await rawRequest(
          Number(new URL(server.url).port),
          `${head}Connection: close\r\n\r\n`,
        );
        const answer = parseResponse(text);
        assert.ok(answer, `no complete response: ${JSON.stringify(text)}`);
        assert.equal(answer.status, 400, text);
        assert.match(answer.headers['content-type'] ?? '', /^application\/json/, text);
        const body = JSON.parse(answer.body || 'null') as Record<string, unknown> | null;
        assert.ok(body, `no JSON body: ${JSON.stringify(text)}`);
        assert.equal(body.error, 'BAD_REQUEST', answer.body);
        assert.equal(typeof body.message, 'string', answer.body);
        assert.equal(answer.headers['x-content-type-options'], 'nosniff', text);
        assert.ok(answer.headers['content-security-policy'], `no Content-Security-Policy: ${text}`);
        // The access-log line may reach stdout a little after the response.
        const logged = () =>
          server
            .output()
            .split('\n')
            .filter((line) => line.includes(marker))
            .some((line) => {
              try {
                const json = JSON.parse(line) as {
                  statusCode?: number;
                  status?: number;
                  res?: { statusCode?: number };
                };
                return (json.statusCode ?? json.status ?? json.res?.statusCode) === 400;
              } catch {
                return false;
              }
            });
        for (let i = 0; i < 50 && !logged(); i++) await sleep(100);
        assert.ok(logged(), `no access-log line with ${marker} and status 400 on stdout`);
        const health = await fetch(`${server.url}/healthz`);
        assert.equal(health.status, 200);
      });
    }
  });

  test(`ISSUE 11 B: ${FLOOD_SIGNINS} simultaneous sign-ins with distinct ${FLOOD_EMAIL_BYTES / 1024} KB emails on a fresh database: 401 or 429, no 5xx; the store grows by under ${mb(FLOOD_DB_BOUND_BYTES)} and the server's RSS by under ${mb(FLOOD_RSS_BOUND_BYTES)}`, {
    timeout: SERVER_TEST_TIMEOUT_MS,
  }, async (t) => {
    const fresh = await freshDatabaseUrl(store.kind);
    let server: ServerProcess | undefined;
    try {
      server = await startServer({ DATABASE_URL: fresh.url, PROFILE: 'b' });
      const pid = server.child.pid!;
      // Warm up the sign-in path (the dummy hash, the common code) so it is not counted as growth.
      for (let i = 0; i < 3; i++) {
        const warm = await send(
          'POST',
          `${server.url}/api/signin`,
          JSON.stringify({ email: `warm.${i}@example.com`, password: 'wrong-password-1' }),
        );
        assert.equal(warm.status, 401, warm.text);
      }
      await sleep(500);
      const dbBefore = await databaseBytes(store.kind, fresh.url);
      const rssBefore = rssBytes(pid);
      let rssPeak = rssBefore;
      const sampler = setInterval(() => {
        rssPeak = Math.max(rssPeak, rssBytes(pid));
      }, 25);
      const started = performance.now();
      let replies: Reply[];
      try {
        replies = await Promise.all(
          Array.from({ length: FLOOD_SIGNINS }, () => {
            const email = `${randomBytes(FLOOD_EMAIL_BYTES / 2).toString('hex')}@example.com`;
            const body = `{"email":"${email}","password":"wrong-password-1"}`;
            return send('POST', `${server!.url}/api/signin`, body);
          }),
        );
      } finally {
        clearInterval(sampler);
      }
      const floodMs = Math.round(performance.now() - started);
      await sleep(1000);
      const rssAfter = rssBytes(pid);
      rssPeak = Math.max(rssPeak, rssAfter);
      const dbAfter = await databaseBytes(store.kind, fresh.url);
      t.diagnostic(`${FLOOD_SIGNINS} sign-ins in ${floodMs} ms: ${statusCounts(replies)}`);
      t.diagnostic(
        `${store.kind === 'sqlite' ? 'SQLite file + WAL' : 'pg_database_size'}: ${mb(dbBefore)} → ${mb(dbAfter)} ` +
          `(grew ${mb(dbAfter - dbBefore)})`,
      );
      t.diagnostic(
        `server RSS: ${mb(rssBefore)} before, ${mb(rssPeak)} at the peak, ${mb(rssAfter)} a second after ` +
          `(grew ${mb(rssAfter - rssBefore)}; peak growth ${mb(rssPeak - rssBefore)})`,
      );
      assert.equal(server.child.exitCode, null, 'the server exited');
      const bad = replies.filter((r) => r.status !== 401 && r.status !== 429);
      assert.deepEqual(
        bad.map((r) => `${r.status} ${r.text.slice(0, 100)}`),
        [],
        `statuses: ${statusCounts(replies)}`,
      );
      for (const reply of replies) assert.equal(reply.json.error, 'SIGNIN_FAILED', reply.text);
      if (store.kind === 'sqlite') {
        assert.ok(dbAfter < FLOOD_DB_BOUND_BYTES, `SQLite file + WAL is ${mb(dbAfter)}`);
      } else {
        assert.ok(
          dbAfter - dbBefore < FLOOD_DB_BOUND_BYTES,
          `the database grew by ${mb(dbAfter - dbBefore)}`,
        );
      }
      assert.ok(rssPeak - rssBefore < FLOOD_RSS_BOUND_BYTES, `RSS grew by ${mb(rssPeak - rssBefore)}`);
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    } finally {
      if (server) await server.stop('SIGTERM');
      await fresh.drop();
    }
  });
});
