// The examples of the README and the guides in docs/, run as a reader would (see examples.ts for
// what a `sh doc-test` block is and what may differ from what it shows). Each sequence below is a
// reader going through those files in order on one fresh database: the README's first sign-in goes
// on into docs/api.md's examples; each guide starts from nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { describeUnless } from '../helpers/skip.ts';
import { describeEachStore, freshDatabaseUrl } from '../helpers/stores.ts';
import { docSteps, ROOT, runDocs, shows } from './examples.ts';

const SEQUENCES: readonly (readonly string[])[] = [
  ['README.md', 'docs/api.md'],
  ['docs/sign-in.md'],
  ['docs/guides/single-page-app.md'],
  ['docs/guides/nextjs.md'],
  ['docs/guides/mobile.md'],
  ['docs/guides/backend.md'],
];

/** Every Markdown file of the README and docs/ (guides included). */
function markdownFiles(): string[] {
  const found = ['README.md'];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(relative(ROOT, path));
    }
  };
  walk(join(ROOT, 'docs'));
  return found;
}

const stepsOf = (file: string) => docSteps(readFileSync(join(ROOT, file), 'utf8'), file);

test('every doc with a doc-test block is run, and every doc run has examples', () => {
  const run = new Set(SEQUENCES.flat());
  for (const file of markdownFiles()) {
    const marked = /^```\S+ doc-test\b/m.test(readFileSync(join(ROOT, file), 'utf8'));
    assert.equal(
      run.has(file),
      marked,
      `${file}: ${marked ? 'has doc-test blocks but is not run' : 'is run but has no doc-test block'}`,
    );
  }
  for (const file of run) {
    assert.ok(
      stepsOf(file).some((step) => step.kind === 'run'),
      `${file} has commands`,
    );
  }
});

test('ISSUE 15: the README and docs/api.md show both profiles, profile B first (the default)', () => {
  const steps = SEQUENCES[0]!.flatMap(stepsOf);
  assert.ok(steps.filter((s) => s.kind === 'run').length >= 10, `${steps.length} steps`);
  const profileA = steps.findIndex((s) => s.kind === 'start' && s.settings.PROFILE === 'a');
  assert.ok(profileA > 0, 'a restart in profile A');
  assert.ok(
    steps.slice(0, profileA).every((s) => s.kind !== 'start' || (s.settings.PROFILE ?? 'b') === 'b'),
    'profile B before it',
  );
  assert.ok(
    stepsOf('README.md').some((s) => s.kind === 'run'),
    'the README itself has a first sign-in that runs',
  );
});

test('ISSUE 32: "…" in a shown output stands for text within one line, and nothing else is loose', () => {
  assert.ok(shows('{"token":"…","user":{"id":1,…}}', '{"token":"abc-_1","user":{"id":1,"name":"Ada"}}'));
  assert.ok(!shows('{"token":"…","user":{"id":1,…}}', '{"token":"abc","user":{"id":2,"name":"Ada"}}'));
  assert.ok(!shows('a…b', 'a\nb'));
  assert.ok(!shows('{"id":1}', '{"id":1} '));
  assert.ok(shows('x', 'x'));
});

const hasCurl = spawnSync('curl', ['--version']).status === 0;

describeUnless(hasCurl ? false : 'curl is not installed', 'the docs’ examples', () => {
  describeEachStore('ISSUE 15, ISSUE 32: the docs’ examples', (store) => {
    for (const files of SEQUENCES) {
      // One test per sequence: each example leans on the ones before it, and tests run shuffled.
      test(`${files.join(' then ')}: run in order on a fresh database, print what the docs show`, async () => {
        const database = await freshDatabaseUrl(store.kind);
        try {
          await runDocs(files, database.url);
        } finally {
          await database.drop();
        }
      });
    }
  });
});
