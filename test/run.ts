// `npm test` after the typecheck and lint: every test file, in a random order, and the tests inside
// each file in a random order too, so a test that leans on another one's leftovers fails early.
// The order comes from a seed, printed before and after the run: TEST_SEED=N npm test replays it.
// Arguments replace the default file glob: npm test -- test/cli/cli.test.ts
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';

/** The range node accepts for --test-random-seed. */
const MAX_SEED = 4_294_967_295;

function chooseSeed(): number {
  const given = process.env.TEST_SEED;
  if (given === undefined || given === '') return randomInt(0, 2 ** 32 - 1);
  const seed = Number(given);
  if (!/^\d+$/.test(given) || !Number.isSafeInteger(seed) || seed > MAX_SEED) {
    console.error(`TEST_SEED must be an integer from 0 to ${MAX_SEED}, not "${given}"`);
    process.exit(2);
  }
  return seed;
}

const seed = chooseSeed();
const banner = `test seed: ${seed} (replay with TEST_SEED=${seed} npm test)`;
console.log(banner);

const args = process.argv.slice(2);
const files = args.some((a) => !a.startsWith('-')) ? [] : ['test/**/*.test.ts'];
// Node's compile cache for the test files' processes, as the server keeps one (launch.ts): each of
// them loads the whole app, and without the cache strips and compiles every module again (about
// 0.35 s of CPU of the 0.75 s an import of the app takes). The servers the tests start use the same
// directory. An operator's own setting, or NODE_DISABLE_COMPILE_CACHE, wins.
const env = { ...process.env };
if (env.NODE_COMPILE_CACHE === undefined && env.NODE_DISABLE_COMPILE_CACHE === undefined)
  env.NODE_COMPILE_CACHE = join(tmpdir(), 'node-compile-cache');
const child = spawn(
  process.execPath,
  // Not --test-force-exit: with it, a run once ended test/config.test.ts half-way through and
  // counted it passed (1,899 tests instead of 1,931, 0 failures).
  ['--test', '--test-concurrency=2', '--test-randomize', `--test-random-seed=${seed}`, ...args, ...files],
  { stdio: 'inherit', env },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => {
  // Hundreds of lines later, the seed is where a reader of a failed run looks.
  console.log(banner);
  process.exitCode = code ?? 128 + (signal ? constants.signals[signal] : 0);
});
