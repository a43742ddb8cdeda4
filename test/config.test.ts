// Configuration (CONTRACT "Running it"): defaults, accepted values, and a bad setting stopping the
// process before it listens with one clear line naming the setting and what is accepted.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ARGON2_MINIMUM, ConfigError, LOG_LEVELS, loadConfig } from '../src/config.ts';

const SERVER = join(import.meta.dirname, '..', 'src', 'server.ts');

/** Asserts loadConfig(env) throws a ConfigError for `setting`, on one line that starts with its name. */
function assertRejected(env: Record<string, string>, setting: string): ConfigError {
  let caught: unknown;
  try {
    loadConfig(env);
  } catch (error) {
    caught = error;
  }
  assert.ok(
    caught instanceof ConfigError,
    `expected a ConfigError for ${JSON.stringify(env)}, got ${caught}`,
  );
  assert.equal(caught.setting, setting);
  assert.ok(
    caught.message.startsWith(setting),
    `message should start with ${setting}: ${JSON.stringify(caught.message)}`,
  );
  assert.ok(!caught.message.includes('\n'), 'the message is one line');
  return caught;
}

describe('loadConfig defaults', () => {
  test('CONTRACT: with nothing set, PORT is 3000', () => {
    assert.equal(loadConfig({}).port, 3000);
  });

  test('CONTRACT: with nothing set, HOST is 127.0.0.1', () => {
    assert.equal(loadConfig({}).host, '127.0.0.1');
  });

  test('CONTRACT: with nothing set, PROFILE is b', () => {
    assert.equal(loadConfig({}).profile, 'b');
  });

  test('CONTRACT: with nothing set, DATABASE_URL is sqlite:./data/usher.db', () => {
    assert.equal(loadConfig({}).databaseUrl, 'sqlite:./data/usher.db');
  });

  test('CONTRACT: with nothing set, LOG_LEVEL is info', () => {
    assert.equal(loadConfig({}).logLevel, 'info');
  });

  test('CONTRACT: with nothing set, one worker runs', () => {
    assert.equal(loadConfig({}).workers, 1);
  });

  test('CONTRACT: the default argon2id parameters are at least m=19456 KiB, t=2, p=1', () => {
    const { passwordHash } = loadConfig({});
    assert.ok(passwordHash.memoryKiB >= 19456);
    assert.ok(passwordHash.passes >= 2);
    assert.ok(passwordHash.parallelism >= 1);
    assert.ok(passwordHash.concurrency >= 1);
  });

  test('CONTRACT: an empty setting counts as not set', () => {
    const config = loadConfig({ PORT: '', HOST: '', PROFILE: '', DATABASE_URL: '', LOG_LEVEL: '' });
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.profile, 'b');
    assert.equal(config.databaseUrl, 'sqlite:./data/usher.db');
    assert.equal(config.logLevel, 'info');
  });
});

