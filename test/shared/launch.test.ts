// The settings a process only gets at start (launch.ts, launchDefaults): the entry file starts
// itself again with them, in place, when they are missing, and never overrides the operator's.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  launchDefaults,
  MALLOC_ARENA_MAX_DEFAULT,
  MEMORY_REDUCER_FLAG,
  SEMI_SPACE_MIB_DEFAULT,
} from '../../src/launch.ts';
import { startServer } from '../helpers/process.ts';
import { describeUnless } from '../helpers/skip.ts';

const linux = existsSync('/proc/self/environ');
const dir = mkdtempSync(join(tmpdir(), 'usher-launch-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SEMI_SPACE_FLAG = `--max-semi-space-size=${SEMI_SPACE_MIB_DEFAULT}`;

/** The environment and command line of a running process (Linux). */
function processOf(pid: number): { env: Map<string, string>; argv: string[] } {
  const split = (file: string) => readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
  const env = new Map(
    split('environ').map((entry) => [
      entry.slice(0, entry.indexOf('=')),
      entry.slice(entry.indexOf('=') + 1),
    ]),
  );
  return { env, argv: split('cmdline') };
}

describe('launchDefaults', () => {
  test('adds the malloc arena limit, the compile cache, the young-generation size and the idle collections when none is set', () => {
    const launch = launchDefaults({ PATH: '/bin', PORT: '1' }, ['--enable-source-maps'], '/tmp');
    assert.deepEqual(launch, {
      env: {
        PATH: '/bin',
        PORT: '1',
        MALLOC_ARENA_MAX: MALLOC_ARENA_MAX_DEFAULT,
        NODE_COMPILE_CACHE: '/tmp/node-compile-cache',
      },
      execArgv: [SEMI_SPACE_FLAG, MEMORY_REDUCER_FLAG, '--enable-source-maps'],
    });
  });

  test("the operator's values win, and with all of them set there is nothing to start again", () => {
    const all = { MALLOC_ARENA_MAX: '8', NODE_COMPILE_CACHE: '/var/cache/usher' };
    assert.equal(launchDefaults(all, ['--max-semi-space-size=16', '--memory-reducer'], '/tmp'), undefined);
    assert.equal(
      launchDefaults(
        { ...all, NODE_OPTIONS: '--max_semi_space_size=1' },
        ['--no-memory_reducer_favors_memory'],
        '/tmp',
      ),
      undefined,
    );
    assert.equal(
      launchDefaults(
        { MALLOC_ARENA_MAX: '8', NODE_DISABLE_COMPILE_CACHE: '1' },
        [SEMI_SPACE_FLAG, '--no-memory-reducer'],
        '/tmp',
      ),
      undefined,
    );
    assert.deepEqual(launchDefaults({ MALLOC_ARENA_MAX: '8' }, [], '/tmp')?.env, {
      MALLOC_ARENA_MAX: '8',
      NODE_COMPILE_CACHE: '/tmp/node-compile-cache',
    });
    // One of the flags set: only the other is added.
    assert.deepEqual(launchDefaults(all, ['--max-semi-space-size=16'], '/tmp')?.execArgv, [
      MEMORY_REDUCER_FLAG,
      '--max-semi-space-size=16',
    ]);
    assert.deepEqual(launchDefaults(all, ['--memory-reducer-favors-memory'], '/tmp')?.execArgv, [
      SEMI_SPACE_FLAG,
      '--memory-reducer-favors-memory',
    ]);
  });
});

describeUnless(linux ? false : 'needs /proc (Linux)', 'the running server process', () => {
  test('runs with the defaults, in the process that was started (same pid)', async () => {
    const server = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'a.sqlite')}` });
    try {
      const { env, argv } = processOf(server.child.pid!);
      assert.equal(env.get('MALLOC_ARENA_MAX'), MALLOC_ARENA_MAX_DEFAULT);
      assert.ok(env.get('NODE_COMPILE_CACHE'));
      assert.ok(argv.includes(SEMI_SPACE_FLAG), argv.join(' '));
      assert.ok(argv.includes(MEMORY_REDUCER_FLAG), argv.join(' '));
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  test("keeps the operator's own settings", async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite:${join(dir, 'b.sqlite')}`,
      MALLOC_ARENA_MAX: '4',
      NODE_OPTIONS: '--max-semi-space-size=8',
    });
    try {
      const { env, argv } = processOf(server.child.pid!);
      assert.equal(env.get('MALLOC_ARENA_MAX'), '4');
      assert.ok(!argv.some((arg) => arg.startsWith('--max-semi-space-size')), argv.join(' '));
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
