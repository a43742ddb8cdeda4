import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { type AppOptions, buildApp } from '../../src/app.ts';
import { type Config, loadConfig, type Profile } from '../../src/config.ts';
import type { App } from '../../src/shared/fastify.ts';
import type { Store } from './stores.ts';

/** Cheap argon2id so tests stay fast; production settings cannot go this low (config enforces it). */
export const CHEAP_HASH = {
  memoryKiB: 1024,
  passes: 1,
  parallelism: 1,
  concurrency: 4,
  queueLimit: 1000,
} as const;

export interface TestApp {
  readonly app: App;
  readonly profile: Profile;
  /** Every log line the app wrote, raw. */
  readonly logs: string[];
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** Limits no test reaches, for suites that test something else than throttling with many sign-ins. */
export const NO_THROTTLE = {
  windowMs: 900_000,
  perAccountAddress: 1e6,
  perAccount: 1e6,
  perAddress: 1e6,
  concurrentPerAccount: 1e6,
  concurrentPerAddress: 1e6,
  deviceTtlMs: 180 * 24 * 3600 * 1000,
} as const;

/**
 * Registration limits no test reaches: nearly every test registers its users from one address
 * (127.0.0.1), many at once. Tests of the limits themselves set theirs.
 */
export const NO_REGISTRATION_LIMITS = {
  perAddress: 1e6,
  windowMs: 900_000,
  concurrentPerAddress: 1e6,
  concurrent: 1e6,
} as const;

/** Where this test process's apps write mail when no SMTP server is configured. */
export const TEST_OUTBOX = mkdtempSync(join(tmpdir(), 'usher-outbox-'));

/**
 * PostgreSQL's connect and statement timeouts of the tests' apps and servers. The operator's
 * defaults (2 s and 5 s) are bounds on a failure that a loaded 2-core machine reaches without one:
 * a new connection took 1.9 s there beside two CPU burners, and an app answered 503 for it. Tests
 * of the timeouts themselves set their own.
 */
export const TEST_DATABASE_TIMEOUTS = { connectTimeoutMs: 30_000, statementTimeoutMs: 60_000 } as const;

export function testConfig(store: Store, profile: Profile, overrides: Partial<Config> = {}): Config {
  const defaults = loadConfig({ DATABASE_URL: store.url, PROFILE: profile, LOG_LEVEL: 'info' });
  return {
    ...defaults,
    database: { ...defaults.database, ...TEST_DATABASE_TIMEOUTS },
    passwordHash: { ...CHEAP_HASH },
    mail: { ...defaults.mail, outboxDir: TEST_OUTBOX },
    registration: { ...NO_REGISTRATION_LIMITS },
    ...overrides,
  };
}

export async function startApp(
  store: Store,
  profile: Profile,
  overrides: Partial<Config> = {},
  options: Pick<AppOptions, 'clock' | 'features'> = {},
): Promise<TestApp> {
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = await buildApp(testConfig(store, profile, overrides), { logStream, ...options });
  return {
    app,
    profile,
    logs,
    inject: (options) => app.inject(options),
    get: (url) => app.inject({ method: 'GET', url }),
    post: (url, body, headers = {}) =>
      app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', ...headers },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    close: () => app.close(),
  };
}

let counter = 0;
/** A registration body with an email no other test in this process uses. */
export function newUser(overrides: Partial<{ email: string; name: string; password: string }> = {}) {
  counter += 1;
  return {
    email: `user${counter}.${process.pid}@example.com`,
    name: `User ${counter}`,
    password: `pass-${counter}-word`,
    ...overrides,
  };
}

export async function register(t: TestApp, body = newUser()) {
  const res = await t.post('/api/users', body);
  if (res.statusCode !== 201) throw new Error(`registration failed: ${res.statusCode} ${res.body}`);
  return { ...body, id: BigInt(res.json().id), res };
}

/** True when text holds a password value, a `password`/`passwordHash` key, or an argon2 hash. */
export function leaksSecret(text: string, passwords: readonly string[] = []): boolean {
  return (
    text.includes('$argon2') ||
    /"password(_?hash)?"\s*:/i.test(text) ||
    passwords.some((p) => p !== '' && text.includes(p))
  );
}

/** The session token in Set-Cookie header values (any shape a client library gives them in). */
export function sessionToken(setCookie: string | readonly string[] | null | undefined): string | undefined {
  for (const cookie of ([] as string[]).concat(setCookie ?? [])) {
    const token = /(?:^|\n)usher_session=([^;]+)/.exec(cookie)?.[1];
    if (token) return token;
  }
  return undefined;
}

/** Signs in and returns the session token taken from the Set-Cookie header. */
export async function signIn(t: TestApp, user: { email: string; password: string }): Promise<string> {
  const res = await t.post('/api/signin', { email: user.email, password: user.password });
  if (res.statusCode !== 200) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  const token = sessionToken(res.headers['set-cookie']);
  if (!token) throw new Error(`no session cookie in ${res.headers['set-cookie']}`);
  return token;
}

/** A JSON request with a Bearer token. */
export function asUser(t: TestApp, token: string) {
  const send = (method: 'POST' | 'PUT' | 'DELETE' | 'GET', url: string, body?: unknown) =>
    t.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  return {
    get: (url: string) => send('GET', url),
    post: (url: string, body: unknown) => send('POST', url, body),
    put: (url: string, body: unknown) => send('PUT', url, body),
    delete: (url: string) => send('DELETE', url),
  };
}

/**
 * A profile A and a profile B app on the store, started in the enclosing suite's `before` and
 * closed in its `after`. The handles are usable as soon as the suite's tests (and later hooks) run.
 */
export function profileApps(store: Store): { a: TestApp; b: TestApp } {
  const started: Partial<Record<Profile, TestApp>> = {};
  const handle = (profile: Profile): TestApp => {
    const real = () => {
      const t = started[profile];
      if (!t) throw new Error(`the profile ${profile} app is used before the suite started it`);
      return t;
    };
    return {
      profile,
      get app() {
        return real().app;
      },
      get logs() {
        return real().logs;
      },
      inject: (options) => real().inject(options),
      get: (url) => real().get(url),
      post: (url, body, headers) => real().post(url, body, headers),
      close: () => real().close(),
    };
  };
  before(async () => {
    started.a = await startApp(store, 'a');
    started.b = await startApp(store, 'b');
  });
  after(async () => {
    await started.a?.close();
    await started.b?.close();
  });
  return { a: handle('a'), b: handle('b') };
}