describe('loadConfig accepted values', () => {
  test('CONTRACT: PORT accepts any port from 0 to 65535', () => {
    for (const port of ['0', '1', '8080', '65535'])
      assert.equal(loadConfig({ PORT: port }).port, Number(port));
  });

  test('CONTRACT: HOST accepts host names and IPv4/IPv6 addresses', () => {
    for (const host of ['localhost', '0.0.0.0', '10.1.2.3', '::', '::1', 'usher.internal']) {
      assert.equal(loadConfig({ HOST: host }).host, host);
    }
  });

  test('CONTRACT: PROFILE accepts a and b', () => {
    assert.equal(loadConfig({ PROFILE: 'a' }).profile, 'a');
    assert.equal(loadConfig({ PROFILE: 'b' }).profile, 'b');
  });

  test('CONTRACT: DATABASE_URL accepts sqlite:<path>, sqlite::memory:, postgres:// and postgresql://', () => {
    for (const url of [
      'sqlite:./data/other.db',
      'sqlite:/var/lib/usher/usher.db',
      'sqlite::memory:',
      'postgres://usher@127.0.0.1:5432/usher',
      'postgresql://usher:secret@db.example.com/usher',
    ]) {
      assert.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url);
    }
  });

  test('CONTRACT: LOG_LEVEL accepts fatal, error, warn, info, debug and trace', () => {
    assert.deepStrictEqual([...LOG_LEVELS], ['fatal', 'error', 'warn', 'info', 'debug', 'trace']);
    for (const level of LOG_LEVELS) assert.equal(loadConfig({ LOG_LEVEL: level }).logLevel, level);
  });

  test('CONTRACT: ARGON2_MEMORY_KIB accepts the OWASP minimum (19456) and more', () => {
    assert.equal(ARGON2_MINIMUM.memoryKiB, 19456);
    assert.equal(loadConfig({ ARGON2_MEMORY_KIB: '19456' }).passwordHash.memoryKiB, 19456);
    assert.equal(loadConfig({ ARGON2_MEMORY_KIB: '65536' }).passwordHash.memoryKiB, 65536);
  });

  test('CONTRACT: WORKERS accepts a positive count or auto', () => {
    assert.equal(loadConfig({ WORKERS: '1' }).workers, 1);
    assert.equal(loadConfig({ WORKERS: '4' }).workers, 4);
    assert.ok(loadConfig({ WORKERS: 'auto' }).workers >= 1);
  });
});

