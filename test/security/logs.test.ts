// What the logs hold (CONTRACT "No response, log line or error ever holds a password or a password
// hash"; ISSUE 5: sessions and sign-in auditing). Every endpoint is exercised, with the session
// cookie and with a Bearer token, on an in-process app at debug level and on a real server process
// at LOG_LEVEL=debug; then every log line is searched for every secret the run used, and every
// sign-in attempt must have left one `event: "signin"` line with its outcome and client address.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { startApp, type TestApp, sessionToken as tokenIn } from '../helpers/app.ts';
import { openTestDatabase } from '../helpers/db.ts';
import { type ServerProcess, startServer } from '../helpers/process.ts';
import { describeEachStore, type Store } from '../helpers/stores.ts';

const REQUEST_TIMEOUT_MS = 10_000;
const SERVER_TEST_TIMEOUT_MS = 120_000;
/** Failures for one account from one address before sign-ins are throttled (small, to reach 429). */
const PER_ACCOUNT_ADDRESS = 3;

interface Reply {
  status: number;
  header(name: string): string | undefined;
  setCookies: string[];
  text: string;
}

interface RequestOptions {
  /** An object is sent as JSON; a string is sent as it is (malformed bodies). */
  body?: unknown;
  headers?: Record<string, string>;
  /** Client address (in-process only; a real server sees 127.0.0.1). */
  address?: string;
}

type Send = (
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  options?: RequestOptions,
) => Promise<Reply>;

function payloadOf(options: RequestOptions): { payload?: string; headers: Record<string, string> } {
  if (options.body === undefined) return { headers: { ...options.headers } };
  return {
    payload: typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
    headers: { 'content-type': 'application/json', ...options.headers },
  };
}

function injectSender(t: TestApp): Send {
  return async (method, url, options = {}) => {
    const { payload, headers } = payloadOf(options);
    const res = await t.inject({
      method,
      url,
      headers,
      ...(payload === undefined ? {} : { payload }),
      ...(options.address ? { remoteAddress: options.address } : {}),
    });
    const header = (name: string) => {
      const value = res.headers[name.toLowerCase()];
      return value === undefined ? undefined : String(value);
    };
    return {
      status: res.statusCode,
      header,
      setCookies: ([] as string[]).concat((res.headers['set-cookie'] as string | string[] | undefined) ?? []),
      text: res.body,
    };
  };
}

