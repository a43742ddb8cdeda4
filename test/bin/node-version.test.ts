// An older Node (this machine kind ships Node 20) gets one line saying what is needed and exit
// code 1, from every way in: the server and CLI entries, `npm start`, `npm test`, and `npm ci`
// (engine-strict). Without an older Node on the machine the tests are skipped, visibly.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { describeUnless } from '../helpers/skip.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  scripts: Record<string, string>;
};
const minimum = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)?.[1];

function major(node: string): number | undefined {
  const run = spawnSync(node, ['--version'], { encoding: 'utf8' });
  const found = /^v(\d+)\./.exec(run.stdout ?? '');
  return found ? Number(found[1]) : undefined;
}

/** A Node older than 24 on PATH or in the usual places, other than the one running the tests. */
function findOlderNode(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    const node = join(dir, 'node');
    if (dir === '' || !existsSync(node)) continue;
    const version = major(node);
    if (version !== undefined && version < 24) return node;
  }
  return undefined;
}

const OLD_NODE = findOlderNode();
const skip = OLD_NODE ? false : 'no Node older than 24 on this machine';
const MESSAGE = `usher: Node.js ${minimum} or newer is needed, this is Node.js `;

/** Runs `command` with the older Node first on PATH, as on a machine where it is the default. */
function withOldNode(command: string, args: string[], cwd = ROOT) {
  const run = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      PATH: `${dirname(OLD_NODE!)}${delimiter}${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '',
      // Were the check to let it through, the server must not take a port others use.
      DATABASE_URL: 'sqlite::memory:',
      PORT: '0',
    },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

test('ISSUE 15: the message names the version package.json "engines" asks for', () => {
  assert.ok(minimum, `engines.node is ">=X.Y.Z": ${pkg.engines.node}`);
  const check = readFileSync(join(ROOT, 'bin/node-check.mjs'), 'utf8');
  assert.match(check, new RegExp(`MINIMUM_NODE = '${minimum!.replaceAll('.', '\\.')}'`));
  assert.equal(readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim(), minimum!.split('.')[0]);
  assert.match(readFileSync(join(ROOT, '.npmrc'), 'utf8'), /^engine-strict=true$/m);
});

test('ISSUE 15: on this Node the check says nothing and lets the entries run', () => {
  const run = spawnSync(process.execPath, [join(ROOT, 'bin/node-check.mjs')], { encoding: 'utf8' });
  assert.deepEqual([run.status, run.stdout, run.stderr], [0, '', '']);
  const help = spawnSync(process.execPath, [join(ROOT, 'bin/usher.mjs'), '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: usher /);
});

describeUnless(skip, 'ISSUE 15: on a Node older than 24', () => {
  test('the CLI and server entries print one line and exit 1 before loading any .ts file', () => {
    for (const args of [
      ['bin/usher.mjs', 'users', 'list', '--json'],
      ['bin/server.mjs'],
      ['bin/node-check.mjs'],
    ]) {
      const run = withOldNode(OLD_NODE!, args);
      const what = args.join(' ');
      assert.equal(run.code, 1, `${what}: ${run.stderr}`);
      assert.equal(run.stdout, '', what);
      assert.ok(run.stderr.startsWith(MESSAGE), `${what}: ${run.stderr}`);
      assert.equal(run.stderr.split('\n').length, 2, `one line: ${run.stderr}`);
    }
  });

  test('npm start and npm test stop with the message, not ERR_UNKNOWN_FILE_EXTENSION', () => {
    for (const script of ['start', 'test']) {
      const run = withOldNode('npm', [script]);
      assert.notEqual(run.code, 0, `npm ${script}`);
      assert.ok(run.stderr.includes(MESSAGE), `npm ${script}: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /ERR_UNKNOWN_FILE_EXTENSION/);
      // npm test checks before the type-check, lint and tests; none of them ran.
      assert.doesNotMatch(run.stdout, /> (tsc|biome)/, `npm ${script}: ${run.stdout}`);
    }
  });

  test('npm ci refuses at once (engine-strict in .npmrc)', () => {
    // A copy of what npm reads, so nothing can touch this checkout's node_modules; --dry-run
    // in case it were to go ahead.
    const dir = mkdtempSync(join(tmpdir(), 'usher-engines-'));
    try {
      for (const file of ['package.json', 'package-lock.json', '.npmrc']) {
        copyFileSync(join(ROOT, file), join(dir, file));
      }
      const run = withOldNode('npm', ['ci', '--dry-run', '--no-audit', '--no-fund'], dir);
      assert.notEqual(run.code, 0, run.stdout);
      assert.match(run.stderr, /EBADENGINE/);
      assert.ok(run.stderr.includes(`Required: {"node":"${pkg.engines.node}"}`), run.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