describe('loadConfig refuses bad values with a ConfigError naming the setting', () => {
  const cases: readonly (readonly [setting: string, value: string])[] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['PORT', '3000.5'],
    ['PORT', ' 3000'],
    ['PORT', '0x10'],
    ['PROFILE', 'c'],
    ['PROFILE', 'ab'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', './data/usher.db'],
    ['DATABASE_URL', 'sqlite:'],
    ['DATABASE_URL', 'postgres://'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_LEVEL', 'warning'],
    ['ARGON2_MEMORY_KIB', '19455'],
    ['ARGON2_MEMORY_KIB', '1024'],
    ['ARGON2_MEMORY_KIB', 'lots'],
    ['ARGON2_PASSES', '1'],
    ['WORKERS', '0'],
    ['WORKERS', 'many'],
    ['HOST', 'bad host'],
    ['HASH_THREAD_NICE', '20'],
    ['HASH_THREAD_NICE', '-5'],
    ['HASH_THREAD_NICE', 'lowest'],
    ['UV_THREADPOOL_SIZE', '0'],
  ];
  for (const [setting, value] of cases) {
    test(`CONTRACT: ${setting}=${JSON.stringify(value)} is refused with a message starting with ${setting}`, () => {
      assertRejected({ [setting]: value }, setting);
    });
  }

  test('CONTRACT: the message says what is accepted', () => {
    assert.match(assertRejected({ PORT: 'abc' }, 'PORT').message, /65535/);
    assert.match(assertRejected({ PROFILE: 'c' }, 'PROFILE').message, /\ba\b.*\bb\b/);
    assert.match(assertRejected({ LOG_LEVEL: 'loud' }, 'LOG_LEVEL').message, /info/);
    assert.match(assertRejected({ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL').message, /sqlite:.*postgres/);
    assert.match(assertRejected({ ARGON2_MEMORY_KIB: '1024' }, 'ARGON2_MEMORY_KIB').message, /19456/);
    assert.match(assertRejected({ HASH_THREAD_NICE: '20' }, 'HASH_THREAD_NICE').message, /idle or .*0 to 19/);
  });

  test('the libuv pool holds the hash slots plus two spares, may not be smaller than slots + 1, and runs under SCHED_IDLE on SQLite and at nice 12 on PostgreSQL unless HASH_THREAD_NICE says otherwise', () => {
    assert.deepEqual(loadConfig({ HASH_CONCURRENCY: '3' }).threadpool, { size: 5, priority: 'idle' });
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/usher' }).threadpool.priority, 12);
    assert.equal(loadConfig({ HASH_THREAD_NICE: '12' }).threadpool.priority, 12);
    assert.equal(
      loadConfig({ DATABASE_URL: 'postgres://db/usher', HASH_THREAD_NICE: 'idle' }).threadpool.priority,
      'idle',
    );
    assert.equal(loadConfig({ HASH_THREAD_NICE: 'IDLE' }).threadpool.priority, 'idle');
    assert.equal(loadConfig({ HASH_THREAD_NICE: '0' }).threadpool.priority, 0);
    assert.equal(loadConfig({ HASH_CONCURRENCY: '3', UV_THREADPOOL_SIZE: '4' }).threadpool.size, 4);
    assert.match(
      assertRejected({ HASH_CONCURRENCY: '3', UV_THREADPOOL_SIZE: '3' }, 'UV_THREADPOOL_SIZE').message,
      /from 4 to/,
    );
  });

  test('CONTRACT: a bad DATABASE_URL message does not echo a password from the URL', () => {
    const error = assertRejected({ DATABASE_URL: 'mysql://usher:hunter2-secret@db/usher' }, 'DATABASE_URL');
    assert.ok(!error.message.includes('hunter2-secret'));
  });
});

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the server with only `env` (plus PATH) set; kills it if it has not exited within `timeoutMs`. */
// Only a limit on a failure (a process that never exits): 15 s was too short beside two CPU
// burners, where a process took 9-15 s to load its modules and stop at its configuration.
function runServer(env: Record<string, string>, cwd: string, timeoutMs = 60_000): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not exit within ${timeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe('the server process with a bad setting', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'usher-config-'));
  });
  after(() => rmSync(cwd, { recursive: true, force: true }));

  const bad: readonly (readonly [setting: string, value: string])[] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PROFILE', 'c'],
    ['DATABASE_URL', 'mysql://x'],
    ['LOG_LEVEL', 'loud'],
    ['ARGON2_MEMORY_KIB', '1024'],
    ['WORKERS', '0'],
  ];
  for (const [setting, value] of bad) {
    test(`CONTRACT: ${setting}=${value} stops the process (exit 2) with one stderr line naming ${setting}`, async () => {
      const exit = await runServer({ [setting]: value }, cwd);
      assert.equal(exit.signal, null);
      assert.equal(exit.code, 2, `exit ${exit.code}; stderr: ${exit.stderr}`);
      assert.equal(exit.stdout, '');
      const lines = exit.stderr.split('\n').filter((line) => line !== '');
      assert.equal(lines.length, 1, `expected one stderr line, got: ${JSON.stringify(exit.stderr)}`);
      assert.match(lines[0]!, new RegExp(`\\b${setting}\\b`));
      assert.ok(!lines[0]!.includes('    at '), 'no stack trace');
    });
  }

  test('CONTRACT: a bad setting stops the process before it creates the database', async () => {
    const exit = await runServer({ PROFILE: 'c' }, cwd);
    assert.equal(exit.code, 2);
    assert.ok(!existsSync(join(cwd, 'data')), `created: ${readdirSync(cwd).join(', ')}`);
  });
});

