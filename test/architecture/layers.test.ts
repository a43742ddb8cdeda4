// The layer check (scripts/layers.ts) on small trees built to break one rule each, on a tree that
// keeps them all, and on the real src/ against its baseline.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { formatBaseline, main } from '../../scripts/layers.ts';

const scratch = mkdtempSync(join(tmpdir(), 'usher-layers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let trees = 0;

/** A tree under a folder named src/ (so messages read as they do on the real one), with its baseline. */
function tree(
  files: Record<string, string>,
  baseline: readonly string[] = [],
): { root: string; baseline: string } {
  const dir = join(scratch, `tree-${++trees}`);
  const root = join(dir, 'src');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const file = join(dir, 'baseline.json');
  writeFileSync(file, formatBaseline(baseline));
  return { root, baseline: file };
}

function check(files: Record<string, string>, baseline: readonly string[] = [], ...options: string[]) {
  const t = tree(files, baseline);
  const out: string[] = [];
  const err: string[] = [];
  const code = main(
    [t.root, '--baseline', t.baseline, ...options],
    (l) => out.push(l),
    (l) => err.push(l),
  );
  return { code, out: out.join('\n'), err: err.join('\n'), baselineFile: t.baseline };
}

/** A tree that keeps every rule: each bad tree below is this one plus one file. */
const GOOD: Record<string, string> = {
  'app.ts':
    "import { users } from './users/feature.ts';\nimport { hash } from './users/hash.ts';\nexport { hash, users };\n",
  'config.ts': 'export const PORT = 3000;\n',
  'cli/main.ts': "import { hash } from '../users/hash.ts';\nexport const cli = hash;\n",
  'db/pool.ts': "import { clean } from '../shared/text.ts';\nexport const pool = clean;\n",
  'shared/text.ts': 'export const clean = (s: string) => s.trim();\n',
  'kernel/journal.ts': [
    "import { pool } from '../db/pool.ts';",
    "import { clean } from '../shared/text.ts';",
    // What the kernel needs from a feature, it takes as a type: no runtime arrow.
    "import type { User } from '../users/user.ts';",
    "export type { User } from '../users/user.ts';",
    "export type Users = typeof import('../users/user.ts');",
    'export const record = (user: User) => [pool, clean, user];',
    '',
  ].join('\n'),
  'plugins/errors.ts':
    "import { record } from '../kernel/journal.ts';\nimport { PORT } from '../config.ts';\nexport const errors = [record, PORT];\n",
  'users/user.ts': 'export interface User { id: number }\nexport const none = 0;\n',
  'users/hash.ts': "import { none } from './user.ts';\nexport const hash = none;\n",
  'users/index.ts': "export { hash } from './hash.ts';\n",
  'users/feature.ts': "import { errors } from '../plugins/errors.ts';\nexport const users = errors;\n",
  'sessions/feature.ts': [
    "import { record } from '../kernel/journal.ts';",
    "import { hash } from '../users/index.ts';",
    "import { users } from '../users/feature.ts';",
    "import { PORT } from '../config.ts';",
    'export const sessions = [record, hash, users, PORT];',
    '',
  ].join('\n'),
};

describe('the layer check', () => {
  test('passes on a tree that keeps the rules, and counts its arrows', () => {
    const result = check(GOOD);
    assert.equal(result.code, 0, result.err);
    assert.equal(result.err, '');
    assert.match(
      result.out,
      /^layers: 11 runtime arrows between 7 folders and 2 root files of src\/ \(8 between two folders\), 0 cycles, 0 violations, 0 of them in the baseline$/,
    );
  });

  test('fails on a cycle between two features, naming its folders and one import per arrow', () => {
    const result = check({
      ...GOOD,
      'users/session-count.ts':
        "import { sessions } from '../sessions/feature.ts';\nexport const count = sessions;\n",
    });
    assert.equal(result.code, 1);
    assert.match(result.err, /cycle between folders: sessions\/ -> users\/ -> sessions\//);
    assert.match(
      result.err,
      /sessions\/ -> users\/: src\/sessions\/feature\.ts:2 imports src\/users\/index\.ts/,
    );
    assert.match(
      result.err,
      /users\/ -> sessions\/: src\/users\/session-count\.ts:1 imports src\/sessions\/feature\.ts/,
    );
    assert.match(result.out, /1 cycle \(2 folders: sessions\/ users\/\)/);
  });

  test('fails when the kernel imports a feature, plugins/ or config.ts', () => {
    for (const [target, imported] of [
      ['../users/index.ts', 'src/users/index.ts'],
      ['../plugins/errors.ts', 'src/plugins/errors.ts'],
      ['../config.ts', 'src/config.ts'],
    ]) {
      const result = check({ ...GOOD, 'kernel/bad.ts': `import * as x from '${target}';\nexport { x };\n` });
      assert.equal(result.code, 1, target);
      assert.ok(
        result.err.includes(
          `kernel/ imports only kernel/, db/ and shared/: src/kernel/bad.ts:1 imports ${imported}`,
        ),
        result.err,
      );
    }
  });

  for (const lower of ['db', 'shared', 'plugins']) {
    test(`fails when ${lower}/ imports a feature, even its public file`, () => {
      const result = check({
        ...GOOD,
        [`${lower}/bad.ts`]: "import { users } from '../users/feature.ts';\nexport { users };\n",
      });
      assert.equal(result.code, 1);
      assert.ok(
        result.err.includes(
          `${lower}/ imports no feature: src/${lower}/bad.ts:1 imports src/users/feature.ts`,
        ),
      );
    });
  }

  test("fails when a feature imports another feature's private file", () => {
    const result = check({
      ...GOOD,
      'sessions/guard.ts': "import { hash } from '../users/hash.ts';\nexport { hash };\n",
    });
    assert.equal(result.code, 1);
    assert.ok(
      result.err.includes(
        'a feature imports another only through its index.ts or feature.ts: src/sessions/guard.ts:1 imports src/users/hash.ts, private to users/',
      ),
      result.err,
    );
  });

  test('type-only imports and exports do not count', () => {
    const result = check({
      ...GOOD,
      'sessions/types.ts': [
        "import type { User } from '../users/user.ts';",
        "import type * as hashes from '../users/hash.ts';",
        "export type { User as U } from '../users/user.ts';",
        "export type * from '../users/hash.ts';",
        "export type Hashes = typeof import('../users/hash.ts') | typeof hashes;",
        'export const id = (user: User) => user.id;',
        '',
      ].join('\n'),
    });
    assert.equal(result.code, 0, result.err);
  });

  test('an import of types by inline `type` names counts: Node still loads the module', () => {
    // verbatimModuleSyntax and Node's type stripping both keep it as `import {} from`.
    const result = check({
      ...GOOD,
      'sessions/types.ts':
        "import { type User } from '../users/user.ts';\nexport const u = (x: User) => x;\n",
    });
    assert.equal(result.code, 1);
    assert.ok(result.err.includes('src/sessions/types.ts:1 imports src/users/user.ts, private to users/'));
  });

  test('side-effect imports, re-exports and dynamic imports count', () => {
    for (const [text, line] of [
      ["import '../users/hash.ts';\n", 1],
      ["export { hash } from '../users/hash.ts';\n", 1],
      ["export * as all from '../users/hash.ts';\n", 1],
      ["export const load = async () =>\n  (await import('../users/hash.ts')).hash;\n", 2],
      ['export const load = () => import(`../users/hash.ts`);\n', 1],
    ] as const) {
      const result = check({ ...GOOD, 'sessions/lazy.ts': text });
      assert.equal(result.code, 1, text);
      assert.ok(
        result.err.includes(`src/sessions/lazy.ts:${line} imports src/users/hash.ts, private to users/`),
        result.err,
      );
    }
  });

  test('fails on an import() of a computed name, which it cannot follow', () => {
    const result = check({
      ...GOOD,
      'sessions/lazy.ts': "const name = '../users/hash.ts';\nexport const load = () => import(name);\n",
    });
    assert.equal(result.code, 1);
    assert.ok(result.err.includes('src/sessions/lazy.ts:2: import() of a computed name'), result.err);
  });

  test('text that only looks like an import does not count', () => {
    const result = check({
      ...GOOD,
      'sessions/text.ts': [
        "// import { hash } from '../users/hash.ts';",
        "/* export * from '../users/hash.ts'; */",
        'export const a = "import \'../users/hash.ts\'";',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's source, as text
        "export const b = `${a} import('../users/hash.ts') ${`${a}`}`;",
        "export const c = /import\\('..\\/users\\/hash.ts'\\)/.test(a) ? { import: '../users/hash.ts' } : 1 / 2;",
        'export const d = import.meta.url;',
        '',
      ].join('\n'),
    });
    assert.equal(result.code, 0, result.err);
  });

  test('a violation in the baseline passes; a baseline entry that no longer occurs fails', () => {
    const bad = {
      ...GOOD,
      'sessions/guard.ts': "import { hash } from '../users/hash.ts';\nexport { hash };\n",
    };
    const entry = 'private: src/sessions/guard.ts -> src/users/hash.ts';
    const listed = check(bad, [entry]);
    assert.equal(listed.code, 0, listed.err);
    assert.match(listed.out, /1 violation, 1 of them in the baseline$/);

    const stale = check(GOOD, [entry]);
    assert.equal(stale.code, 1);
    assert.ok(stale.err.includes(`layers: 1 baseline entry no longer occurs:\n    ${entry}`), stale.err);
    assert.ok(stale.err.includes('node scripts/layers.ts --write-baseline'));
  });

  test("--write-baseline lists today's violations, sorted, and the check then passes", () => {
    const bad = tree(
      {
        ...GOOD,
        'health/feature.ts': 'export const health = 1;\n',
        'sessions/guard.ts': "import { hash } from '../users/hash.ts';\nexport { hash };\n",
        'db/bad.ts': "import { health } from '../health/feature.ts';\nexport { health };\n",
      },
      ['private: src/gone.ts -> src/users/hash.ts'],
    );
    const quiet = () => {};
    assert.equal(main([bad.root, '--baseline', bad.baseline, '--write-baseline'], quiet, quiet), 0);
    assert.deepEqual(JSON.parse(readFileSync(bad.baseline, 'utf8')), [
      'layer: src/db/bad.ts -> src/health/feature.ts',
      'private: src/sessions/guard.ts -> src/users/hash.ts',
    ]);
    assert.equal(main([bad.root, '--baseline', bad.baseline], quiet, quiet), 0);
  });

  test('passes on the real src/ against scripts/layers-baseline.json', () => {
    const run = spawnSync(
      process.execPath,
      [fileURLToPath(new URL('../../scripts/layers.ts', import.meta.url))],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, /^layers: \d+ runtime arrows between \d+ folders and \d+ root files of src\//);
  });
});
