// The composition (src/kernel/composition.ts): features are built once each, in the order given,
// from what the ones before returned; a wrong order or a missing repository fails to compile (the
// `@ts-expect-error` lines below are checked by `npm run typecheck`: were the check gone, the
// directive itself would be the error).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { type Config, loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { feature } from '../../src/feature.ts';
import { Composition, type Kernel, type KernelUnit } from '../../src/kernel/composition.ts';

const first = feature({
  name: 'first',
  build(_kernel: Kernel<Config, KernelUnit, unknown>, _needs: unknown) {
    return { value: 1 };
  },
});
const second = feature({
  name: 'second',
  build(_kernel: Kernel<Config, KernelUnit, unknown>, needs: { first: { value: number } }) {
    return { value: needs.first.value + 1 };
  },
});
/** A feature whose transactions use a repository that no feature adds. */
const wantsNotes = feature({
  name: 'wants-notes',
  build(_kernel: Kernel<Config, { notes: { add(): void } } & KernelUnit, unknown>, _needs: unknown) {
    return {};
  },
});

function platform() {
  return {
    config: {} as Config,
    database: openDatabase('sqlite::memory:', loadConfig({}).database),
    now: Date.now,
    registry: new Registry(),
    log: { child: () => platform().log, info() {}, warn() {}, error() {} },
    sealingKey: () => undefined,
    environment: {},
  };
}

test('ISSUE 41: each feature is built once, in order, from what the ones before it returned', async () => {
  const p = platform();
  try {
    const built = new Composition<Config>().with(first).with(second).build(p);
    assert.deepEqual(built, { first: { value: 1 }, second: { value: 2 } });
  } finally {
    await p.database.close();
  }
});

test('ISSUE 41: a feature placed before one it needs, or a missing repository, fails to compile', () => {
  // @ts-expect-error second needs first, which is not built before it
  assert.ok(new Composition<Config>().with(second));
  const composition = new Composition<Config>().with(wantsNotes);
  const p = platform();
  try {
    // @ts-expect-error no feature adds the `notes` repository its transactions use
    assert.ok(composition.build(p));
  } finally {
    void p.database.close();
  }
});

test('ISSUE 41: two features with one name are refused', () => {
  assert.throws(() => new Composition<Config>().with(first).with(first), /two features are named first/);
});