describe('account lifecycle settings (issue 13)', () => {
  test('PUBLIC_URL defaults to the listening address, named localhost for loopback and any-address hosts', () => {
    assert.equal(loadConfig({}).publicUrl, 'http://localhost:3000');
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).publicUrl, 'http://localhost:8080');
    assert.equal(loadConfig({ HOST: 'id.internal', PORT: '80' }).publicUrl, 'http://id.internal:80');
    assert.equal(loadConfig({ PUBLIC_URL: 'https://id.example.com/' }).publicUrl, 'https://id.example.com');
    for (const bad of [
      'id.example.com',
      'ftp://id.example.com',
      'https://id.example.com/?x=1',
      'https://x/#y',
    ]) {
      assertRejected({ PUBLIC_URL: bad }, 'PUBLIC_URL');
    }
  });

  test('CONTACT_URL (the OpenAPI contact) defaults to PUBLIC_URL and takes https://, http:// or mailto:', () => {
    assert.equal(loadConfig({}).contactUrl, 'http://localhost:3000');
    assert.equal(loadConfig({ PUBLIC_URL: 'https://id.example.com' }).contactUrl, 'https://id.example.com');
    assert.equal(loadConfig({ CONTACT_URL: 'mailto:ops@example.com' }).contactUrl, 'mailto:ops@example.com');
    for (const bad of ['ops@example.com', 'javascript:alert(1)', 'https://a b']) {
      assertRejected({ CONTACT_URL: bad }, 'CONTACT_URL');
    }
  });

  test('SMTP_URL is an smtp:// or smtps:// URL; unset means the .eml outbox', () => {
    assert.equal(loadConfig({}).mail.smtpUrl, undefined);
    assert.equal(loadConfig({}).mail.outboxDir, './data/outbox');
    assert.equal(
      loadConfig({ SMTP_URL: 'smtps://u:p@mail.example.com:465' }).mail.smtpUrl,
      'smtps://u:p@mail.example.com:465',
    );
    for (const bad of ['mail.example.com', 'http://mail.example.com', 'smtp://'])
      assertRejected({ SMTP_URL: bad }, 'SMTP_URL');
  });

  test('MAIL_FROM is one line; mail and token timings and the reset limits are bounded integers', () => {
    assertRejected({ MAIL_FROM: 'Usher <a@b.c>\r\nBcc: x@y.z' }, 'MAIL_FROM');
    const c = loadConfig({
      PASSWORD_RESET_TTL_SECONDS: '600',
      MAIL_POLL_MS: '250',
      PASSWORD_RESET_MAX_PER_ADDRESS: '5',
    });
    assert.equal(c.tokens.passwordResetTtlMs, 600_000);
    assert.equal(c.tokens.emailVerifyTtlMs, 86_400_000);
    assert.equal(c.mail.pollMs, 250);
    assert.equal(c.mail.maxAgeMs, 86_400_000);
    assert.equal(c.passwordReset.perAddress, 5);
    assert.equal(c.passwordReset.perAccount, 3);
    assertRejected({ PASSWORD_RESET_TTL_SECONDS: '0' }, 'PASSWORD_RESET_TTL_SECONDS');
    assertRejected({ MAIL_RETRY_SECONDS: 'a day' }, 'MAIL_RETRY_SECONDS');
  });

  test('REQUIRE_VERIFIED_EMAIL is true or false (default false); USER_LOOKUP is public, signed-in or self', () => {
    assert.equal(loadConfig({}).requireVerifiedEmail, false);
    assert.equal(loadConfig({ REQUIRE_VERIFIED_EMAIL: 'true' }).requireVerifiedEmail, true);
    assertRejected({ REQUIRE_VERIFIED_EMAIL: 'yes' }, 'REQUIRE_VERIFIED_EMAIL');
    assert.equal(loadConfig({}).userLookup, 'public');
    assert.equal(loadConfig({ USER_LOOKUP: 'self' }).userLookup, 'self');
    assertRejected({ USER_LOOKUP: 'friends' }, 'USER_LOOKUP');
  });

  test('ISSUE 25: the creation limits default to 1000 owned and 30 a minute each, and take positive integers', () => {
    assert.deepEqual(loadConfig({}).catalog, {
      products: { perUser: 1000, perMinute: 30 },
      reviews: { perUser: 1000, perMinute: 30 },
    });
    const c = loadConfig({ PRODUCTS_MAX_PER_USER: '5', REVIEWS_MAX_PER_MINUTE: '600' });
    assert.equal(c.catalog.products.perUser, 5);
    assert.equal(c.catalog.reviews.perMinute, 600);
    for (const setting of [
      'PRODUCTS_MAX_PER_USER',
      'PRODUCTS_MAX_PER_MINUTE',
      'REVIEWS_MAX_PER_USER',
      'REVIEWS_MAX_PER_MINUTE',
    ]) {
      assertRejected({ [setting]: '0' }, setting);
      assertRejected({ [setting]: 'lots' }, setting);
    }
    assertRejected({ PRODUCTS_MAX_PER_MINUTE: '60001' }, 'PRODUCTS_MAX_PER_MINUTE');
  });
});