function fetchSender(baseUrl: string): Send {
  return async (method, path, options = {}) => {
    const { payload, headers } = payloadOf(options);
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(payload === undefined ? {} : { body: payload }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return {
      status: res.status,
      header: (name: string) => res.headers.get(name) ?? undefined,
      setCookies: res.headers.getSetCookie(),
      text: await res.text(),
    };
  };
}

const secret = (label: string) => `${label}-${randomBytes(9).toString('base64url')}`;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function sessionToken(reply: Reply): string {
  const token = tokenIn(reply.setCookies);
  assert.ok(token, `no session cookie in ${JSON.stringify(reply.setCookies)}`);
  return token;
}

interface Attempt {
  outcome: 'success' | 'failure' | 'throttled' | 'invalid';
  address: string;
  /** Expected on successes. */
  userId?: string;
}

interface Exercise {
  /** Every value that must never reach a log line. */
  secrets: string[];
  /** Every sign-in attempt with a well-formed body, in order. */
  attempts: Attempt[];
  /** How many requests the run made. */
  requests: number;
}

/**
 * Calls every endpoint (register, sign-in success/failure/throttled, token sign-in, GET user, list
 * users, PUT user with a new password and with a wrong present one, DELETE user, products and
 * reviews CRUD, the current session and the session list, ending sessions, sign-out, /rest,
 * /healthz, /readyz, an unknown route, malformed bodies), with the cookie and with Bearer auth.
 * `address(i)` is the client address of the i-th request (undefined: the socket's own).
 */
async function exerciseEverything(
  send: Send,
  tag: string,
  address: (i: number) => string,
): Promise<Exercise> {
  const secrets: string[] = [];
  const attempts: Attempt[] = [];
  let requests = 0;
  const keep = (value: string) => {
    secrets.push(value);
    return value;
  };
  const call = async (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    options: RequestOptions = {},
    expected?: number,
  ) => {
    requests += 1;
    const reply = await send(method, path, { address: address(requests), ...options });
    if (expected !== undefined) {
      assert.equal(reply.status, expected, `${method} ${path}: ${reply.text}`);
    }
    return reply;
  };
  const signin = async (
    email: string,
    password: string,
    outcome: Attempt['outcome'],
    userId?: string,
    extra: Record<string, unknown> = {},
  ) => {
    const at = address(requests + 1);
    const status = outcome === 'success' ? 200 : outcome === 'failure' ? 401 : 429;
    const reply = await call(
      'POST',
      '/api/signin',
      { body: { ...extra, email, password }, address: at },
      status,
    );
    attempts.push({ outcome, address: at, ...(userId ? { userId } : {}) });
    return reply;
  };

  const tracker = keep(secret('tracker-cookie'));
  const cookieOf = (token: string) => ({ cookie: `usher_session=${token}; tracker=${tracker}` });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const remember = (token: string) => {
    keep(token);
    keep(sha256(token));
    return token;
  };

  // Registration.
  const alice = {
    email: `alice.${tag}@example.com`,
    name: 'Alice Logs',
    password: keep(secret('alice-first-password')),
  };
  const bob = { email: `bob.${tag}@example.com`, name: 'Bob Logs', password: keep(secret('bob-password')) };
  const carol = {
    email: `carol.${tag}@example.com`,
    name: 'Carol Logs',
    password: keep(secret('carol-password')),
  };
  const aliceId = String(JSON.parse((await call('POST', '/api/users', { body: alice }, 201)).text).id);
  const bobId = String(JSON.parse((await call('POST', '/api/users', { body: bob }, 201)).text).id);
  await call('POST', '/api/users', { body: carol }, 201);
  await call('POST', '/api/users', { body: { ...alice, email: alice.email.toUpperCase() } }, 409);
  await call('POST', '/api/users', { body: { ...alice, email: 'not-an-email' } }, 400);
  await call(
    'POST',
    '/api/users',
    { body: { ...alice, email: `short.${tag}@example.com`, password: 'short' } },
    400,
  );

  // Sign-in: successes (two sessions: one used as a cookie, one as a Bearer token), failures, throttling.
  const cookieToken = remember(sessionToken(await signin(alice.email, alice.password, 'success', aliceId)));
  const bearerToken = remember(sessionToken(await signin(alice.email, alice.password, 'success', aliceId)));
  await signin(alice.email, keep(secret('alice-wrong-password')), 'failure');
  await signin(`nobody.${tag}@example.com`, keep(secret('nobody-password')), 'failure');
  await signin('', '', 'failure');
  const carolAt = address(10_000);
  for (let i = 0; i < PER_ACCOUNT_ADDRESS; i++) {
    await call('POST', '/api/signin', {
      body: { email: carol.email, password: keep(secret(`carol-wrong-${i}`)) },
      address: carolAt,
    });
    attempts.push({ outcome: 'failure', address: carolAt });
  }
  const throttled = await call('POST', '/api/signin', {
    body: { email: carol.email, password: carol.password },
    address: carolAt,
  });
  assert.equal(throttled.status, 429, throttled.text);
  attempts.push({ outcome: 'throttled', address: carolAt });
  // Sign-in ignores extra fields, secrets in them included.
  remember(
    sessionToken(
      await signin(alice.email, alice.password, 'success', aliceId, { token: keep(secret('extra-token')) }),
    ),
  );
  await signin(alice.email, keep(secret('alice-wrong-again')), 'failure', undefined, {
    extra: { password: keep(secret('nested-password')) },
  });

  // Users: one, list (with paging), cookie and Bearer.
  await call('GET', `/api/users/${aliceId}`, { headers: cookieOf(cookieToken) }, 200);
  await call('GET', `/api/users/${aliceId}`, { headers: bearer(bearerToken) }, 200);
  await call('GET', '/api/users/999999999', { headers: bearer(bearerToken) }, 404);
  await call('GET', '/api/users', { headers: cookieOf(cookieToken) }, 200);
  await call('GET', '/api/users?page=1&size=2&sort=-id', { headers: bearer(bearerToken) }, 200);
  await call('GET', '/api/users?size=9999', { headers: bearer(bearerToken) }, 400);

  // Products: create, read, list, replace, delete; with the cookie and with Bearer.
  const product = JSON.parse(
    (
      await call(
        'POST',
        '/api/products',
        { body: { name: 'Lamp', description: 'A lamp', price: 1999 }, headers: cookieOf(cookieToken) },
        201,
      )
    ).text,
  ) as { id: number };
  const spare = JSON.parse(
    (
      await call(
        'POST',
        '/api/products',
        { body: { name: 'Spare', price: 1 }, headers: bearer(bearerToken) },
        201,
      )
    ).text,
  ) as { id: number };
  await call('POST', '/api/products', { body: { name: 'Anonymous', price: 1 } }, 401);
  await call('GET', '/api/products', {}, 200);
  await call('GET', `/api/products/${product.id}`, { headers: cookieOf(cookieToken) }, 200);
  await call(
    'PUT',
    `/api/products/${product.id}`,
    { body: { name: 'Lamp 2', description: 'Brighter', price: 2999 }, headers: bearer(bearerToken) },
    200,
  );
  await call(
    'PUT',
    `/api/products/${product.id}`,
    { body: { name: 'Lamp 3', price: 1 }, headers: cookieOf(cookieToken) },
    200,
  );
  await call('DELETE', `/api/products/${spare.id}`, { headers: cookieOf(cookieToken) }, 204);

  // Reviews, nested under the product.
  const review = JSON.parse(
    (
      await call(
        'POST',
        `/api/products/${product.id}/reviews`,
        { body: { rating: 5, text: 'Bright' }, headers: bearer(bearerToken) },
        201,
      )
    ).text,
  ) as { id: number };
  const second = JSON.parse(
    (
      await call(
        'POST',
        `/api/products/${product.id}/reviews`,
        { body: { rating: 1 }, headers: cookieOf(cookieToken) },
        201,
      )
    ).text,
  ) as { id: number };
  await call('GET', `/api/products/${product.id}/reviews?page=1&size=10&sort=time`, {}, 200);
  await call('GET', `/api/products/${product.id}/reviews/${review.id}`, {}, 200);
  await call(
    'PUT',
    `/api/products/${product.id}/reviews/${review.id}`,
    { body: { rating: 4, text: 'Fine' }, headers: cookieOf(cookieToken) },
    200,
  );
  await call(
    'PUT',
    `/api/products/${product.id}/reviews/${second.id}`,
    { body: { rating: 2 }, headers: bearer(bearerToken) },
    200,
  );
  await call(
    'DELETE',
    `/api/products/${product.id}/reviews/${second.id}`,
    { headers: bearer(bearerToken) },
    204,
  );
  await call(
    'DELETE',
    `/api/products/${product.id}/reviews/${review.id}`,
    { headers: cookieOf(cookieToken) },
    204,
  );

  // A new password, set over Bearer: the cookie session ends, the Bearer one stays.
  const newPassword = keep(secret('alice-second-password'));
  await call(
    'PUT',
    `/api/users/${aliceId}`,
    {
      body: {
        email: alice.email,
        name: 'Alice Renamed',
        password: newPassword,
        currentPassword: alice.password,
      },
      headers: bearer(bearerToken),
    },
    200,
  );
  await call(
    'PUT',
    `/api/users/${aliceId}`,
    {
      body: {
        email: alice.email,
        name: 'Alice Again',
        password: keep(secret('x')),
        currentPassword: newPassword,
      },
      headers: cookieOf(cookieToken),
    },
    401,
  );
  await call(
    'PUT',
    `/api/users/${bobId}`,
    {
      body: {
        email: bob.email,
        name: 'Not Yours',
        password: keep(secret('hijack')),
        currentPassword: newPassword,
      },
      headers: bearer(bearerToken),
    },
    403,
  );
  await call(
    'PUT',
    `/api/users/${aliceId}`,
    {
      body: { email: alice.email, name: 'Alice', password: 'password', currentPassword: newPassword },
      headers: bearer(bearerToken),
    },
    400,
  );
  await signin(alice.email, alice.password, 'failure');
  const afterChange = remember(sessionToken(await signin(alice.email, newPassword, 'success', aliceId)));
  await call('GET', `/api/users/${aliceId}`, { headers: cookieOf(afterChange) }, 200);

  // Bob deletes his own account (Bearer).
  const bobToken = remember(sessionToken(await signin(bob.email, bob.password, 'success', bobId)));
  await call('DELETE', `/api/users/${bobId}`, { headers: bearer(bobToken) }, 204);

  // /rest, health, an unknown route, malformed and non-JSON bodies (each holding a password).
  await call('POST', '/rest', { body: { email: alice.email, password: keep(secret('rest-password')) } }, 200);
  await call(
    'POST',
    '/rest',
    { body: `{"email":"${alice.email}","password":"${keep(secret('rest-broken'))}"` },
    200,
  );
  await call('GET', '/healthz', {}, 200);
  await call('GET', '/readyz', {}, 200);
  await call('GET', '/no/such/route', { headers: cookieOf(afterChange) }, 404);
  await call('GET', '/openapi.json');
  await call('GET', '/metrics', { headers: bearer(afterChange) });
  await call(
    'POST',
    '/api/users',
    { body: `{"email":"m@example.com","name":"M","password":"${keep(secret('malformed-registration'))}"` },
    400,
  );
  await call(
    'POST',
    '/api/products',
    { body: `{"name":"${keep(secret('malformed-product'))}",`, headers: bearer(afterChange) },
    400,
  );
  await call(
    'PUT',
    `/api/users/${aliceId}`,
    {
      body: `{"email":"${alice.email}","name":"A","password":"${keep(secret('malformed-put'))}"}}`,
      headers: bearer(afterChange),
    },
    400,
  );
  const form = await call('POST', '/api/users', {
    body: `email=f%40example.com&password=${keep(secret('form-password'))}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.ok(form.status === 400 || form.status === 415, `form body: ${form.status}`);
  const badSigninAt = address(requests + 1);
  const badSignin = await call('POST', '/api/signin', {
    body: `{"email":"${alice.email}","password":"${keep(secret('malformed-signin'))}"`,
    address: badSigninAt,
  });
  assert.equal(badSignin.status, 400, badSignin.text);
  // An unreadable body never reaches the credential check: audited with outcome "invalid".
  attempts.push({ outcome: 'invalid', address: badSigninAt });

  // Token sign-in (no cookie: the token is in the body), the session routes, a wrong present password.
  const tokenAt = address(requests + 1);
  const issued = JSON.parse(
    (
      await call(
        'POST',
        '/api/sessions',
        {
          body: { email: alice.email, password: newPassword, code: keep(secret('unused-code')) },
          address: tokenAt,
        },
        201,
      )
    ).text,
  ) as { token: string; session: { id: string } };
  remember(issued.token);
  attempts.push({ outcome: 'success', address: tokenAt, userId: aliceId });
  const wrongTokenAt = address(requests + 1);
  await call(
    'POST',
    '/api/sessions',
    { body: { email: alice.email, password: keep(secret('token-wrong')) }, address: wrongTokenAt },
    401,
  );
  attempts.push({ outcome: 'failure', address: wrongTokenAt });
  await call('GET', '/api/session', { headers: bearer(issued.token) }, 200);
  await call('GET', '/api/sessions', { headers: cookieOf(afterChange) }, 200);
  await call(
    'PUT',
    `/api/users/${aliceId}`,
    {
      body: { email: `moved.${alice.email}`, name: 'A', currentPassword: keep(secret('wrong-current')) },
      headers: bearer(issued.token),
    },
    400,
  );
  await call('DELETE', `/api/sessions/${issued.session.id}`, { headers: cookieOf(afterChange) }, 204);
  await call('GET', '/api/session', { headers: bearer(issued.token) }, 401);
  await call('DELETE', '/api/sessions', { headers: bearer(bearerToken) }, 204);

  // Sign-out: cookie, then Bearer, then with nothing at all.
  const signedOut = await call('POST', '/api/signout', { headers: cookieOf(afterChange) }, 204);
  assert.ok(signedOut.setCookies.some((c) => /^usher_session=;/.test(c)));
  await call('POST', '/api/signout', { headers: bearer(bearerToken) }, 204);
  await call('POST', '/api/signout', {}, 204);
  await call('GET', `/api/users/${aliceId}`, { headers: bearer(bearerToken) }, 200);

  return { secrets, attempts, requests };
}

interface LogLine {
  raw: string;
  json: Record<string, unknown> | undefined;
}

function logLines(text: string): LogLine[] {
  return text
    .split('\n')
    .filter((raw) => raw.trim() !== '')
    .map((raw) => {
      try {
        return { raw, json: JSON.parse(raw) as Record<string, unknown> };
      } catch {
        return { raw, json: undefined };
      }
    });
}

/** How many lines are about one request (access-log lines carry its URL, whatever their format). */
function requestLines(lines: LogLine[]): number {
  return lines.filter((l) => {
    const req = l.json?.req as { url?: unknown } | undefined;
    return typeof l.json?.url === 'string' || typeof req?.url === 'string';
  }).length;
}

/** Waits (bounded) until the child's stdout has ended, so output() holds every line it wrote. */
async function drained(server: ServerProcess): Promise<void> {
  const stdout = server.child.stdout;
  if (!stdout || stdout.closed) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, REQUEST_TIMEOUT_MS);
    stdout.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The password hashes stored for the users this file made, and the parts a partial leak would show. */
async function storedHashFragments(store: Store): Promise<string[]> {
  const database = openTestDatabase(store);
  try {
    const rows = await database.db
      .selectFrom('password_credentials')
      .select('hash as password_hash')
      .execute();
    return rows.flatMap((r) => {
      const parts = r.password_hash.split('$');
      // $argon2id$v=19$m=…$salt$tag: the whole string, the salt and the tag.
      return [r.password_hash, parts.at(-2) ?? '', parts.at(-1) ?? ''].filter((p) => p.length >= 16);
    });
  } finally {
    await database.close();
  }
}

/** Asserts that no line holds any secret, any argon2 hash or fragment of one. */
function assertNoSecrets(lines: LogLine[], secrets: string[], hashFragments: string[]): void {
  assert.ok(lines.length > 0, 'no log lines at all');
  for (const line of lines) {
    assert.ok(!line.raw.includes('$argon2'), `a log line holds an argon2 hash: ${line.raw}`);
    assert.doesNotMatch(line.raw, /"password(_?hash)?"\s*:\s*"(?!\[redacted\])/i, 'a password field');
    for (const value of [...secrets, ...hashFragments]) {
      assert.ok(!line.raw.includes(value), `a log line holds ${value.slice(0, 24)}…: ${line.raw}`);
      // A Buffer is logged as its bytes: look for those too.
      assert.ok(!line.raw.includes(Buffer.from(value).join(',')), `a log line holds the bytes of ${value}`);
    }
  }
}

/** Every attempt has exactly one `event: "signin"` line, in order, with outcome, address and userId. */
function assertSigninAudit(lines: LogLine[], attempts: Attempt[], addressOf?: (a: Attempt) => string): void {
  const audit = lines.filter((l) => l.json?.event === 'signin').map((l) => l.json!);
  assert.equal(
    audit.length,
    attempts.length,
    `${attempts.length} sign-in attempts, ${audit.length} signin lines:\n${audit.map((a) => JSON.stringify(a)).join('\n')}`,
  );
  attempts.forEach((attempt, i) => {
    const line = audit[i]!;
    assert.equal(line.outcome, attempt.outcome, `attempt ${i}: ${JSON.stringify(line)}`);
    assert.equal(line.address, addressOf ? addressOf(attempt) : attempt.address, `attempt ${i} address`);
    if (attempt.outcome === 'success') {
      assert.equal(line.userId, attempt.userId, `attempt ${i}: userId on a success`);
    }
    assert.ok(['success', 'failure', 'throttled', 'invalid'].includes(String(line.outcome)));
  });
}

describeEachStore('Logs hold no secrets; sign-ins are audited', (store) => {
  let t: TestApp;
  let inProcess: Exercise;
  /** The in-process log lines of the exercise alone: other tests here log on the same app. */
  let exerciseLogs: string;
  before(async () => {
    t = await startApp(store, 'b', {
      logLevel: 'debug',
      throttle: {
        windowMs: 900_000,
        perAccountAddress: PER_ACCOUNT_ADDRESS,
        perAccount: 100,
        perAddress: 100,
        concurrentPerAccount: 1000,
        concurrentPerAddress: 1000,
        deviceTtlMs: 180 * 24 * 3600 * 1000,
      },
    });
    // Each request from its own client address, so the audit lines can be matched to requests.
    inProcess = await exerciseEverything(
      injectSender(t),
      `app.${process.pid}`,
      (i) => `10.88.${i >> 8}.${i & 255}`,
    );
    exerciseLogs = t.logs.join('');
  });
  after(() => t.close());

  test('ISSUE 5: no in-process log line (debug) holds a password, an argon2 hash, a session token (raw or SHA-256) or a cookie value', async () => {
    const lines = logLines(exerciseLogs);
    assertNoSecrets(lines, inProcess.secrets, await storedHashFragments(store));
    // The run really logged its requests (so the search above searched something).
    assert.ok(requestLines(lines) >= inProcess.requests, `${inProcess.requests} requests`);
  });

  test('ISSUE 5: every in-process sign-in attempt has a log line with event "signin", its outcome, the client address, and the userId on success', () => {
    assert.ok(inProcess.attempts.some((a) => a.outcome === 'throttled'));
    assertSigninAudit(logLines(exerciseLogs), inProcess.attempts);
  });

  test('ISSUE 5: a sign-in refused for a malformed body (400) is audited too, with outcome "invalid"', async () => {
    const before = t.logs.length;
    const res = await t.post('/api/signin', '{"email":"someone@example.com","password":', {});
    assert.equal(res.statusCode, 400);
    const wrongType = await t.post('/api/signin', { email: 'someone@example.com', password: 12345678 });
    assert.equal(wrongType.statusCode, 400);
    const audit = logLines(t.logs.slice(before).join('')).filter((l) => l.json?.event === 'signin');
    assert.equal(audit.length, 2, 'expected one signin line per refused attempt');
    for (const line of audit) {
      assert.equal(line.json?.outcome, 'invalid');
      assert.equal(line.json?.status, 400);
    }
  });

  test('ISSUE 5: a real server at LOG_LEVEL=debug logs no secret on stdout and audits every sign-in', {
    timeout: SERVER_TEST_TIMEOUT_MS,
  }, async () => {
    const server = await startServer({
      DATABASE_URL: store.url,
      LOG_LEVEL: 'debug',
      SIGNIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS: String(PER_ACCOUNT_ADDRESS),
    });
    let run: Exercise;
    try {
      run = await exerciseEverything(fetchSender(server.url), `server.${process.pid}`, () => '127.0.0.1');
    } finally {
      assert.equal(await server.stop('SIGTERM'), 0, server.output());
      await drained(server);
    }
    const lines = logLines(server.output());
    assertNoSecrets(lines, run.secrets, await storedHashFragments(store));
    assert.ok(
      requestLines(lines) >= run.requests,
      `${requestLines(lines)} request lines, ${run.requests} requests`,
    );
    assertSigninAudit(lines, run.attempts, () => '127.0.0.1');
  });

  test('CONTRACT: a request the HTTP parser refuses (LOG_LEVEL=trace) does not log its raw bytes: cookie, Bearer token, password', {
    timeout: SERVER_TEST_TIMEOUT_MS,
  }, async () => {
    const server: ServerProcess = await startServer({ DATABASE_URL: store.url, LOG_LEVEL: 'trace' });
    const token = secret('raw-token-abcdefghijklmnop');
    const password = secret('raw-password');
    try {
      const body = JSON.stringify({ email: 'raw@example.com', password });
      const request =
        'POST /api/signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Cookie: usher_session=${token}\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`;
      await new Promise<void>((resolve) => {
        const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
        const timer = setTimeout(() => socket.destroy(), REQUEST_TIMEOUT_MS);
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
        socket.on('data', () => {});
        socket.write(request);
      });
      // The refusal is logged before the server closes the socket; the log is flushed at the SIGTERM.
    } finally {
      assert.equal(await server.stop('SIGTERM'), 0, server.output());
      await drained(server);
    }
    assertNoSecrets(logLines(server.output()), [token, password], []);
  });
});
