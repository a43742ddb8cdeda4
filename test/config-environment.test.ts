// Config.environment (decision 393): the environment loadConfig read, frozen, from which a feature
// outside the built-in set reads its own section with the kernel's readers. It holds every secret,
// so it never reaches a log line or a response.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { ConfigError, integer } from '../src/kernel/settings.ts';
import { startApp, type TestApp } from './helpers/app.ts';
import { describeEachStore } from './helpers/stores.ts';

const SECRET = 'not-for-any-log-3b1f0c';

describe('Config.environment', () => {
  test('a frozen copy of what loadConfig was given, read with the kernel readers', () => {
    const given: Record<string, string> = { PORT: '4000', EXAMPLE_MAX: '7', EXAMPLE_TOKEN: SECRET };
    const config = loadConfig(given);
    assert.equal(config.environment.EXAMPLE_TOKEN, SECRET);
    assert.equal(integer(config.environment, 'EXAMPLE_MAX', 1, 1, 10), 7);
    assert.throws(
      () => integer(config.environment, 'EXAMPLE_TOKEN', 1, 1, 10),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.setting === 'EXAMPLE_TOKEN' &&
        error.message === `EXAMPLE_TOKEN: "${SECRET}" is not accepted; expected an integer from 1 to 10`,
    );
    assert.ok(Object.isFrozen(config.environment));
    given.EXAMPLE_MAX = '8';
    assert.equal(config.environment.EXAMPLE_MAX, '7', 'a copy, not the object given');
    assert.deepEqual(Object.keys(config.environment), ['PORT', 'EXAMPLE_MAX', 'EXAMPLE_TOKEN']);
    assert.equal({ ...config, port: 1 }.environment, config.environment, 'a spread of a Config keeps it');
  });

  test('without an argument, the copy is of process.env', () => {
    process.env.USHER_EXAMPLE_PROBE = 'seen';
    try {
      assert.equal(loadConfig().environment.USHER_EXAMPLE_PROBE, 'seen');
    } finally {
      delete process.env.USHER_EXAMPLE_PROBE;
    }
  });

  test('shows nothing of itself in JSON or util.inspect', () => {
    const config = loadConfig({ EXAMPLE_TOKEN: SECRET });
    assert.ok(!JSON.stringify(config).includes(SECRET));
    assert.ok(!inspect(config, { depth: Number.POSITIVE_INFINITY }).includes(SECRET));
    assert.equal(
      JSON.stringify({ environment: config.environment }),
      '{"environment":"[environment: not shown]"}',
    );
  });
});

describeEachStore('Config.environment and the log', (store) => {
  let t: TestApp;
  const config = loadConfig({ EXAMPLE_TOKEN: SECRET });
  before(async () => {
    t = await startApp(store, 'b', { environment: config.environment });
  });
  after(() => t.close());

  test('a Config logged whole, under a key, or its environment alone, never writes a value of it', () => {
    t.app.log.warn(config, 'a config');
    t.app.log.warn({ config }, 'a config under a key');
    t.app.log.warn({ environment: config.environment }, 'an environment');
    // Redacted by the logger too, where a copy has lost the marker.
    const plain = { ...config.environment };
    t.app.log.warn({ ...config, environment: plain }, 'a copy');
    t.app.log.warn({ config: { ...config, environment: plain } }, 'a copy under a key');
    const lines = t.logs.join('');
    assert.match(lines, /an environment/);
    assert.ok(!lines.includes(SECRET));
  });
});