describe('OIDC_RESOURCES and ACCESS_TOKEN_TTL_SECONDS (Usher as an OpenID Connect provider)', () => {
  test('none by default; access tokens live 300 s', () => {
    const config = loadConfig({});
    assert.deepEqual(config.oidc.resources, []);
    assert.equal(config.oidc.accessTokenTtlSeconds, 300);
  });

  test('a comma-separated list of absolute http(s) URIs, kept as written, duplicates once', () => {
    const config = loadConfig({
      OIDC_RESOURCES: 'https://api.example.com, https://billing.example.com/v1,https://api.example.com',
    });
    assert.deepEqual(config.oidc.resources, ['https://api.example.com', 'https://billing.example.com/v1']);
  });

  test('a relative URI, another scheme, a fragment or a space inside are refused, naming the setting', () => {
    for (const bad of [
      'api.example.com',
      '/api',
      'urn:example:api',
      'https://api.example.com#x',
      'ftp://a.example',
    ]) {
      const error = assertRejected({ OIDC_RESOURCES: bad }, 'OIDC_RESOURCES');
      assert.match(error.message, /absolute/);
    }
  });

  test('ACCESS_TOKEN_TTL_SECONDS from 30 s to a day', () => {
    assert.equal(loadConfig({ ACCESS_TOKEN_TTL_SECONDS: '30' }).oidc.accessTokenTtlSeconds, 30);
    assert.equal(loadConfig({ ACCESS_TOKEN_TTL_SECONDS: '86400' }).oidc.accessTokenTtlSeconds, 86_400);
    for (const bad of ['0', '29', '86401', 'ten', '-5'])
      assertRejected({ ACCESS_TOKEN_TTL_SECONDS: bad }, 'ACCESS_TOKEN_TTL_SECONDS');
  });
});

describe('DATABASE_POOLER (CONTRACT "Operating behind poolers")', () => {
  const PG = 'postgres://usher@127.0.0.1:6432/usher';

  test('none by default, on either store', () => {
    assert.equal(loadConfig({}).database.pooler, 'none');
    assert.equal(loadConfig({ DATABASE_URL: PG }).database.pooler, 'none');
  });

  test('none or transaction, in any case', () => {
    assert.equal(
      loadConfig({ DATABASE_URL: PG, DATABASE_POOLER: 'transaction' }).database.pooler,
      'transaction',
    );
    assert.equal(
      loadConfig({ DATABASE_URL: PG, DATABASE_POOLER: 'Transaction' }).database.pooler,
      'transaction',
    );
    assert.equal(loadConfig({ DATABASE_URL: PG, DATABASE_POOLER: 'none' }).database.pooler, 'none');
  });

  test('unset, a URL that says pgbouncer=true chooses transaction; a setting overrides the URL', () => {
    assert.equal(loadConfig({ DATABASE_URL: `${PG}?pgbouncer=true` }).database.pooler, 'transaction');
    assert.equal(loadConfig({ DATABASE_URL: `${PG}?pgbouncer=false` }).database.pooler, 'none');
    assert.equal(
      loadConfig({ DATABASE_URL: `${PG}?pgbouncer=true`, DATABASE_POOLER: 'none' }).database.pooler,
      'none',
    );
  });

  test('anything else, or transaction on SQLite, is refused, naming the setting', () => {
    for (const bad of ['session', 'statement', 'pgbouncer', 'yes'])
      assertRejected({ DATABASE_URL: PG, DATABASE_POOLER: bad }, 'DATABASE_POOLER');
    assert.match(assertRejected({ DATABASE_POOLER: 'transaction' }, 'DATABASE_POOLER').message, /PostgreSQL/);
  });
});
